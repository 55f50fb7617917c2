//! Sarsen through LMDB's C API: the `lmdb` engine's code ([`LmdbEngine`]) calling
//! Sarsen's `liblmdb.so` (crate `sarsen-lmdb`) instead of LMDB, so that the two
//! engines make the same calls with the same flags and differ only in the library.
//! Against the `sarsen` engine, it measures what the C API layer costs.
//!
//! Both libraries export the `mdb_*` symbols, so Sarsen's is loaded at run time with
//! `dlopen` (`libloading`, `RTLD_LOCAL`: its symbols do not replace this binary's
//! LMDB), from `$SARSEN_CAPI_LIB` if set, else from `liblmdb.so` beside this
//! executable or one directory up (`target/<profile>/` for the binary and for test
//! binaries in `target/<profile>/deps/`). Build it with
//! `cargo build --release -p sarsen-lmdb` (`bench/lib.sh` does).
//!
//! The flags map to Sarsen as its README says: `MDB_NOSYNC` to `Durability::NoSync`
//! and `MDB_WRITEMAP` to `write_map(true)` (as the `sarsen` engine's asynchronous
//! mode), `MDB_NORDAHEAD` to `read_ahead(false)`, `MDB_APPEND` to `RwTxn::append`,
//! the map size is a hint. Durable runs keep `MDB_WRITEMAP` (`write_map(true)`),
//! where the `sarsen` engine writes with `pwrite`.

use std::path::PathBuf;
use std::sync::OnceLock;

use super::lmdb::{Api, Library, LmdbEngine};
use super::Result;

/// The `sarsen-capi` engine.
pub type SarsenCapiEngine = LmdbEngine<SarsenCapi>;

/// Sarsen's `liblmdb.so`, loaded on first use and never unloaded.
pub struct SarsenCapi;

/// The environment variable naming the library file.
const LIB_VAR: &str = "SARSEN_CAPI_LIB";

/// The library's path and its functions, or why it could not be loaded.
static LOADED: OnceLock<std::result::Result<(PathBuf, Api), String>> = OnceLock::new();

/// Where to look for the library: `$SARSEN_CAPI_LIB`, else `liblmdb.so` beside the
/// executable and one directory up.
fn candidates() -> Vec<PathBuf> {
    if let Some(p) = std::env::var_os(LIB_VAR) {
        return vec![PathBuf::from(p)];
    }
    let exe = std::env::current_exe().ok();
    let dirs = exe.iter().flat_map(|e| e.ancestors().skip(1).take(2));
    dirs.map(|d| d.join("liblmdb.so")).collect()
}

fn load() -> std::result::Result<(PathBuf, Api), String> {
    let tried = candidates();
    let Some(path) = tried.iter().find(|p| p.exists()) else {
        let tried: Vec<String> = tried.iter().map(|p| p.display().to_string()).collect();
        return Err(format!(
            "Sarsen's liblmdb.so not found (looked for {}): build it with \
             `cargo build --release -p sarsen-lmdb`, or set {LIB_VAR}",
            tried.join(", ")
        ));
    };
    // SAFETY: loading runs the library's initializers: Sarsen's liblmdb.so (a Rust
    // cdylib) has none with side effects.
    let lib = unsafe { libloading::Library::new(path) }
        .map_err(|e| format!("loading {}: {e}", path.display()))?;
    // Never unloaded: the engine's function pointers point into it.
    let lib: &'static libloading::Library = Box::leak(Box::new(lib));
    // SAFETY: a library named liblmdb.so exports LMDB 0.9's functions (Sarsen's
    // implements its header, include/lmdb.h).
    let api = unsafe { Api::load(lib) }.map_err(|e| format!("{}: {e}", path.display()))?;
    Ok((path.clone(), api))
}

impl Library for SarsenCapi {
    fn api() -> Result<&'static Api> {
        match LOADED.get_or_init(load) {
            Ok((_, api)) => Ok(api),
            Err(e) => Err(e.clone().into()),
        }
    }

    fn describe() -> String {
        match LOADED.get_or_init(load) {
            Ok((path, _)) => format!("; Sarsen's {}", path.display()),
            Err(e) => format!("; {e}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::process::Command;

    /// Builds `sarsen-lmdb` into this test's target directory (a no-op when up to
    /// date), so that the engine finds the `liblmdb.so` of the current sources.
    fn build_library() {
        static BUILT: std::sync::Once = std::sync::Once::new();
        BUILT.call_once(|| {
            let exe = std::env::current_exe().expect("test binary");
            // <target>/<profile>/deps/<test binary>
            let target = exe.ancestors().nth(3).expect("target directory");
            let profile = exe.ancestors().nth(2).expect("profile directory");
            let release = profile.file_name().is_some_and(|n| n == "release");
            let mut cmd = Command::new(env!("CARGO"));
            cmd.args(["build", "-p", "sarsen-lmdb"]);
            if release {
                cmd.arg("--release");
            }
            let o = cmd
                .env("CARGO_TARGET_DIR", target)
                .output()
                .expect("run cargo");
            assert!(
                o.status.success(),
                "cargo build -p sarsen-lmdb failed:\n{}",
                String::from_utf8_lossy(&o.stderr)
            );
        });
    }

    #[test]
    fn conformance() {
        build_library();
        super::super::conformance::run::<super::SarsenCapiEngine>();
    }

    #[test]
    fn reports_the_library() {
        build_library();
        let v = <super::SarsenCapiEngine as super::super::Engine>::version();
        assert!(v.contains("Sarsen"), "{v}");
    }
}
