//! The parent process: runs each (workload, engine) step in a child process, tracks
//! what each engine's database holds, and reports.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::process::ExitCode;

use crate::cli::{Allocator, Cli, Params};
use crate::engines::{EngineKind, Result};
use crate::exec::Spec;
use crate::proc::{self, ChildRun};
use crate::report::{self, Record};
use crate::store::DbRoot;
use crate::workload::{DbState, KeySet, Workload};

/// An engine run with an allocator (None: the default, nothing preloaded). Each
/// series has its own database directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Series {
    /// The engine.
    pub engine: EngineKind,
    /// The allocator preloaded into its children.
    pub alloc: Option<Allocator>,
}

impl Series {
    /// `engine`, or `engine-allocator`: the directory name and the label in tables.
    pub fn name(&self) -> String {
        match self.alloc {
            None => self.engine.name().to_string(),
            Some(a) => format!("{}-{}", self.engine.name(), a.name()),
        }
    }
}

/// A run of steps over the engines' databases under one root.
pub struct Session {
    root: DbRoot,
    params: Params,
    verify: bool,
    /// What each series' database holds; absent: no usable database.
    states: HashMap<Series, DbState>,
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

    /// Adopts the databases a previous run left under the root for `series`, where
    /// their recorded parameters match this run's (`--use_existing_db`).
    pub fn adopt_existing(&mut self, series: &[Series]) {
        for s in series {
            match self.root.load_state(&s.name(), &self.params) {
                Ok(Some(state)) => {
                    eprintln!(
                        "sarsen-bench: using the existing {} database ({} entries)",
                        s.name(),
                        state.entries
                    );
                    self.states.insert(*s, state);
                }
                Ok(None) => {}
                Err(e) => eprintln!("sarsen-bench: ignoring the {} database: {e}", s.name()),
            }
        }
    }

    /// Sets the thread count of the following steps.
    pub fn set_threads(&mut self, threads: usize) {
        self.params.threads = threads;
    }

    /// Sets the thread count and gets per read transaction of the following steps.
    pub fn set_shape(&mut self, threads: usize, read_batch: usize) {
        self.params.threads = threads;
        self.params.read_batch = read_batch;
    }

    /// Runs `workload` on `series` in a child process. Fills start from an empty
    /// database; other workloads reuse the series' database, made by an untimed
    /// fillrandom if there is none yet.
    pub fn run_step(&mut self, series: Series, workload: Workload) -> Result<Step> {
        let name = series.name();
        let dir = if workload.is_fill() {
            self.forget(series)?;
            self.root.reset(&name)?
        } else if self.states.contains_key(&series) {
            self.root.engine_dir(&name)
        } else {
            self.prefill(series)?
        };
        let before = self.states.get(&series).copied();
        // Until the step ends well, the database's content is not known.
        self.forget(series)?;
        let run = self.child(series, workload, dir, before)?;
        if let Some(s) = workload.state_after(&self.params, before) {
            self.remember(series, s)?;
        }
        let db_size_bytes = self.root.allocated_bytes(&name)?;
        Ok(Step {
            run,
            db_size_bytes,
            before,
        })
    }

    fn remember(&mut self, series: Series, state: DbState) -> Result<()> {
        self.states.insert(series, state);
        self.root
            .save_state(&series.name(), &self.params, Some(state))
    }

    /// Which keys `series`' database holds, if known: (entries, key set).
    pub fn keys_held(&self, series: Series) -> Option<(u64, KeySet)> {
        self.states.get(&series).map(|s| (s.entries, s.keys))
    }

    /// Drops what is known of `series`' database, so that the next step that
    /// needs a loaded database loads it again (untimed).
    pub fn reload_before_next(&mut self, series: Series) -> Result<()> {
        self.forget(series)
    }

    fn forget(&mut self, series: Series) -> Result<()> {
        self.states.remove(&series);
        self.root.save_state(&series.name(), &self.params, None)
    }

    fn child(
        &self,
        series: Series,
        workload: Workload,
        dir: PathBuf,
        before: Option<DbState>,
    ) -> Result<ChildRun> {
        let spec = Spec {
            engine: series.engine,
            workload,
            dir,
            params: self.params.clone(),
            before,
            verify: self.verify,
        };
        proc::run_child(&spec, series.alloc)
    }

