// The LMDB side of the differential tests: the executor and a safe wrapper
// over the LMDB calls it makes, through a table of functions ([`lmdb::Api`]):
// LMDB built into the test ([`lmdb::LMDB`]) or a library loaded at run time
// (Sarsen's liblmdb.so in `sarsen-lmdb/tests/capi_differential.rs`). A fragment
// for `include!`, as `program.rs`.

// --- LMDB -----------------------------------------------------------------

/// Runs `case` on the LMDB library whose functions `api` holds.
fn run_lib(api: &'static lmdb::Api, case: &Case) -> Vec<Outcome> {
    let dir = tempfile::tempdir().expect("tempdir");
    run_guarded(case, |run: &mut Run<'_, lmdb::Dbi>| run.l_top(api, dir.path()))
}

impl Run<'_, lmdb::Dbi> {
    fn l_top(&mut self, api: &'static lmdb::Api, dir: &Path) -> Flow {
        let mut env = lmdb::Env::open_with(api, dir, MAP_SIZE, 8).map_err(|e| self.fail(e))?;
        while self.l_session(&env)? {
            drop(env);
            env = lmdb::Env::open_with(api, dir, MAP_SIZE, 8).map_err(|e| self.fail(e))?;
            let r = self.l_reopen(&env);
            self.emit_or_fail(r)?;
        }
        Ok(())
    }

    fn l_session(&mut self, env: &lmdb::Env) -> Flow<bool> {
        let mut pinned = None;
        while let Some(ins) = self.at() {
            match ins {
                Instr::BeginWrite => {
                    let mut t = env.begin(false).map_err(|e| self.fail(e))?;
                    self.emit(Outcome::Ok);
                    let r = if self.l_write(&mut t)? {
                        t.commit()
                    } else {
                        t.abort()
                    };
                    self.emit_or_fail(r.map(|()| Outcome::Ok))?;
                }
                Instr::BeginRead => {
                    let t = env.begin(true).map_err(|e| self.fail(e))?;
                    self.emit(Outcome::Ok);
                    while !matches!(self.at(), Some(Instr::Abort)) {
                        self.l_read(&t)?;
                    }
                    self.emit_or_fail(t.abort().map(|()| Outcome::Ok))?;
                }
                Instr::Check => {
                    let t = env.begin(true).map_err(|e| self.fail(e))?;
                    let r = self.l_snapshot(&t);
                    self.emit_or_fail(r)?;
                }
                Instr::Pin => {
                    pinned = Some(env.begin(true).map_err(|e| self.fail(e))?);
                    self.emit(Outcome::Ok);
                }
                Instr::Unpin => {
                    pinned = None;
                    self.emit(Outcome::Ok);
                }
                Instr::CheckPinned if pinned.is_some() => {
                    let r = self.l_snapshot(pinned.as_ref().expect("pinned"));
                    self.emit_or_fail(r)?;
                }
                Instr::Reopen => return Ok(true),
                _ => return Err(self.unexpected("outside a transaction")),
            }
        }
        Ok(false)
    }

    fn l_reopen(&mut self, env: &lmdb::Env) -> lmdb::Res<Outcome> {
        let mut t = env.begin(false)?;
        for (i, spec) in self.case.dbs.iter().enumerate() {
            self.dbs[i] = t.open_db(spec.0.as_deref(), spec.lmdb_flags())?;
        }
        t.commit().map(|()| Outcome::Ok)
    }

    fn l_write(&mut self, t: &mut lmdb::Txn<'_>) -> Flow<bool> {
        loop {
            let Some(ins) = self.at() else {
                return Err(self.unexpected("in a write transaction"));
            };
            let db = |i: &usize| self.dbs[*i];
            let r: lmdb::Res<Outcome> = match ins {
                Instr::Commit => return Ok(true),
                Instr::Abort => return Ok(false),
                Instr::BeginNested => {
                    let mut c = t.nested().map_err(|e| self.fail(e))?;
                    self.emit(Outcome::Ok);
                    let r = if self.l_write(&mut c)? {
                        c.commit()
                    } else {
                        c.abort()
                    };
                    r.map(|()| Outcome::Ok)
                }
                Instr::CreateDb(i) => {
                    let spec = &self.case.dbs[*i];
                    let r = t.open_db(spec.0.as_deref(), spec.lmdb_flags() | lmdb::MDB_CREATE);
                    r.map(|h| self.dbs.push(h)).map(|()| Outcome::Ok)
                }
                Instr::Put(i, k, v) => t.put(db(i), k, &v.bytes(), 0).map(|()| Outcome::Ok),
                Instr::PutNoOverwrite(i, k, v) => t
                    .put_no_overwrite(db(i), k, &v.bytes())
                    .map(|o| Outcome::Found(o.map(B))),
                Instr::Append(i, k, v) => match t.put(db(i), k, &v.bytes(), lmdb::MDB_APPEND) {
                    Err(lmdb::Code(lmdb::MDB_KEYEXIST)) => Ok(Outcome::Refused),
                    r => r.map(|()| Outcome::Ok),
                },
                Instr::Del(i, k) => t.del(db(i), k).map(Outcome::Deleted),
                Instr::Clear(i) => t.clear(db(i)).map(|()| Outcome::Ok),
                Instr::PutNoDupData(i, k, v) => t
                    .put_unless_exists(db(i), k, &v.bytes(), lmdb::MDB_NODUPDATA)
                    .map(Outcome::Added),
                // Sarsen appends after the database's last pair only; LMDB
                // takes any key (see the module doc).
                Instr::AppendDup(i, k, v) => match t.below_last(db(i), k) {
                    Ok(true) => Ok(Outcome::Refused),
                    Ok(false) => t
                        .put_unless_exists(db(i), k, &v.bytes(), lmdb::MDB_APPENDDUP)
                        .map(|added| if added { Outcome::Ok } else { Outcome::Refused }),
                    Err(e) => Err(e),
                },
                Instr::DelData(i, k, v) => t.del_data(db(i), k, &v.bytes()).map(Outcome::Deleted),
                Instr::WCursorOpen(i) => {
                    self.l_wcursor(t, *i)?;
                    continue;
                }
                _ => {
                    self.l_read(t)?;
                    continue;
                }
            };
            self.emit_or_fail(r)?;
        }
    }

    fn l_read(&mut self, t: &lmdb::Txn<'_>) -> Flow {
        let r = match self.at() {
            Some(Instr::Get(i, k)) => t.get(self.dbs[*i], k).map(|o| Outcome::Found(o.map(B))),
            Some(Instr::Check) => self.l_snapshot(t),
            Some(Instr::CursorOpen(i)) => return self.l_cursor(t, *i),
            _ => return Err(self.unexpected("in a transaction")),
        };
        self.emit_or_fail(r)
    }

    fn l_cursor(&mut self, t: &lmdb::Txn<'_>, db: usize) -> Flow {
        let mut c = t.cursor(self.dbs[db]).map_err(|e| self.fail(e))?;
        self.emit(Outcome::Ok);
        let mut pos = Pos::new(self.case.dbs[db].2.is_some());
        loop {
            let m = match self.at() {
                Some(Instr::Move(m)) => m,
                Some(Instr::CursorClose) => {
                    self.emit(Outcome::Ok);
                    return Ok(());
                }
                _ => return Err(self.unexpected("in a cursor session")),
            };
            // Not run, so unchecked (`lmdb_skips` implies it).
            let r = if pos.lmdb_skips(m) {
                Got::Pair(None)
            } else {
                l_move(&mut c, m).map_err(|e| self.fail(e))?
            };
            let o = pos.outcome(m, r);
            self.emit(o);
        }
    }

    fn l_wcursor(&mut self, t: &mut lmdb::Txn<'_>, db: usize) -> Flow {
        use lmdb::{MDB_CURRENT, MDB_GET_CURRENT, MDB_NODUPDATA};
        let mut c = t.write_cursor(self.dbs[db]).map_err(|e| self.fail(e))?;
        self.emit(Outcome::Ok);
        let mut pos = Pos::new(self.case.dbs[db].2.is_some());
        loop {
            let on = pos.at == At::On;
            let r = match self.at() {
                Some(Instr::CursorClose) => {
                    self.emit(Outcome::Ok);
                    return Ok(());
                }
                Some(Instr::Move(m)) => {
                    let r = if pos.lmdb_skips(m) {
                        Got::Pair(None)
                    } else {
                        l_move(&mut c, m).map_err(|e| self.fail(e))?
                    };
                    let o = pos.outcome(m, r);
                    self.emit(o);
                    continue;
                }
                Some(Instr::CurPut(k, v)) => {
                    pos.at = At::On;
                    c.put(k, &v.bytes(), 0)
                }
                // MDB_CURRENT takes the key too: the one the cursor is on.
                Some(Instr::CurPutCurrent(v)) if on => match c.get(MDB_GET_CURRENT, None, None) {
                    Ok(Some((k, old))) => {
                        let v = v.as_ref().map_or(old, |v| v.bytes());
                        c.put(&k, &v, MDB_CURRENT)
                    }
                    Ok(None) => Err(lmdb::Code(lmdb::MDB_PROBLEM)),
                    Err(e) => Err(e),
                },
                Some(Instr::CurDel) if on => {
                    pos.at = At::Deleted;
                    l_refresh(&mut c, pos.dups).and_then(|()| c.del(0))
                }
                Some(Instr::CurDelKey) if on => {
                    pos.at = At::Deleted;
                    l_refresh(&mut c, pos.dups).and_then(|()| c.del(MDB_NODUPDATA))
                }
                Some(Instr::CurPutCurrent(_) | Instr::CurDel | Instr::CurDelKey) => {
                    self.emit(Outcome::Unchecked);
                    continue;
                }
                _ => return Err(self.unexpected("in a write-cursor session")),
            };
            let r = r.map(|()| Outcome::Ok);
            self.emit_or_fail(r)?;
        }
    }

    fn l_snapshot(&self, t: &lmdb::Txn<'_>) -> lmdb::Res<Outcome> {
        use lmdb::{MDB_FIRST, MDB_LAST, MDB_NEXT, MDB_NEXT_NODUP, MDB_PREV, MDB_PREV_NODUP};
        let mut snaps = Vec::new();
        for (i, &dbi) in self.dbs.iter().enumerate() {
            let scan = |first: u32, step: u32| -> lmdb::Res<Scan> {
                let (mut c, mut v) = (t.cursor(dbi)?, Vec::new());
                let mut e = c.get(first, None, None)?;
                while let Some((k, d)) = e {
                    v.push((B(k), B(d)));
                    e = c.get(step, None, None)?;
                }
                Ok(v)
            };
            let keys = |first: u32, step: u32| -> lmdb::Res<Vec<(B, u64)>> {
                let (mut c, mut v) = (t.cursor(dbi)?, Vec::new());
                let mut e = c.get(first, None, None)?;
                while let Some((k, _)) = e {
                    v.push((B(k), c.count()?));
                    e = c.get(step, None, None)?;
                }
                Ok(v)
            };
            let dups = self.case.dbs[i].2.is_some();
            snaps.push(DbSnap {
                entries: t.entries(dbi)?,
                fwd: scan(MDB_FIRST, MDB_NEXT)?,
                bwd: scan(MDB_LAST, MDB_PREV)?,
                keys_fwd: if dups {
                    keys(MDB_FIRST, MDB_NEXT_NODUP)?
                } else {
                    Vec::new()
                },
                keys_bwd: if dups {
                    keys(MDB_LAST, MDB_PREV_NODUP)?
                } else {
                    Vec::new()
                },
            });
        }
        Ok(Outcome::Snapshot(snaps))
    }
}

