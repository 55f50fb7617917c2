//! Sarsen through its public API: default options, except `Durability::NoSync` with
//! a writable map for asynchronous workloads (as LMDB's `MDB_WRITEMAP | MDB_NOSYNC`),
//! or without one under `--write_map false` (Sarsen's default, as LMDB's
//! `MDB_NOSYNC` alone).

use std::path::Path;

use ::sarsen::{merge::Uint64Add, Database, DbOptions, Durability, Env, EnvOptions};

use super::{unsupported, Engine, MergeOperator, OpenOptions, Reader, Result, SyncMode, UpdateFn};

/// A Sarsen environment and its main database.
pub struct SarsenEngine {
    env: Env,
    db: Database,
    /// Whether the main database was opened with a merge operator.
    merge: bool,
}

impl Engine for SarsenEngine {
    type Reader<'a> = SarsenReader<'a>;

    const MAPS_DB: bool = true;

    fn version() -> String {
        format!("{} (workspace)", env!("CARGO_PKG_VERSION"))
    }

    fn config(opts: &OpenOptions) -> String {
        let mut c = match opts.sync {
            SyncMode::Async if opts.write_map => {
                String::from("Durability::NoSync, write_map(true)")
            }
            SyncMode::Async => String::from("Durability::NoSync, write_map(false)"),
            SyncMode::Durable => String::from("Durability::Durable (one fdatasync per commit)"),
        };
        if opts.random_reads {
            c.push_str(", read_ahead(false) (LMDB's MDB_NORDAHEAD)");
        }
        c.push_str("; fillseq with RwTxn::append (MDB_APPEND)");
        if opts.merge_operator == Some(MergeOperator::Uint64Add) {
            c.push_str(", merge::Uint64Add operator");
        }
        c
    }

    fn open(dir: &Path, opts: &OpenOptions) -> Result<Self> {
        let durability = match opts.sync {
            SyncMode::Async => Durability::NoSync,
            SyncMode::Durable => Durability::Durable,
        };
        // SAFETY: the directory belongs to this benchmark; nothing but Sarsen (in this
        // process, the only one using it) modifies its files while they are mapped.
        let env = unsafe {
            EnvOptions::new()
                .durability(durability)
                .write_map(durability == Durability::NoSync && opts.write_map)
                .read_ahead(!opts.random_reads)
                .open(dir)?
        };
        let (db, merge) = match opts.merge_operator {
            Some(MergeOperator::Uint64Add) => {
                let mut w = env.write_txn()?;
                let o = DbOptions::new().merge_operator(Uint64Add);
                let db = w.create_db_with(None, &o)?;
                w.commit()?;
                (db, true)
            }
            None => (env.main_db(), false),
        };
        Ok(SarsenEngine { env, db, merge })
    }

    fn write_batch(&self, pairs: &[(&[u8], &[u8])], sorted_append: bool) -> Result<()> {
        // Sorted loads use `append` (LMDB's MDB_APPEND, as the LMDB module does): it
        // checks the order and fills pages full at the right edge.
        let mut txn = self.env.write_txn()?;
        for &(k, v) in pairs {
            if sorted_append {
                txn.append(self.db, k, v)?;
            } else {
                txn.put(self.db, k, v)?;
            }
        }
        txn.commit()?;
        Ok(())
    }

    fn delete_batch(&self, keys: &[&[u8]]) -> Result<u64> {
        let mut txn = self.env.write_txn()?;
        let mut found = 0;
        for k in keys {
            found += u64::from(txn.delete(self.db, k)?);
        }
        txn.commit()?;
        Ok(found)
    }

    fn update_batch(&self, keys: &[&[u8]], update: &mut UpdateFn<'_>) -> Result<u64> {
        let mut txn = self.env.write_txn()?;
        let mut buf = Vec::new();
        let mut found = 0;
        for (i, k) in keys.iter().enumerate() {
            buf.clear();
            let old = txn.get(self.db, k)?;
            found += u64::from(old.is_some());
            update(i, old, &mut buf);
            txn.put(self.db, k, &buf)?;
        }
        txn.commit()?;
        Ok(found)
    }

    fn merge_batch(&self, pairs: &[(&[u8], &[u8])]) -> Result<()> {
        if !self.merge {
            return Err(unsupported("this Sarsen database", "merge operator"));
        }
        let mut txn = self.env.write_txn()?;
        for &(k, v) in pairs {
            txn.merge(self.db, k, v)?;
        }
        txn.commit()?;
        Ok(())
    }

    fn has_merge() -> bool {
        true
    }

    fn retain(&self, delete: &mut dyn FnMut(&[u8]) -> bool) -> Result<(u64, u64)> {
        let mut txn = self.env.write_txn()?;
        let (mut seen, mut gone) = (0, 0);
        {
            let mut c = txn.cursor_mut(self.db)?;
            while let Some((k, _)) = c.next()? {
                seen += 1;
                if delete(k) {
                    c.delete_current()?;
                    gone += 1;
                }
            }
        }
        txn.commit()?;
        Ok((seen, gone))
    }

    fn pop_front(&self, n: u64) -> Result<u64> {
        let mut txn = self.env.write_txn()?;
        let mut gone = 0;
        {
            let mut c = txn.cursor_mut(self.db)?;
            while gone < n && c.first()?.is_some() {
                c.delete_current()?;
                gone += 1;
            }
        }
        txn.commit()?;
        Ok(gone)
    }

    fn has_cursor_delete() -> bool {
        true
    }

    fn reader(&self) -> Result<SarsenReader<'_>> {
        Ok(SarsenReader {
            env: &self.env,
            db: self.db,
        })
    }

    fn scan<F: FnMut(&[u8], &[u8])>(&self, reverse: bool, mut visit: F) -> Result<u64> {
        let txn = self.env.read_txn()?;
        let mut n = 0;
        let mut each = |entry: ::sarsen::Result<(&[u8], &[u8])>| -> Result<()> {
            let (k, v) = entry?;
            visit(k, v);
            n += 1;
            Ok(())
        };
        if reverse {
            txn.iter(self.db)?.rev().try_for_each(&mut each)?;
        } else {
            txn.iter(self.db)?.try_for_each(&mut each)?;
        }
        Ok(n)
    }

    fn sync(&self) -> Result<()> {
        Ok(self.env.sync()?)
    }
}

/// Reads through a new read transaction per get.
pub struct SarsenReader<'a> {
    env: &'a Env,
    db: Database,
}

impl Reader for SarsenReader<'_> {
    #[inline]
    fn get<R, F: FnOnce(&[u8]) -> R>(&mut self, key: &[u8], f: F) -> Result<Option<R>> {
        let txn = self.env.read_txn()?;
        let value = txn.get(self.db, key)?;
        Ok(value.map(f))
    }

    fn get_batch(
        &mut self,
        keys: &[&[u8]],
        visit: &mut dyn FnMut(usize, Option<&[u8]>),
    ) -> Result<()> {
        let txn = self.env.read_txn()?;
        for (i, k) in keys.iter().enumerate() {
            visit(i, txn.get(self.db, k)?);
        }
        Ok(())
    }
}
