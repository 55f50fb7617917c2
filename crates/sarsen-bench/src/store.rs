//! Database directories: one per engine under a root directory.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use tempfile::TempDir;

use serde::{Deserialize, Serialize};

use crate::cli::Params;
use crate::engines::Result;
use crate::workload::DbState;

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

    /// The database directory of the series `name` (an engine, or engine-allocator).
    pub fn engine_dir(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// Deletes `name`'s database and returns its (new, empty) directory.
    pub fn reset(&self, name: &str) -> Result<PathBuf> {
        let dir = self.engine_dir(name);
        if dir.exists() {
            fs::remove_dir_all(&dir)?;
        }
        fs::create_dir_all(&dir)?;
        Ok(dir)
    }

    /// Bytes allocated on disk (`st_blocks * 512`, not apparent size) by the files of
    /// `name`'s database.
    pub fn allocated_bytes(&self, name: &str) -> Result<u64> {
        allocated(&self.engine_dir(name))
    }

    fn state_path(&self, name: &str) -> PathBuf {
        self.path.join(format!("{name}.state.json"))
    }

    /// Records what `name`'s database holds (None: unknown, so not reusable), for a
    /// later `--use_existing_db` run.
    pub fn save_state(&self, name: &str, p: &Params, state: Option<DbState>) -> Result<()> {
        let path = self.state_path(name);
        match state {
            None => match fs::remove_file(&path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e.into()),
                _ => Ok(()),
            },
            Some(state) => {
                let saved = SavedState {
                    data: DataShape::of(p),
                    state,
                };
                fs::write(&path, serde_json::to_string_pretty(&saved)?)?;
                Ok(())
            }
        }
    }

    /// What `name`'s database holds, if a previous run recorded it with the same data
    /// shape as `p`; an error if it recorded another shape.
    pub fn load_state(&self, name: &str, p: &Params) -> Result<Option<DbState>> {
        let text = match fs::read_to_string(self.state_path(name)) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        let saved: SavedState = serde_json::from_str(&text)?;
        if saved.data != DataShape::of(p) {
            return Err(format!(
                "it was made with {:?}, this run has {:?}",
                saved.data,
                DataShape::of(p)
            )
            .into());
        }
        Ok(Some(saved.state))
    }
}

/// The parameters that determine a database's content.
#[derive(Debug, PartialEq, Eq, Serialize, Deserialize)]
struct DataShape {
    num: u64,
    key_size: usize,
    value_size: usize,
    seed: u64,
}

impl DataShape {
    fn of(p: &Params) -> Self {
        DataShape {
            num: p.num,
            key_size: p.key_size,
            value_size: p.value_size,
            seed: p.seed,
        }
    }
}

/// The state file of one database.
#[derive(Serialize, Deserialize)]
struct SavedState {
    data: DataShape,
    state: DbState,
}

fn allocated(path: &Path) -> Result<u64> {
    let meta = match fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e.into()),
    };
    if !meta.is_dir() {
        return Ok(meta.blocks() * 512);
    }
    let mut total = 0;
    for entry in fs::read_dir(path)? {
        total += allocated(&entry?.path())?;
    }
    Ok(total)
}