/// Runs `m` on an LMDB cursor.
fn l_move(c: &mut lmdb::Cursor<'_>, m: &Move) -> lmdb::Res<Got> {
    use lmdb::{Code, MDB_FIRST, MDB_FIRST_DUP, MDB_GET_BOTH, MDB_GET_BOTH_RANGE};
    use lmdb::{MDB_GET_CURRENT, MDB_LAST, MDB_LAST_DUP, MDB_NEXT, MDB_NEXT_DUP};
    use lmdb::{MDB_NEXT_NODUP, MDB_PREV, MDB_PREV_DUP, MDB_PREV_NODUP};
    use lmdb::{MDB_SET, MDB_SET_KEY, MDB_SET_RANGE};
    let (op, key, data) = match m {
        Move::First => (MDB_FIRST, None, None),
        Move::Last => (MDB_LAST, None, None),
        Move::Next => (MDB_NEXT, None, None),
        Move::Prev => (MDB_PREV, None, None),
        Move::Current => (MDB_GET_CURRENT, None, None),
        Move::SetRange(k) => (MDB_SET_RANGE, Some(&k[..]), None),
        Move::Set(k) => (MDB_SET, Some(&k[..]), None),
        Move::SetKey(k) => (MDB_SET_KEY, Some(&k[..]), None),
        Move::GetBoth(k, v) => (MDB_GET_BOTH, Some(&k[..]), Some(v.bytes())),
        Move::GetBothRange(k, v) => (MDB_GET_BOTH_RANGE, Some(&k[..]), Some(v.bytes())),
        Move::NextDup => (MDB_NEXT_DUP, None, None),
        Move::PrevDup => (MDB_PREV_DUP, None, None),
        Move::FirstDup => (MDB_FIRST_DUP, None, None),
        Move::LastDup => (MDB_LAST_DUP, None, None),
        Move::NextNoDup => (MDB_NEXT_NODUP, None, None),
        Move::PrevNoDup => (MDB_PREV_NODUP, None, None),
        // Never positioned: LMDB says EINVAL, Sarsen 0.
        Move::Count => {
            return match c.count() {
                Err(Code(libc::EINVAL)) => Ok(Got::Count(0)),
                r => r.map(Got::Count),
            }
        }
        Move::Multiple => return l_multiple(c),
    };
    let dup_end = matches!(op, MDB_FIRST_DUP | MDB_LAST_DUP);
    Ok(Got::Pair(
        match c.get(op, key, data.as_deref()) {
            // Never positioned: LMDB says EINVAL, Sarsen "no entry".
            Err(Code(libc::EINVAL)) if dup_end || op == MDB_GET_CURRENT => None,
            // FIRST_DUP and LAST_DUP give no key (LMDB sets it only for a key
            // with one value): take the one the cursor stands on.
            Ok(Some(_)) if dup_end => c.get(MDB_GET_CURRENT, None, None)?,
            r => r?,
        }
        .map(|(k, v)| (B(k), B(v))),
    ))
}

