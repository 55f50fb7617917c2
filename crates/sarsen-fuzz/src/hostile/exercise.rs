//! Opening, reading, checking and writing a damaged file.

use super::*;

impl HostileInput {
    /// Decodes fuzzer bytes: the flags, then mutations one after another
    /// (each with `arbitrary`) until the bytes run out or 32 are read.
    pub fn from_bytes(data: &[u8]) -> HostileInput {
        let mut u = arbitrary::Unstructured::new(data);
        let big_pages = u.arbitrary().unwrap_or(false);
        let open = u.arbitrary().unwrap_or(OpenFlags {
            write_map: false,
            foreign_boot: false,
            read_only: false,
        });
        let mut mutations = Vec::new();
        while !u.is_empty() && mutations.len() < 32 {
            match Mutation::arbitrary(&mut u) {
                Ok(m) => mutations.push(m),
                Err(_) => break,
            }
        }
        HostileInput {
            big_pages,
            open,
            mutations,
        }
    }
}

/// Decodes `data` as the fuzz target does ([`HostileInput::from_bytes`])
/// and runs it; panics on a failure.
pub fn exercise_bytes(data: &[u8]) -> String {
    run(&HostileInput::from_bytes(data))
}

/// Runs one input; panics on a failure (what a fuzz target wants).
pub fn run(input: &HostileInput) -> String {
    exercise(input).unwrap_or_else(|e| panic!("hostile file: {e}"))
}

/// Damages the template as `input` says and exercises the result.
/// `Ok(summary)` when everything ended in results or errors; `Err` when
/// reads returned wrong data that `check` did not report, or `check`
/// itself failed. Panics propagate.
pub fn exercise(input: &HostileInput) -> Result<String, String> {
    let t = template(input.big_pages);
    let bytes = mutate(t, &input.mutations);
    let dir = crate::scratch_dir();
    write_file(dir.path(), &bytes, &t.lock);
    let f = input.open;
    let mut o = EnvOptions::new()
        .max_size(64 << 20)
        .write_map(f.write_map)
        .read_only(f.read_only);
    if f.foreign_boot {
        o = o.assume_boot_id([0x5a; 16]);
    }
    // SAFETY: a private scratch directory.
    let env = match unsafe { o.clone().open(dir.path()) } {
        Ok(env) => env,
        Err(e) => return Ok(format!("open:{}", err_name(&e))),
    };
    let limit = t.max_entries * 2 + 100;
    let data = read_everything(&env, t, limit);
    let report = env
        .check()
        .map_err(|e| format!("check returned an error: {e:?}"))?;
    let wrong = match &data {
        Ok(c) if t.history.contains(c) => None,
        // An empty file is a new database.
        Ok(c) if bytes.is_empty() && c.len() == 1 && c[""].is_empty() => None,
        Ok(c) => Some(format!("data differs from every commit: {}", diff(c, t))),
        Err(e) if e.starts_with("RUNAWAY") || e.starts_with("UNORDERED") => Some(e.clone()),
        Err(_) => None,
    };
    if let (Some(w), true) = (&wrong, report.is_ok()) {
        return Err(format!("check found nothing, but {w}; input {input:?}"));
    }
    let data_note = match (&data, &wrong) {
        (_, Some(_)) => "wrong-data(reported)".to_string(),
        (Ok(_), None) => "data=a-commit".to_string(),
        (Err(e), None) => format!("read-error({})", e.split(':').next().unwrap_or("")),
    };
    if data.is_ok() && wrong.is_none() {
        other_read_paths(&env, dir.path());
    }
    let w1 = try_write(&env, t);
    if w1 == "commit:ok" {
        let _ = read_everything(&env, t, limit + 200);
        let _ = env
            .check()
            .map_err(|e| format!("check after commit: {e:?}"))?;
    }
    drop(env);
    // SAFETY: as above.
    if let Ok(env) = unsafe { o.open(dir.path()) } {
        let _ = read_everything(&env, t, limit + 400);
        let _ = try_write(&env, t);
        let _ = env
            .check()
            .map_err(|e| format!("check after reopen: {e:?}"))?;
    }
    let check = if report.is_ok() { "ok" } else { "problems" };
    Ok(format!("open:ok {data_note} check:{check} write:{w1}"))
}