    /// Makes a new database for `series` with an untimed fillrandom.
    fn prefill(&mut self, series: Series) -> Result<PathBuf> {
        eprintln!(
            "sarsen-bench:   no {} database yet: untimed fillrandom first",
            series.name()
        );
        let dir = self.root.reset(&series.name())?;
        self.child(series, Workload::FillRandom, dir.clone(), None)?;
        if let Some(s) = Workload::FillRandom.state_after(&self.params, None) {
            self.remember(series, s)?;
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

/// Thread counts of `--threads` in order, without repeats.
fn unique_threads(cli: &Cli) -> Vec<usize> {
    let mut out: Vec<usize> = Vec::new();
    for &t in &cli.threads {
        if !out.contains(&usize::from(t)) {
            out.push(usize::from(t));
        }
    }
    out
}

/// Checks that every engine is built and every allocator installed.
fn preflight(engines: &[EngineKind], allocs: &[Option<Allocator>]) -> Result<()> {
    for e in engines {
        if !e.is_built() {
            return Err(e.not_built());
        }
    }
    for a in allocs.iter().flatten() {
        if let Some((lib, package)) = a.library() {
            if !std::path::Path::new(lib).exists() {
                return Err(format!(
                    "--malloc {}: {lib} is missing; install Debian's {package}",
                    a.name()
                )
                .into());
            }
        }
    }
    Ok(())
}

/// The benchmark run: every workload on every series, a table per workload (and per
/// thread count of threaded workloads).
pub fn bench(cli: &Cli) -> ExitCode {
    let params = cli.params();
    let engines = unique_engines(cli);
    let allocs = cli.allocators();
    if let Err(e) = preflight(&engines, &allocs) {
        eprintln!("sarsen-bench: {e}");
        return ExitCode::FAILURE;
    }
    let series: Vec<Series> = engines
        .iter()
        .flat_map(|&engine| allocs.iter().map(move |&alloc| Series { engine, alloc }))
        .collect();
    let root = match DbRoot::new(cli.db.as_deref()) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("sarsen-bench: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut text = report::header(&params, &engines, root.path());
    print!("{text}");
    let mut session = Session::new(root, params.clone(), false);
    if cli.use_existing_db {
        session.adopt_existing(&series);
    }
    let mut records = Vec::new();
    let mut failed = false;
    for &w in &cli.benchmarks {
        let first_record = records.len();
        // Runs of this workload so far, to skip repeats of single-writer engines.
        let mut done: HashSet<(Series, usize)> = HashSet::new();
        let counts = if w.is_threaded() {
            unique_threads(cli)
        } else {
            vec![1]
        };
        for threads in counts {
            session.set_threads(threads);
            let mut p = params.clone();
            p.threads = threads;
            let mut rows = Vec::new();
            let mut notes = Vec::new();
            // The engines that run this step, each with the keys its first
            // run starts from.
            let mut runs = Vec::new();
            for &s in &series {
                if w == Workload::MergeRandom && !s.engine.has_merge() {
                    notes.push(format!("{}: no merge operator, not run", s.name()));
                    continue;
                }
                if w.needs_cursor_delete() && !s.engine.has_cursor_delete() {
                    notes.push(format!("{}: no cursor delete, not run", s.name()));
                    continue;
                }
                // Single-writer engines write existing keys with one thread whatever
                // --threads says (fillsync's writers run on every engine).
                let effective = if w.has_writers() && !s.engine.concurrent_writers() {
                    1
                } else {
                    threads
                };
                if done.insert((s, effective)) {
                    runs.push((s, session.keys_held(s)));
                }
            }
            // Repetitions go round the engines (run 1 of each, then run 2 of
            // each, ...) rather than one engine's runs back to back, so that
            // a slow spell of the shared disk or CPU falls on every engine
            // alike instead of on the one running then.
            for run in 0..cli.repeat as usize {
                for (s, first_keys) in &runs {
                    let s = *s;
                    // Every repetition starts from the keys the first one started
                    // from: deleterandom's first run removes the keys the next would
                    // delete, and timing deletes of absent keys measures nothing.
                    if run > 0 && session.keys_held(s) != *first_keys {
                        if let Err(err) = session.reload_before_next(s) {
                            eprintln!("sarsen-bench: {} on {}: {err}", w.name(), s.name());
                            failed = true;
                        }
                    }
                    let of = if cli.repeat > 1 {
                        format!(", run {} of {}", run + 1, cli.repeat)
                    } else {
                        String::new()
                    };
                    eprintln!(
                        "sarsen-bench: {} on {} ({threads} threads{of})",
                        w.name(),
                        s.name()
                    );
                    match session.run_step(s, w) {
                        Ok(step) => {
                            for err in &step.run.m.errors {
                                eprintln!("sarsen-bench: {} on {}: {err}", w.name(), s.name());
                                failed = true;
                            }
                            rows.push(Record::new(s, w, &p, &step, run));
                        }
                        Err(err) => {
                            eprintln!("sarsen-bench: {} on {} failed: {err}", w.name(), s.name());
                            failed = true;
                        }
                    }
                }
            }
            if rows.is_empty() && notes.is_empty() {
                continue;
            }
            let table = report::table(w, &p, &rows, &notes);
            print!("{table}");
            text.push_str(&table);
            records.extend(rows);
        }
        // fillsync over several thread counts: commits/s and latency against threads.
        let summary = report::scaling(w, &records[first_record..]);
        print!("{summary}");
        text.push_str(&summary);
    }
    let doc = report::JsonReport::new(&params, &engines, &records);
    if let Some(path) = &cli.json {
        if let Err(e) = doc.write(path) {
            eprintln!("sarsen-bench: writing {}: {e}", path.display());
            failed = true;
        }
    }
    if let Some(dir) = &cli.out {
        if let Err(e) = report::write_out(dir, &text, &doc) {
            eprintln!("sarsen-bench: writing {}: {e}", dir.display());
            failed = true;
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