/// Before a delete at an LMDB write cursor: places it again on the pair it
/// stands on (`GET_BOTH`, or `SET_KEY` without DUPSORT), clearing what
/// earlier moves left in it, which two LMDB bugs make wrong after the
/// delete (see the module doc and `lmdb_cursor_write_bugs`): the sub-cursor
/// of a key it stepped from, and the end flag of a failed `NEXT` that a put
/// of a new key at the cursor keeps.
fn l_refresh(c: &mut lmdb::Cursor<'_>, dups: bool) -> lmdb::Res<()> {
    use lmdb::{MDB_GET_BOTH, MDB_GET_CURRENT, MDB_SET_KEY};
    let Some((k, v)) = c.get(MDB_GET_CURRENT, None, None)? else {
        return Err(lmdb::Code(lmdb::MDB_PROBLEM));
    };
    let again = match dups {
        true => c.get(MDB_GET_BOTH, Some(&k), Some(&v))?,
        false => c.get(MDB_SET_KEY, Some(&k), None)?,
    };
    match again {
        Some(_) => Ok(()),
        None => Err(lmdb::Code(lmdb::MDB_PROBLEM)),
    }
}

/// `Move::Multiple` on an LMDB cursor. A key with one value may have no
/// sub-page, and then GET_MULTIPLE returns no data (or a page of the key
/// the cursor stood on before): its one value stands for the batch (see
/// the module doc).
fn l_multiple(c: &mut lmdb::Cursor<'_>) -> lmdb::Res<Got> {
    use lmdb::MDB_GET_CURRENT;
    use lmdb::{Code, MDB_FIRST_DUP, MDB_GET_MULTIPLE, MDB_NEXT_MULTIPLE};
    match c.get(MDB_FIRST_DUP, None, None) {
        Err(Code(libc::EINVAL)) | Ok(None) => return Ok(Got::Pair(None)),
        r => r?,
    };
    // FIRST_DUP may give no key (see `l_move`).
    let Some((k, first)) = c.get(MDB_GET_CURRENT, None, None)? else {
        return Err(Code(lmdb::MDB_PROBLEM));
    };
    if c.count()? == 1 {
        return Ok(Got::Pair(Some((B(k), B(first)))));
    }
    let mut all = Vec::new();
    let mut batch = c.get(MDB_GET_MULTIPLE, None, None)?;
    while let Some((_, b)) = batch {
        if b.is_empty() || b.len() % first.len() != 0 {
            // A malformed batch: the harness's assumption is wrong.
            return Err(Code(lmdb::MDB_PROBLEM));
        }
        all.extend_from_slice(&b);
        batch = c.get(MDB_NEXT_MULTIPLE, None, None)?;
    }
    Ok(Got::Pair(Some((B(k), B(all)))))
}

