//! The parent process: runs each (workload, engine) step in a child process, tracks
//! what each engine's database holds, and reports.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::ExitCode;

use crate::cli::{Cli, Params};
use crate::engines::{EngineKind, Result};
use crate::exec::Spec;
use crate::proc::{self, ChildRun};
use crate::report::{self, Record};
use crate::store::DbRoot;
use crate::workload::{DbState, Workload};

/// A run of steps over the engines' databases under one root.
pub struct Session {
    root: DbRoot,
    params: Params,
    verify: bool,
    /// What each engine's database holds; absent: no usable database.
    states: HashMap<EngineKind, DbState>,
}

/// The result of one step.
pub struct Step {
    /// The child's measurement and resource usage.
    pub run: ChildRun,
    /// Allocated bytes of the engine's database after the step.
    pub db_size_bytes: u64,
    /// What the database held before the step.
    pub before: Option<DbState>,
}

impl Session {
    /// A session with no databases yet; `verify` makes children check what they read.
    pub fn new(root: DbRoot, params: Params, verify: bool) -> Self {
        Session {
            root,
            params,
            verify,
            states: HashMap::new(),
        }
    }

    /// Runs `workload` on `engine` in a child process. Fills start from an empty
    /// database; other workloads reuse the engine's database, made by an untimed
    /// fillrandom if there is none yet.
    pub fn run_step(&mut self, engine: EngineKind, workload: Workload) -> Result<Step> {
        let dir = if workload.is_fill() {
            self.states.remove(&engine);
            self.root.reset(engine)?
        } else if self.states.contains_key(&engine) {
            self.root.engine_dir(engine)
        } else {
            self.prefill(engine)?
        };
        let before = self.states.get(&engine).copied();
        let run = self.child(engine, workload, dir, before).inspect_err(|_| {
            self.states.remove(&engine);
        })?;
        match workload.state_after(&self.params, before) {
            Some(s) => self.states.insert(engine, s),
            None => self.states.remove(&engine),
        };
        let db_size_bytes = self.root.allocated_bytes(engine)?;
        Ok(Step {
            run,
            db_size_bytes,
            before,
        })
    }

    fn child(
        &self,
        engine: EngineKind,
        workload: Workload,
        dir: PathBuf,
        before: Option<DbState>,
    ) -> Result<ChildRun> {
        proc::run_child(&Spec {
            engine,
            workload,
            dir,
            params: self.params.clone(),
            before,
            verify: self.verify,
        })
    }

    /// Makes a new database for `engine` with an untimed fillrandom.
    fn prefill(&mut self, engine: EngineKind) -> Result<PathBuf> {
        eprintln!(
            "sarsen-bench:   no {} database yet: untimed fillrandom first",
            engine.name()
        );
        let dir = self.root.reset(engine)?;
        self.child(engine, Workload::FillRandom, dir.clone(), None)?;
        if let Some(s) = Workload::FillRandom.state_after(&self.params, None) {
            self.states.insert(engine, s);
        }
        Ok(dir)
    }
}

/// Engines in command-line order, without repeats.
pub fn unique_engines(cli: &Cli) -> Vec<EngineKind> {
    let mut out: Vec<EngineKind> = Vec::new();
    for &e in &cli.engines {
        if !out.contains(&e) {
            out.push(e);
        }
    }
    out
}

/// The benchmark run: every workload on every engine, a table per workload.
pub fn bench(cli: &Cli) -> ExitCode {
    let params = cli.params();
    let engines = unique_engines(cli);
    let root = match DbRoot::new(cli.db.as_deref()) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("sarsen-bench: {e}");
            return ExitCode::FAILURE;
        }
    };
    print!("{}", report::header(&params, &engines, root.path()));
    let mut session = Session::new(root, params.clone(), false);
    let mut records = Vec::new();
    let mut failed = false;
    for &w in &cli.benchmarks {
        let mut rows = Vec::new();
        for &e in &engines {
            eprintln!("sarsen-bench: {} on {}", w.name(), e.name());
            match session.run_step(e, w) {
                Ok(step) => rows.push(Record::new(e, w, &params, &step)),
                Err(err) => {
                    eprintln!("sarsen-bench: {} on {} failed: {err}", w.name(), e.name());
                    failed = true;
                }
            }
        }
        print!("{}", report::table(w, &params, &rows));
        records.extend(rows);
    }
    if let Some(path) = &cli.json {
        if let Err(e) = report::write_json(path, &params, &engines, &records) {
            eprintln!("sarsen-bench: writing {}: {e}", path.display());
            failed = true;
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
