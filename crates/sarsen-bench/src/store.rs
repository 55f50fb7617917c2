//! Database directories: one per engine under a root directory.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use tempfile::TempDir;

use crate::engines::{EngineKind, Result};

/// Marks a directory as owned by sarsen-bench, so that its contents may be deleted.
const MARKER: &str = ".sarsen-bench";

/// The root directory holding one database directory per engine.
pub struct DbRoot {
    path: PathBuf,
    /// Removes the root at drop when it is a temporary directory.
    _temp: Option<TempDir>,
}

impl DbRoot {
    /// Uses `dir` (created if missing; must be empty or used by sarsen-bench before),
    /// or a new temporary directory under the system temp dir (`/tmp`).
    pub fn new(dir: Option<&Path>) -> Result<Self> {
        let (path, temp) = match dir {
            None => {
                let t = tempfile::Builder::new().prefix("sarsen-bench-").tempdir()?;
                (t.path().to_path_buf(), Some(t))
            }
            Some(d) => {
                fs::create_dir_all(d)?;
                let owned = d.join(MARKER).exists();
                if !owned && fs::read_dir(d)?.next().is_some() {
                    return Err(format!(
                        "refusing to use --db {}: not empty and not made by sarsen-bench",
                        d.display()
                    )
                    .into());
                }
                (d.to_path_buf(), None)
            }
        };
        fs::write(path.join(MARKER), b"")?;
        Ok(DbRoot { path, _temp: temp })
    }

    /// The root directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The database directory of `engine`.
    pub fn engine_dir(&self, engine: EngineKind) -> PathBuf {
        self.path.join(engine.name())
    }

    /// Deletes `engine`'s database and returns its (new, empty) directory.
    pub fn reset(&self, engine: EngineKind) -> Result<PathBuf> {
        let dir = self.engine_dir(engine);
        if dir.exists() {
            fs::remove_dir_all(&dir)?;
        }
        fs::create_dir_all(&dir)?;
        Ok(dir)
    }

    /// Bytes allocated on disk (`st_blocks * 512`, not apparent size) by the files of
    /// `engine`'s database.
    pub fn allocated_bytes(&self, engine: EngineKind) -> Result<u64> {
        allocated(&self.engine_dir(engine))
    }
}

fn allocated(path: &Path) -> Result<u64> {
    let meta = fs::symlink_metadata(path)?;
    if !meta.is_dir() {
        return Ok(meta.blocks() * 512);
    }
    let mut total = 0;
    for entry in fs::read_dir(path)? {
        total += allocated(&entry?.path())?;
    }
    Ok(total)
}