/// A small safe wrapper over the LMDB calls the test makes. Every value LMDB
/// returns is copied out at once, so no borrow of the map escapes a call;
/// lifetimes keep a transaction within its environment, a child within its
/// parent (which cannot be used meanwhile, as LMDB requires), and a cursor
/// within its transaction.
mod lmdb {
    use std::ffi::{c_char, c_int, c_uint, c_void, CStr, CString};
    use std::fmt;
    use std::marker::PhantomData;
    use std::os::unix::ffi::OsStrExt;
    use std::path::Path;
    use std::ptr;

    pub use ffi::MDB_PROBLEM;
    pub use ffi::{MDB_APPEND, MDB_APPENDDUP, MDB_BAD_VALSIZE, MDB_CREATE, MDB_CURRENT};
    pub use ffi::{MDB_DUPFIXED, MDB_DUPSORT, MDB_INTEGERDUP, MDB_NODUPDATA, MDB_REVERSEDUP};
    pub use ffi::{MDB_FIRST, MDB_FIRST_DUP, MDB_GET_BOTH, MDB_GET_BOTH_RANGE, MDB_GET_CURRENT};
    pub use ffi::{MDB_GET_MULTIPLE, MDB_LAST, MDB_LAST_DUP, MDB_NEXT, MDB_NEXT_DUP};
    pub use ffi::{MDB_INTEGERKEY, MDB_KEYEXIST, MDB_PREV, MDB_PREV_DUP, MDB_REVERSEKEY};
    pub use ffi::{MDB_NEXT_MULTIPLE, MDB_NEXT_NODUP, MDB_PREV_NODUP};
    pub use ffi::{MDB_SET, MDB_SET_KEY, MDB_SET_RANGE};
    use lmdb_master_sys as ffi;

    pub type Dbi = ffi::MDB_dbi;

