//! Sarsen through its public API, with default options except durability.

use std::path::Path;

use ::sarsen::{Database, Durability, Env, EnvOptions};

use super::{Engine, OpenOptions, Reader, Result, SyncMode};

/// A Sarsen environment and its main database.
pub struct SarsenEngine {
    env: Env,
    db: Database,
}

impl Engine for SarsenEngine {
    type Reader<'a> = SarsenReader<'a>;

    fn version() -> String {
        "workspace crate".to_string()
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
                .write_map(durability == Durability::NoSync)
                .open(dir)?
        };
        let db = env.main_db();
        Ok(SarsenEngine { env, db })
    }

    fn write_batch(&self, pairs: &[(&[u8], &[u8])], _sorted_append: bool) -> Result<()> {
        // Sarsen has no append mode: `sorted_append` is only a hint.
        let mut txn = self.env.write_txn()?;
        for &(k, v) in pairs {
            txn.put(self.db, k, v)?;
        }
        txn.commit()?;
        Ok(())
    }

    fn reader(&self) -> Result<SarsenReader<'_>> {
        Ok(SarsenReader {
            env: &self.env,
            db: self.db,
        })
    }

    fn scan<F: FnMut(&[u8], &[u8])>(&self, mut visit: F) -> Result<u64> {
        let txn = self.env.read_txn()?;
        let mut n = 0;
        for entry in txn.iter(self.db)? {
            let (k, v) = entry?;
            visit(k, v);
            n += 1;
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
}
