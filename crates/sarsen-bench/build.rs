//! Build script of sarsen-bench: with the `bdb` or `wiredtiger` feature, generates
//! Rust declarations of the C API of Debian's Berkeley DB 5.3 (`/usr/include/db.h`,
//! package `libdb5.3-dev`) or WiredTiger 3.2 (`/usr/include/wiredtiger.h`, package
//! `libwiredtiger-dev`) with bindgen, and links the library. Both APIs hand out
//! structs of function pointers (`DB_ENV`, `DB`, `WT_SESSION`, `WT_CURSOR`, ...), so
//! their layout is taken from the installed header rather than written by hand;
//! bindgen's layout tests check it at compile time. Without either feature this
//! script does nothing.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    #[cfg(feature = "bdb")]
    bind::generate(&bind::BDB);
    #[cfg(feature = "wiredtiger")]
    bind::generate(&bind::WIREDTIGER);
}

#[cfg(any(feature = "bdb", feature = "wiredtiger"))]
mod bind {
    use std::path::PathBuf;

    /// One C library to bind: its header, the library to link, what to generate.
    pub struct Library {
        /// The header, as `#include`d.
        pub header: &'static str,
        /// Where Debian installs it, to rerun this script when it changes.
        pub header_path: &'static str,
        /// The `-l` name of the shared library.
        pub link: &'static str,
        /// The Debian package that has both.
        pub package: &'static str,
        /// The cargo feature that asked for it.
        pub feature: &'static str,
        /// Regex of the types to generate (bindgen adds the types they use).
        pub types: &'static str,
        /// Regex of the functions to generate.
        pub functions: &'static str,
        /// Regex of the `#define` constants to generate.
        pub vars: &'static str,
        /// The file written into `OUT_DIR`.
        pub out: &'static str,
    }

    /// Berkeley DB: the environment, database, transaction, cursor and DBT types,
    /// the four free functions, and the `DB_*` constants.
    #[cfg(feature = "bdb")]
    pub const BDB: Library = Library {
        header: "db.h",
        header_path: "/usr/include/db.h",
        link: "db",
        package: "libdb5.3-dev",
        feature: "bdb",
        types: "^(DB_ENV|DB|DB_TXN|DBC|DBT)$",
        functions: "^(db_env_create|db_create|db_strerror|db_version)$",
        vars: "^DB_.*",
        out: "bdb_sys.rs",
    };

    /// WiredTiger: the connection, session, cursor and item types, the three free
    /// functions, and the error codes.
    #[cfg(feature = "wiredtiger")]
    pub const WIREDTIGER: Library = Library {
        header: "wiredtiger.h",
        header_path: "/usr/include/wiredtiger.h",
        link: "wiredtiger",
        package: "libwiredtiger-dev",
        feature: "wiredtiger",
        types: "^(WT_CONNECTION|WT_SESSION|WT_CURSOR|WT_ITEM)$",
        functions: "^(wiredtiger_open|wiredtiger_strerror|wiredtiger_version)$",
        vars: "^(WT_ROLLBACK|WT_NOTFOUND|WT_DUPLICATE_KEY|WIREDTIGER_VERSION_.*)$",
        out: "wiredtiger_sys.rs",
    };

    /// Writes the bindings of `lib` into `OUT_DIR` and links it; fails the build
    /// with the package to install when the header is missing.
    pub fn generate(lib: &Library) {
        println!("cargo:rerun-if-changed={}", lib.header_path);
        println!("cargo:rustc-link-lib={}", lib.link);
        let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
        let bindings = bindgen::Builder::default()
            .header_contents("wrapper.h", &format!("#include <{}>\n", lib.header))
            .allowlist_type(lib.types)
            .allowlist_function(lib.functions)
            .allowlist_var(lib.vars)
            .size_t_is_usize(true)
            .generate_comments(false)
            .layout_tests(true)
            .generate();
        match bindings {
            Ok(b) => {
                if let Err(e) = b.write_to_file(out.join(lib.out)) {
                    fail(&format!("writing {}: {e}", lib.out));
                }
            }
            Err(e) => fail(&format!(
                "the `{}` feature needs <{}> (Debian package {}: `apt-get install {}`, \
                 or bench/lib.sh's install_packages {}) and libclang (libclang-dev): {e}",
                lib.feature, lib.header, lib.package, lib.package, lib.feature
            )),
        }
    }

    fn fail(msg: &str) -> ! {
        eprintln!("sarsen-bench build script: {msg}");
        std::process::exit(1);
    }
}