    /// Declares [`Api`], the table of the LMDB functions the wrapper calls,
    /// and [`LMDB`], that table for the LMDB built into the test.
    macro_rules! lmdb_api {
        ($($name:ident: fn($($arg:ty),*) $(-> $ret:ty)?;)*) => {
            /// The LMDB functions the wrapper calls, with LMDB 0.9's C signatures.
            pub struct Api {
                $(pub $name: unsafe extern "C" fn($($arg),*) $(-> $ret)?,)*
            }

            /// The functions of the LMDB built into the test (`lmdb-master-sys`).
            pub static LMDB: Api = Api { $($name: ffi::$name,)* };

            impl Api {
                /// The same functions from a library loaded at run time: `sym`
                /// gives the address of a symbol by its NUL-terminated name.
                /// `None` if one is missing.
                ///
                /// # Safety
                /// Each address `sym` gives must be the LMDB function of that
                /// name, with LMDB 0.9's signature, valid for the program's life.
                #[allow(dead_code)] // used by sarsen-lmdb's capi_differential
                pub unsafe fn load(sym: impl Fn(&str) -> Option<*mut c_void>) -> Option<Api> {
                    Some(Api {
                        $($name: {
                            let p = sym(concat!(stringify!($name), "\0"))?;
                            // SAFETY: per the contract, `p` is that function.
                            unsafe {
                                std::mem::transmute::<
                                    *mut c_void,
                                    unsafe extern "C" fn($($arg),*) $(-> $ret)?,
                                >(p)
                            }
                        },)*
                    })
                }
            }
        };
    }

    use ffi::{MDB_cursor, MDB_dbi, MDB_env, MDB_stat, MDB_txn, MDB_val};

    lmdb_api! {
        mdb_env_create: fn(*mut *mut MDB_env) -> c_int;
        mdb_env_set_mapsize: fn(*mut MDB_env, ffi::mdb_size_t) -> c_int;
        mdb_env_set_maxdbs: fn(*mut MDB_env, MDB_dbi) -> c_int;
        mdb_env_open: fn(*mut MDB_env, *const c_char, c_uint, ffi::mdb_mode_t) -> c_int;
        mdb_env_get_maxkeysize: fn(*mut MDB_env) -> c_int;
        mdb_env_close: fn(*mut MDB_env);
        mdb_txn_begin: fn(*mut MDB_env, *mut MDB_txn, c_uint, *mut *mut MDB_txn) -> c_int;
        mdb_txn_env: fn(*mut MDB_txn) -> *mut MDB_env;
        mdb_txn_commit: fn(*mut MDB_txn) -> c_int;
        mdb_txn_abort: fn(*mut MDB_txn);
        mdb_dbi_open: fn(*mut MDB_txn, *const c_char, c_uint, *mut MDB_dbi) -> c_int;
        mdb_get: fn(*mut MDB_txn, MDB_dbi, *mut MDB_val, *mut MDB_val) -> c_int;
        mdb_put: fn(*mut MDB_txn, MDB_dbi, *mut MDB_val, *mut MDB_val, c_uint) -> c_int;
        mdb_del: fn(*mut MDB_txn, MDB_dbi, *mut MDB_val, *mut MDB_val) -> c_int;
        mdb_cmp: fn(*mut MDB_txn, MDB_dbi, *const MDB_val, *const MDB_val) -> c_int;
        mdb_drop: fn(*mut MDB_txn, MDB_dbi, c_int) -> c_int;
        mdb_stat: fn(*mut MDB_txn, MDB_dbi, *mut MDB_stat) -> c_int;
        mdb_cursor_open: fn(*mut MDB_txn, MDB_dbi, *mut *mut MDB_cursor) -> c_int;
        mdb_cursor_get: fn(*mut MDB_cursor, *mut MDB_val, *mut MDB_val, ffi::MDB_cursor_op) -> c_int;
        mdb_cursor_put: fn(*mut MDB_cursor, *mut MDB_val, *mut MDB_val, c_uint) -> c_int;
        mdb_cursor_del: fn(*mut MDB_cursor, c_uint) -> c_int;
        mdb_cursor_count: fn(*mut MDB_cursor, *mut ffi::mdb_size_t) -> c_int;
        mdb_cursor_close: fn(*mut MDB_cursor);
    }

    /// An LMDB return code other than success.
    #[derive(Clone, Copy, PartialEq, Eq)]
    pub struct Code(pub c_int);