/// Every read path over every database, with bounded work. Returns the
/// contents as one forward scan per database saw them.
fn read_everything(env: &Env, t: &Template, limit: usize) -> Result<Contents, String> {
    let _ = env.info();
    let _ = env.reader_check();
    let r = env
        .read_txn()
        .map_err(|e| format!("read_txn:{}", err_name(&e)))?;
    let _ = r.txnid();
    let counters = DbOptions::new().merge_operator(Uint64Add);
    let _ = r.open_db_with(Some("alpha"), &counters);
    let _ = r.open_db(Some("no-such-db"));
    let _ = r.open_db_with(Some("dups"), &dups_options());
    let _ = r.open_db_with(Some("fixed"), &fixed_options());
    // The other duplicate mode: refused.
    let _ = r.open_db_with(Some("dups"), &fixed_options());
    let mut handles = vec![env.main_db()];
    if let Ok(names) = r.list_dbs() {
        for n in names {
            if let Ok(Some(h)) = r.open_db(Some(&n)) {
                handles.push(h);
            }
        }
    }
    let pairs: Vec<(Vec<u8>, Vec<u8>)> = t
        .history
        .last()
        .map(|c| {
            c.values()
                .flat_map(|m| m.iter().step_by(7).cloned())
                .collect()
        })
        .unwrap_or_default();
    let mut probe: Vec<Vec<u8>> = pairs.iter().map(|p| p.0.clone()).collect();
    probe.dedup();
    for &h in &handles {
        let _ = r.stat(h);
        let _ = scan(&r, h, limit, true);
        for k in &probe {
            if r.get(h, k).is_err() {
                break;
            }
        }
        walk_cursor(&r, h, &probe, limit);
        if matches!(r.dup_mode(h), Ok(Some(_))) {
            walk_dups(&r, h, &pairs, limit);
        }
        for (lo, hi) in probe.iter().zip(probe.iter().skip(3)).take(20) {
            if let Ok(it) = r.range(h, lo.as_slice()..=hi.as_slice()) {
                let _ = it.take(limit).take_while(Result::is_ok).count();
            }
            if let Ok(it) = r.range(h, ..hi.as_slice()) {
                let _ = it.rev().take(50).take_while(Result::is_ok).count();
            }
        }
    }
    contents(&r, limit)
}

fn walk_cursor(r: &RoTxn, h: Database, probe: &[Vec<u8>], limit: usize) {
    let Ok(mut c) = r.cursor(h) else { return };
    let _ = c.first();
    for _ in 0..limit {
        if !matches!(c.next(), Ok(Some(_))) {
            break;
        }
    }
    let _ = c.prev();
    let _ = c.last();
    for _ in 0..limit {
        if !matches!(c.prev(), Ok(Some(_))) {
            break;
        }
    }
    let _ = c.next();
    for k in probe.iter().take(60) {
        let _ = c.seek(k);
        let _ = c.current();
        let _ = c.next();
        let _ = c.prev();
        let _ = c.seek_exact(k);
    }
    let _ = c.seek(&[0xff; 8]);
    let _ = c.prev();
}

/// Every duplicate move over a DUPSORT database with bounded work: key by
/// key with `next_nodup`, each key's values both ways with
/// `next_dup`/`prev_dup`, `first_dup`/`last_dup`, `dup_count`, the
/// DUPFIXED batches; `prev_nodup` back from the end; `seek_both` and
/// `seek_both_range` at known pairs, and a step either side of them.
fn walk_dups(r: &RoTxn, h: Database, pairs: &[(Vec<u8>, Vec<u8>)], limit: usize) {
    let Ok(mut c) = r.cursor(h) else { return };
    let mut work = 0;
    let mut key = c.first();
    while matches!(key, Ok(Some(_))) && work < limit {
        // Forward over the values: `next` (in `walk_cursor`) and the
        // batches; here a few `next_dup`, and back from the end.
        for _ in 0..4 {
            let _ = c.next_dup();
        }
        let _ = c.dup_count();
        let _ = c.last_dup();
        while matches!(c.prev_dup(), Ok(Some(_))) && work < limit {
            work += 1;
        }
        if let Ok(Some(_)) = c.get_multiple() {
            while matches!(c.next_multiple(), Ok(Some(_))) && work < limit {
                work += 1;
            }
        }
        let _ = c.current();
        key = c.next_nodup();
        work += 1;
    }
    let mut key = c.last();
    while matches!(key, Ok(Some(_))) && work < 2 * limit {
        let _ = c.dup_count();
        key = c.prev_nodup();
        work += 1;
    }
    for (k, v) in pairs.iter().take(80) {
        let _ = r.get(h, k);
        let _ = c.seek_both(k, v);
        let _ = c.next();
        let _ = c.prev_dup();
        let _ = c.seek_both_range(k, &v[..v.len() / 2]);
        let _ = c.next_dup();
        let _ = c.get_multiple();
        let _ = c.prev();
        let _ = c.seek_exact(k);
        let _ = c.next_nodup();
        let _ = c.prev_nodup();
    }
}

/// Copies and sync: run only on a file whose reads matched a commit (a
/// compact copy of a tree whose pages are shared many times over would
/// otherwise write without bound).
fn other_read_paths(env: &Env, dir: &Path) {
    let _ = env.copy_to(dir.join("copy"));
    let _ = env.compact_copy_to(dir.join("compact"));
    let _ = env.sync();
}

