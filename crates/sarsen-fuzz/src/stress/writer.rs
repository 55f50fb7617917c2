//! The stress run's writer thread.

use super::*;

/// Writes until `until` or a stop; keeps `model` at the last commit and
/// publishes every committed state for the readers.
pub(super) fn writer(
    env: &Env,
    sh: &Shared,
    model: &mut (u64, Arc<State>),
    rng: &mut StdRng,
    rep: &mut StressReport,
    until: Instant,
    cfg: &StressConfig,
) -> Result<(), String> {
    let mut handles = open_handles(env, &model.1)?;
    while Instant::now() < until && !sh.stop.load(SeqCst) {
        let mut w = env.write_txn().map_err(|e| format!("write_txn: {e:?}"))?;
        let mut st = (*model.1).clone();
        let t = w.txnid();
        put(&mut w, &mut st, handles[0], "", b"__txn", &t.to_le_bytes())?;
        for _ in 0..rng.random_range(1..40) {
            rep.merges += u64::from(one_op(&mut w, &mut st, &mut handles, rng)?);
            rep.ops += 1;
        }
        if rng.random_bool(0.05) {
            if rng.random_bool(0.5) {
                w.abort();
            }
            rep.aborts += 1;
            continue;
        }
        w.commit().map_err(|e| format!("commit {t}: {e:?}"))?;
        let st = Arc::new(st);
        *model = (t, st.clone());
        publish(sh, t, st);
        rep.commits += 1;
        if rep.commits.is_multiple_of(cfg.check_every.max(1)) {
            check(env, &format!("after commit {t}"))?;
            rep.checks += 1;
        }
    }
    Ok(())
}

/// Makes state `t` visible to readers and forgets states no reader needs.
fn publish(sh: &Shared, t: u64, st: Arc<State>) {
    let mut h = sh.history.lock().unwrap();
    h.insert(t, st);
    sh.latest.store(t, SeqCst);
    let keep = sh
        .hazards
        .iter()
        .map(|a| a.load(SeqCst))
        .filter(|&x| x != 0)
        .fold(t, u64::min);
    h.retain(|&k, _| k >= keep);
}

/// Handles of the databases the model has, with their operators attached
/// (the others are created by the writer when it first picks them).
fn open_handles(env: &Env, st: &State) -> Result<Vec<Option<Database>>, String> {
    let r = env.read_txn().map_err(|e| format!("read_txn: {e:?}"))?;
    let mut hs = Vec::new();
    for (i, (name, _)) in DBS.iter().enumerate() {
        let h = r
            .open_db_with((!name.is_empty()).then_some(*name), &db_opts(i))
            .map_err(|e| format!("open_db_with({name:?}): {e:?}"))?;
        if h.is_some() != st.contains_key(*name) {
            return Err(format!("{name:?}: exists {}, model differs", h.is_some()));
        }
        hs.push(h);
    }
    Ok(hs)
}

fn put(
    w: &mut RwTxn,
    st: &mut State,
    h: Option<Database>,
    name: &str,
    k: &[u8],
    v: &[u8],
) -> Result<(), String> {
    let h = h.ok_or_else(|| format!("no handle for {name:?}"))?;
    w.put(h, k, v).map_err(|e| format!("put {name:?}: {e:?}"))?;
    st.get_mut(name)
        .ok_or_else(|| format!("{name:?} not in the model"))?
        .insert(k.to_vec(), v.to_vec());
    Ok(())
}

fn value(rng: &mut StdRng, counter: bool) -> Vec<u8> {
    if counter && rng.random_bool(0.95) {
        return rng.random::<u64>().to_le_bytes().to_vec();
    }
    let len = if rng.random_bool(0.04) {
        rng.random_range(500..5000)
    } else {
        rng.random_range(0..80)
    };
    crate::input_bytes(rng.random(), len)
}

/// One random change, applied to the transaction and the model; returns
/// whether it was a merge.
fn one_op(
    w: &mut RwTxn,
    st: &mut State,
    hs: &mut [Option<Database>],
    rng: &mut StdRng,
) -> Result<bool, String> {
    let i = rng.random_range(0..DBS.len());
    let (name, op) = DBS[i];
    let exists = st.contains_key(name);
    let k = key(rng.random_range(0..2000));
    match rng.random_range(0..100) {
        _ if !exists || hs[i].is_none() => {
            let h = w
                .create_db_with((!name.is_empty()).then_some(name), &db_opts(i))
                .map_err(|e| format!("create {name:?}: {e:?}"))?;
            hs[i] = Some(h);
            st.entry(name.into()).or_default();
        }
        0..=39 => put(w, st, hs[i], name, &k, &value(rng, i == 1))?,
        40..=59 => {
            let found = w
                .delete(hs[i].unwrap(), &k)
                .map_err(|e| format!("delete: {e:?}"))?;
            if found != st.get_mut(name).unwrap().remove(&k).is_some() {
                return Err(format!(
                    "delete {name:?} {k:?}: found {found}, model differs"
                ));
            }
        }
        60..=89 if op.is_some() => {
            merge(w, st, hs[i].unwrap(), i, &k, rng)?;
            return Ok(true);
        }
        90..=92 if i > 0 && rng.random_bool(0.02) => {
            w.clear_db(hs[i].unwrap())
                .map_err(|e| format!("clear: {e:?}"))?;
            st.insert(name.into(), Map::new());
        }
        93..=94 if name == "plain" && rng.random_bool(0.1) => {
            w.drop_db(hs[i].unwrap())
                .map_err(|e| format!("drop: {e:?}"))?;
            st.remove(name);
        }
        _ => {
            let got = w
                .get(hs[i].unwrap(), &k)
                .map_err(|e| format!("get: {e:?}"))?;
            if got != st[name].get(&k).map(Vec::as_slice) {
                return Err(format!("writer get {name:?} {k:?} differs from the model"));
            }
        }
    }
    Ok(false)
}

fn merge(
    w: &mut RwTxn,
    st: &mut State,
    h: Database,
    i: usize,
    k: &[u8],
    rng: &mut StdRng,
) -> Result<(), String> {
    let op = DBS[i].1.unwrap();
    let m = st.get_mut(DBS[i].0).unwrap();
    let old = m.get(k).cloned();
    if old.as_ref().is_some_and(|v| v.len() > 1500) {
        // Keep appended values bounded.
        w.put(h, k, b"").map_err(|e| format!("put: {e:?}"))?;
        m.insert(k.to_vec(), Vec::new());
        return Ok(());
    }
    let ops: Vec<Vec<u8>> = (0..rng.random_range(1..4))
        .map(|_| {
            if i == 1 && rng.random_bool(0.97) {
                rng.random_range(0..1000u64).to_le_bytes().to_vec()
            } else {
                crate::input_bytes(rng.random(), rng.random_range(0..12))
            }
        })
        .collect();
    let refs: Vec<&[u8]> = ops.iter().map(Vec::as_slice).collect();
    let r = w.merge_many(h, k, &refs);
    match (model_merge(op, old.as_deref(), &ops), r) {
        (Some(v), Ok(())) => {
            m.insert(k.to_vec(), v);
        }
        (None, Err(sarsen::Error::Merge { .. })) => {}
        (want, got) => {
            return Err(format!(
                "merge into {:?}: model {want:?}, engine {got:?}",
                DBS[i].0
            ))
        }
    }
    Ok(())
}