    impl fmt::Display for Code {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            // SAFETY: mdb_strerror takes any code and returns a static (or
            // strerror-owned) NUL-terminated string.
            let msg = unsafe { CStr::from_ptr(ffi::mdb_strerror(self.0)) };
            write!(f, "lmdb: {} ({})", msg.to_string_lossy(), self.0)
        }
    }
    impl fmt::Debug for Code {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            fmt::Display::fmt(self, f)
        }
    }

    pub type Res<T> = Result<T, Code>;

    fn check(rc: c_int) -> Res<()> {
        if rc == ffi::MDB_SUCCESS {
            Ok(())
        } else {
            Err(Code(rc))
        }
    }

    fn val(b: &[u8]) -> ffi::MDB_val {
        ffi::MDB_val {
            mv_size: b.len(),
            mv_data: b.as_ptr() as *mut c_void,
        }
    }

    /// Copies the bytes an `MDB_val` points to.
    ///
    /// # Safety
    /// `v` must come from a successful LMDB read in a transaction that is
    /// still live and unchanged since, or point to a live Rust slice.
    unsafe fn copy(v: &ffi::MDB_val) -> Vec<u8> {
        if v.mv_size == 0 {
            return Vec::new();
        }
        // SAFETY: per the contract, `mv_size` readable bytes at `mv_data`.
        unsafe { std::slice::from_raw_parts(v.mv_data as *const u8, v.mv_size) }.to_vec()
    }

    /// An open environment (one directory).
    pub struct Env(*mut ffi::MDB_env, &'static Api);

    impl Env {
        /// Opens (creating) the environment in `dir`, with `MDB_NOSYNC`, and
        /// `MDB_NOTLS` so that a thread may hold several read transactions.
        pub fn open(dir: &Path, map_size: usize, max_dbs: u32) -> Res<Env> {
            Env::open_with(&LMDB, dir, map_size, max_dbs)
        }

        /// [`Env::open`] in the library whose functions `api` holds.
        pub fn open_with(api: &'static Api, dir: &Path, map_size: usize, max_dbs: u32) -> Res<Env> {
            let path = CString::new(dir.as_os_str().as_bytes()).expect("path without NUL");
            let mut env = ptr::null_mut();
            // SAFETY: the out pointer is valid.
            check(unsafe { (api.mdb_env_create)(&mut env) })?;
            // From here dropping `e` closes `env`, on errors too.
            let e = Env(env, api);
            // SAFETY: `env` is created and not yet open, as the setters require.
            check(unsafe { (api.mdb_env_set_mapsize)(env, map_size) })?;
            // SAFETY: as above.
            check(unsafe { (api.mdb_env_set_maxdbs)(env, max_dbs) })?;
            let flags = ffi::MDB_NOSYNC | ffi::MDB_NOMETASYNC | ffi::MDB_NOTLS;
            // SAFETY: `env` is created; `path` is a NUL-terminated directory.
            check(unsafe { (api.mdb_env_open)(env, path.as_ptr(), flags, 0o644) })?;
            // SAFETY: `env` is open.
            let max_key = unsafe { (api.mdb_env_get_maxkeysize)(env) };
            // LMDB's limit is the programs' (Sarsen's liblmdb.so takes more).
            if ptr::eq(api, &LMDB) {
                assert_eq!(max_key as usize, super::LMDB_MAX_KEY, "LMDB's key limit");
            }
            assert!(max_key as usize >= super::LMDB_MAX_KEY, "key limit {max_key}");
            Ok(e)
        }

        /// Begins a top-level transaction.
        pub fn begin(&self, read_only: bool) -> Res<Txn<'_>> {
            let flags = if read_only { ffi::MDB_RDONLY } else { 0 };
            let mut txn = ptr::null_mut();
            // SAFETY: `env` is open, the out pointer valid. This thread holds no
            // other write transaction of this environment (the executors'
            // structure), and read ones may share it (MDB_NOTLS).
            check(unsafe { (self.1.mdb_txn_begin)(self.0, ptr::null_mut(), flags, &mut txn) })?;
            Ok(Txn(txn, self.1, PhantomData))
        }
    }

    impl Drop for Env {
        fn drop(&mut self) {
            // SAFETY: created by mdb_env_create, closed once; every transaction
            // borrows the `Env` and so has ended.
            unsafe { (self.1.mdb_env_close)(self.0) };
        }
    }

    /// A live transaction; aborted on drop unless committed.
    pub struct Txn<'a>(*mut ffi::MDB_txn, &'static Api, PhantomData<&'a ()>);

    impl Txn<'_> {
        /// Begins a child of this write transaction, borrowing it: LMDB allows
        /// no other use of a parent while a child lives.
        pub fn nested(&mut self) -> Res<Txn<'_>> {
            let mut txn = ptr::null_mut();
            // SAFETY: `self.0` is a live write transaction without a live child
            // (the borrow); its environment pointer is valid while it lives.
            let env = unsafe { (self.1.mdb_txn_env)(self.0) };
            // SAFETY: as above; the out pointer is valid.
            check(unsafe { (self.1.mdb_txn_begin)(env, self.0, 0, &mut txn) })?;
            Ok(Txn(txn, self.1, PhantomData))
        }

        /// `mdb_dbi_open`; `name: None` is the main database.
        pub fn open_db(&mut self, name: Option<&str>, flags: u32) -> Res<Dbi> {
            let name = name.map(|n| CString::new(n).expect("name without NUL"));
            let (p, mut dbi) = (name.as_ref().map_or(ptr::null(), |n| n.as_ptr()), 0);
            // SAFETY: the transaction is live; `p` is null or a NUL-terminated
            // string; the out pointer is valid.
            check(unsafe { (self.1.mdb_dbi_open)(self.0, p, flags, &mut dbi) })?;
            Ok(dbi)
        }

        pub fn get(&self, dbi: Dbi, key: &[u8]) -> Res<Option<Vec<u8>>> {
            let (mut k, mut d) = (val(key), val(&[]));
            // SAFETY: the transaction is live with no live child, `dbi` opened in
            // its environment, `k` points to a live slice; `d` is an out value.
            match unsafe { (self.1.mdb_get)(self.0, dbi, &mut k, &mut d) } {
                // SAFETY: `d` comes from the successful mdb_get just made.
                ffi::MDB_SUCCESS => Ok(Some(unsafe { copy(&d) })),
                ffi::MDB_NOTFOUND => Ok(None),
                rc => Err(Code(rc)),
            }
        }

        /// `mdb_put` with `flags` (0 or `MDB_APPEND`).
        pub fn put(&mut self, dbi: Dbi, key: &[u8], data: &[u8], flags: u32) -> Res<()> {
            let (mut k, mut d) = (val(key), val(data));
            // SAFETY: a live write transaction with no live child, `dbi` open,
            // `k` and `d` point to live slices (LMDB copies them).
            check(unsafe { (self.1.mdb_put)(self.0, dbi, &mut k, &mut d, flags) })
        }

        /// `mdb_put` with `MDB_NOOVERWRITE`: `Some(existing)` on `MDB_KEYEXIST`.
        pub fn put_no_overwrite(
            &mut self,
            dbi: Dbi,
            key: &[u8],
            data: &[u8],
        ) -> Res<Option<Vec<u8>>> {
            let (mut k, mut d) = (val(key), val(data));
            // SAFETY: as in `put`.
            match unsafe { (self.1.mdb_put)(self.0, dbi, &mut k, &mut d, ffi::MDB_NOOVERWRITE) } {
                ffi::MDB_SUCCESS => Ok(None),
                // SAFETY: on MDB_KEYEXIST LMDB points `d` at the stored value.
                ffi::MDB_KEYEXIST => Ok(Some(unsafe { copy(&d) })),
                rc => Err(Code(rc)),
            }
        }

        /// `mdb_del` without data: whether the key was there.
        pub fn del(&mut self, dbi: Dbi, key: &[u8]) -> Res<bool> {
            let mut k = val(key);
            // SAFETY: as in `put`; a null data pointer deletes the key.
            match unsafe { (self.1.mdb_del)(self.0, dbi, &mut k, ptr::null_mut()) } {
                ffi::MDB_SUCCESS => Ok(true),
                ffi::MDB_NOTFOUND => Ok(false),
                rc => Err(Code(rc)),
            }
        }

        /// `mdb_put` with `flags` (`MDB_NODUPDATA`, `MDB_APPENDDUP`): `false`
        /// on `MDB_KEYEXIST`.
        pub fn put_unless_exists(
            &mut self,
            dbi: Dbi,
            key: &[u8],
            data: &[u8],
            flags: u32,
        ) -> Res<bool> {
            let (mut k, mut d) = (val(key), val(data));
            // SAFETY: as in `put`.
            match unsafe { (self.1.mdb_put)(self.0, dbi, &mut k, &mut d, flags) } {
                ffi::MDB_SUCCESS => Ok(true),
                ffi::MDB_KEYEXIST => Ok(false),
                rc => Err(Code(rc)),
            }
        }

        /// `mdb_del` with data: whether the pair was there.
        pub fn del_data(&mut self, dbi: Dbi, key: &[u8], data: &[u8]) -> Res<bool> {
            let (mut k, mut d) = (val(key), val(data));
            // SAFETY: as in `put`.
            match unsafe { (self.1.mdb_del)(self.0, dbi, &mut k, &mut d) } {
                ffi::MDB_SUCCESS => Ok(true),
                ffi::MDB_NOTFOUND => Ok(false),
                rc => Err(Code(rc)),
            }
        }

        /// Whether `key` sorts below the database's last key (`mdb_cmp`).
        pub fn below_last(&self, dbi: Dbi, key: &[u8]) -> Res<bool> {
            let Some((last, _)) = self.cursor(dbi)?.get(ffi::MDB_LAST, None, None)? else {
                return Ok(false);
            };
            let (a, b) = (val(key), val(&last));
            // SAFETY: the transaction is live, `dbi` open, both point to live
            // slices.
            Ok(unsafe { (self.1.mdb_cmp)(self.0, dbi, &a, &b) } < 0)
        }

        /// `mdb_drop(.., 0)`: empties the database, keeps the handle.
        pub fn clear(&mut self, dbi: Dbi) -> Res<()> {
            // SAFETY: a live write transaction with no live child, `dbi` open.
            check(unsafe { (self.1.mdb_drop)(self.0, dbi, 0) })
        }

        /// `mdb_stat`'s `ms_entries`.
        pub fn entries(&self, dbi: Dbi) -> Res<u64> {
            // SAFETY: MDB_stat is plain integers; all-zero is a valid value.
            let mut st: ffi::MDB_stat = unsafe { std::mem::zeroed() };
            // SAFETY: the transaction is live, `dbi` open, the out pointer valid.
            check(unsafe { (self.1.mdb_stat)(self.0, dbi, &mut st) })?;
            Ok(st.ms_entries as u64)
        }

        pub fn cursor(&self, dbi: Dbi) -> Res<Cursor<'_>> {
            let mut cur = ptr::null_mut();
            // SAFETY: the transaction is live, `dbi` open, the out pointer valid.
            check(unsafe { (self.1.mdb_cursor_open)(self.0, dbi, &mut cur) })?;
            Ok(Cursor(cur, self.1, PhantomData))
        }

        /// A cursor that may write (`Cursor::put`, `Cursor::del`): it
        /// borrows the write transaction mutably, so nothing else reads or
        /// writes it meanwhile.
        pub fn write_cursor(&mut self, dbi: Dbi) -> Res<Cursor<'_>> {
            self.cursor(dbi)
        }

        pub fn commit(mut self) -> Res<()> {
            let txn = std::mem::replace(&mut self.0, ptr::null_mut());
            // SAFETY: `txn` is live with no live child or cursor (they borrow
            // it); commit frees it whatever it returns.
            check(unsafe { (self.1.mdb_txn_commit)(txn) })
        }

        /// Aborts (as dropping does); cannot fail.
        pub fn abort(self) -> Res<()> {
            Ok(())
        }
    }

    impl Drop for Txn<'_> {
        fn drop(&mut self) {
            if !self.0.is_null() {
                // SAFETY: the transaction is live; its children and cursors have
                // ended (they borrow it); abort frees it.
                unsafe { (self.1.mdb_txn_abort)(self.0) };
            }
        }
    }

    /// A cursor; closed on drop, before its transaction ends.
    pub struct Cursor<'t>(*mut ffi::MDB_cursor, &'static Api, PhantomData<&'t ()>);

    impl Cursor<'_> {
        /// `mdb_cursor_get` with `op`, (for the SET ops) `key` and (for the
        /// GET_BOTH ops) `data`; `None` on `MDB_NOTFOUND`. GET_MULTIPLE and
        /// NEXT_MULTIPLE return the batch (values back to back) as the data.
        pub fn get(
            &mut self,
            op: u32,
            key: Option<&[u8]>,
            data: Option<&[u8]>,
        ) -> Res<Option<(Vec<u8>, Vec<u8>)>> {
            let (mut k, mut d) = (val(key.unwrap_or(&[])), val(data.unwrap_or(&[])));
            // SAFETY: the cursor is open in a live transaction that cannot
            // change meanwhile (it is borrowed); `k` and `d` point to live
            // slices.
            match unsafe { (self.1.mdb_cursor_get)(self.0, &mut k, &mut d, op) } {
                // SAFETY: both come from the successful call just made (or are
                // still our own slices, as `k` for MDB_SET).
                ffi::MDB_SUCCESS => Ok(Some(unsafe { (copy(&k), copy(&d)) })),
                ffi::MDB_NOTFOUND => Ok(None),
                rc => Err(Code(rc)),
            }
        }

        /// `mdb_cursor_put` with `flags` (0 or `MDB_CURRENT`), in a write
        /// transaction.
        pub fn put(&mut self, key: &[u8], data: &[u8], flags: u32) -> Res<()> {
            let (mut k, mut d) = (val(key), val(data));
            // SAFETY: a cursor from `write_cursor`: open in a live write
            // transaction with no live child, which nothing else uses
            // meanwhile (the cursor borrows it mutably); `k` and `d` point
            // to live slices (LMDB copies them).
            check(unsafe { (self.1.mdb_cursor_put)(self.0, &mut k, &mut d, flags) })
        }

        /// `mdb_cursor_del` with `flags` (0 or `MDB_NODUPDATA`).
        pub fn del(&mut self, flags: u32) -> Res<()> {
            // SAFETY: as in `put`.
            check(unsafe { (self.1.mdb_cursor_del)(self.0, flags) })
        }

        /// `mdb_cursor_count`.
        pub fn count(&self) -> Res<u64> {
            let mut n = 0;
            // SAFETY: the cursor is open in a live transaction; the out
            // pointer is valid.
            check(unsafe { (self.1.mdb_cursor_count)(self.0, &mut n) })?;
            Ok(n as u64)
        }
    }

    impl Drop for Cursor<'_> {
        fn drop(&mut self) {
            // SAFETY: opened by mdb_cursor_open, closed once, while its
            // transaction lives (the borrow).
            unsafe { (self.1.mdb_cursor_close)(self.0) };
        }
    }
}