/// A write transaction: puts (some in overflow runs), deletes, a merge, a
/// new database, a dropped one, a cleared one; returns `step:outcome`.
fn try_write(env: &Env, t: &Template) -> String {
    let mut w = match env.write_txn() {
        Ok(w) => w,
        Err(e) => return format!("write_txn:{}", err_name(&e)),
    };
    let main = env.main_db();
    let step =
        |what: &str, r: sarsen::Result<()>| r.map_err(|e| format!("{what}:{}", err_name(&e)));
    let r = (|| -> Result<(), String> {
        for i in 0..40u32 {
            let v = vec![i as u8; (i as usize * 97) % (3 * t.page_size as usize)];
            step("put", w.put(main, format!("new{i:03}").as_bytes(), &v))?;
        }
        if let Some(c) = t.history.last() {
            for (k, _) in c[""].iter().step_by(5) {
                step("delete", w.delete(main, k).map(|_| ()))?;
            }
        }
        let counters = DbOptions::new().merge_operator(Uint64Add);
        if let Some(a) = w
            .open_db_with(Some("alpha"), &counters)
            .map_err(|e| err_name(&e))?
        {
            for i in 0..10u32 {
                let _ = w.merge(a, &i.to_be_bytes(), &1u64.to_le_bytes());
            }
            step("put alpha", w.put(a, b"x", &[1; 8]))?;
        }
        dup_writes(&mut w, t)?;
        let g = w.create_db(Some("delta")).map_err(|e| err_name(&e))?;
        step("put delta", w.put(g, b"d", b"d"))?;
        if let Some(b) = w.open_db(Some("beta")).map_err(|e| err_name(&e))? {
            step("drop beta", w.drop_db(b))?;
        }
        step("clear delta", w.clear_db(g))
    })();
    if let Err(e) = r {
        return e;
    }
    match w.commit() {
        Ok(()) => "commit:ok".into(),
        Err(e) => format!("commit:{}", err_name(&e)),
    }
}

/// Writes to the DUPSORT databases: values added to a sub-tree, to inline
/// lists (some become sub-trees), pairs removed from both, whole keys
/// deleted (a sub-tree freed), a range deleted, and a write cursor that
/// replaces and deletes where it stands.
fn dup_writes(w: &mut sarsen::RwTxn, t: &Template) -> Result<(), String> {
    let step =
        |what: &str, r: sarsen::Result<()>| r.map_err(|e| format!("{what}:{}", err_name(&e)));
    let last = t.history.last().expect("a template has commits");
    if let Some(d) = w.open_db(Some("dups")).map_err(|e| err_name(&e))? {
        for i in 0..60u32 {
            let k = format!("dk{:02}", i % 12);
            step(
                "put dups",
                w.put(d, k.as_bytes(), format!("nv{i:04}").as_bytes()),
            )?;
        }
        step(
            "put_no_dup_data",
            w.put_no_dup_data(d, b"dk03", b"nodup").map(drop),
        )?;
        for (k, v) in last["dups"].iter().step_by(4).take(200) {
            step("delete_dup", w.delete_dup(d, k, v).map(drop))?;
        }
        step("delete dups", w.delete(d, b"dk01").map(drop))?;
        step(
            "delete_range dups",
            w.delete_range(d, &b"dk08"[..]..&b"dk10"[..]).map(drop),
        )?;
        let mut c = w.cursor_mut(d).map_err(|e| err_name(&e))?;
        for i in 0..30u32 {
            match c.next() {
                Ok(Some(_)) => {}
                Ok(None) => break,
                Err(e) => return Err(format!("cursor next:{}", err_name(&e))),
            }
            let r = match i % 3 {
                0 => c.delete_current(),
                1 => c.put_current(format!("pc{i:03}").as_bytes()),
                _ => c.next_dup().map(drop),
            };
            step("write cursor", r)?;
        }
    }
    if let Some(f) = w.open_db(Some("fixed")).map_err(|e| err_name(&e))? {
        for i in 0..80u64 {
            let k = format!("dk{:02}", i % 5);
            step(
                "put fixed",
                w.put(f, k.as_bytes(), &(i << 20).to_be_bytes()),
            )?;
        }
        for (k, v) in last["fixed"].iter().step_by(5).take(200) {
            step("delete_dup fixed", w.delete_dup(f, k, v).map(drop))?;
        }
        step("delete fixed", w.delete(f, b"dk00").map(drop))?;
    }
    Ok(())
}

/// Where `c` differs from the last commit of the template.
fn diff(c: &Contents, t: &Template) -> String {
    let last = t.history.last().expect("a template has commits");
    let names = |c: &Contents| c.keys().cloned().collect::<Vec<_>>();
    if names(c) != names(last) {
        return format!(
            "databases {:?}, last commit has {:?}",
            names(c),
            names(last)
        );
    }
    for (name, m) in c {
        let l = &last[name];
        if m != l {
            let k = m
                .iter()
                .zip(l.iter())
                .find(|(a, b)| a != b)
                .map(|(a, b)| format!("first difference: {:?} vs {:?}", a.0, b.0));
            return format!("db {name:?}: {} vs {} entries; {k:?}", m.len(), l.len());
        }
    }
    "equal to the last commit".into()
}
