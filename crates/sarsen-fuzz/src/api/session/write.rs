//! The write operations of a session.

use super::*;

fn key_too_large(e: &Error) -> bool {
    matches!(e, Error::KeyTooLarge { .. })
}

impl Session<'_, '_> {
    /// Opens the write transaction if none is open.
    fn begin(&mut self) {
        if self.w.is_none() {
            let w = self
                .env
                .write_txn()
                .unwrap_or_else(|e| panic!("{}: write_txn: {e:?}", self.what));
            self.w = Some(w);
            self.pending = self.committed.clone();
        }
    }

    /// The handle of `idx` for a write: `None` (and the operation skipped)
    /// when there is none, `Some(h, false)` when the database does not
    /// exist in the pending state (the write must give `DbNotFound`).
    pub(super) fn write_handle(&self, idx: usize) -> Option<(Database, bool)> {
        let h = self.handles[idx]?;
        Some((h, self.pending.exists(idx)))
    }

    pub(super) fn write(&mut self, op: &Op) {
        self.begin();
        match op {
            Op::Put { db, key, value } => {
                let k = key.bytes(self.max_key);
                self.put(db.idx(), &k, &value.bytes());
            }
            Op::Delete { db, key } => {
                let k = key.bytes(self.max_key);
                self.delete(db.idx(), &k);
            }
            Op::DeleteSome { db, from, count } => {
                let from = from.bytes(self.max_key);
                let keys: Vec<Vec<u8>> = match &self.pending.dbs[db.idx()] {
                    Some(m) => m
                        .range(from..)
                        .take(*count as usize % 64)
                        .map(|(k, _)| k.clone())
                        .collect(),
                    None => Vec::new(),
                };
                for k in keys {
                    self.delete(db.idx(), &k);
                }
            }
            Op::Fill {
                db,
                start,
                count,
                step,
                value,
            } => {
                let v = value.bytes();
                for i in 0..u32::from(*count) {
                    let k = num_key(u32::from(*start) + i * u32::from(*step).max(1));
                    self.put(db.idx(), &k, &v);
                }
            }
            Op::Merge {
                db,
                key,
                count,
                operands,
            } => {
                let k = key.bytes(self.max_key);
                let n = *count as usize % 5;
                let ops: Vec<Vec<u8>> = operands[..n].iter().map(Value::bytes).collect();
                self.merge(db.idx(), &k, &ops);
            }
            Op::CreateDb { db } => self.create(db.idx()),
            Op::DropDb { db } => self.drop_or_clear(db.idx(), true),
            Op::ClearDb { db } => self.drop_or_clear(db.idx(), false),
            _ => self.dup_write(op),
        }
    }

    pub(super) fn put(&mut self, idx: usize, k: &[u8], v: &[u8]) {
        let Some((h, exists)) = self.write_handle(idx) else {
            return;
        };
        let w = self.w.as_mut().unwrap();
        let r = w.put(h, k, v);
        // `put` checks the key's length before the database.
        if k.len() > self.max_key {
            return expect_err(r, key_too_large, &self.what);
        }
        if !exists {
            return expect_err(r, not_found, &self.what);
        }
        r.unwrap_or_else(|e| panic!("{}: put: {e:?}", self.what));
        let m = self.pending.dbs[idx].as_mut().unwrap();
        m.insert(k.to_vec(), v.to_vec());
    }

    pub(super) fn delete(&mut self, idx: usize, k: &[u8]) {
        let Some((h, exists)) = self.write_handle(idx) else {
            return;
        };
        let w = self.w.as_mut().unwrap();
        let r = w.delete(h, k);
        if !exists {
            return expect_err(r, not_found, &self.what);
        }
        let found = r.unwrap_or_else(|e| panic!("{}: delete: {e:?}", self.what));
        let m = self.pending.dbs[idx].as_mut().unwrap();
        assert_eq!(found, m.remove(k).is_some(), "{}: delete found", self.what);
    }

    pub(super) fn merge(&mut self, idx: usize, k: &[u8], ops: &[Vec<u8>]) {
        let Some((h, exists)) = self.write_handle(idx) else {
            return;
        };
        let w = self.w.as_mut().unwrap();
        let refs: Vec<&[u8]> = ops.iter().map(Vec::as_slice).collect();
        let r = w.merge_many(h, k, &refs);
        if k.len() > self.max_key {
            return expect_err(r, key_too_large, &self.what);
        }
        if ops.is_empty() {
            return expect_err(r, |e| matches!(e, Error::InvalidArgument(_)), &self.what);
        }
        if !exists {
            return expect_err(r, not_found, &self.what);
        }
        let m = self.pending.dbs[idx].as_mut().unwrap();
        match model_merge(idx, m.get(k).map(Vec::as_slice), ops) {
            Some(v) => {
                r.unwrap_or_else(|e| panic!("{}: merge: {e:?}", self.what));
                m.insert(k.to_vec(), v);
            }
            None => expect_err(r, |e| matches!(e, Error::Merge { .. }), &self.what),
        }
        // The result is visible to the transaction at once.
        let got = w.get(h, k).expect("get after merge").map(<[u8]>::to_vec);
        assert_eq!(got.as_ref(), m.get(k), "{}: value after merge", self.what);
    }

    pub(super) fn create(&mut self, idx: usize) {
        let w = self.w.as_mut().unwrap();
        let h = w
            .create_db_with(db_name(idx), &db_options(idx))
            .unwrap_or_else(|e| panic!("{}: create_db: {e:?}", self.what));
        if let Some(old) = self.handles[idx] {
            assert_eq!(old, h, "{}: handle of a re-created database", self.what);
        }
        self.handles[idx] = Some(h);
        if idx < DBS {
            self.pending.dbs[idx].get_or_insert_with(Map::new);
        } else {
            self.pending.dups[idx - DBS].get_or_insert_with(DupMap::new);
        }
    }

    pub(super) fn drop_or_clear(&mut self, idx: usize, drop: bool) {
        let Some((h, exists)) = self.write_handle(idx) else {
            return;
        };
        let w = self.w.as_mut().unwrap();
        let r = if drop { w.drop_db(h) } else { w.clear_db(h) };
        if !exists {
            return expect_err(r, not_found, &self.what);
        }
        r.unwrap_or_else(|e| panic!("{}: drop/clear: {e:?}", self.what));
        if idx >= DBS {
            self.pending.dups[idx - DBS] = (!drop).then(DupMap::new);
        } else if drop && idx > 0 {
            self.pending.dbs[idx] = None;
        } else {
            self.pending.dbs[idx] = Some(Map::new());
        }
    }
}
