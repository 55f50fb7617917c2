# Shared by the benchmark scripts: install what the chosen engines need, build
# sarsen-bench with their cargo features, and run it. Sourced, not executed.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# CARGO_TARGET_DIR, when set, is where cargo builds (and where the binary is).
BIN="${CARGO_TARGET_DIR:-$ROOT/target}/release/sarsen-bench"

# Debian packages each optional part needs (see crates/sarsen-bench/README.md).
packages_for() {
    case "$1" in
        libmdbx) echo "libclang-dev" ;;
        rocksdb) echo "libclang-dev cmake" ;;
        leveldb) echo "libleveldb-dev" ;;
        bdb) echo "libdb5.3-dev libclang-dev" ;;
        wiredtiger) echo "libwiredtiger-dev libclang-dev" ;;
        malloc) echo "libjemalloc2 libtcmalloc-minimal4" ;;
        lmdbutils) echo "lmdb-utils" ;;
        *) echo "" ;;
    esac
}

# install_packages PART...: apt-get installs the packages of each part that are
# missing (as root, or through sudo).
install_packages() {
    local missing=()
    for part in "$@"; do
        for pkg in $(packages_for "$part"); do
            if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed"; then
                missing+=("$pkg")
            fi
        done
    done
    if [ "${#missing[@]}" -eq 0 ]; then
        return
    fi
    echo "installing Debian packages: ${missing[*]}" >&2
    local sudo=""
    if [ "$(id -u)" -ne 0 ]; then
        sudo="sudo"
    fi
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
}

# features_for ENGINES: the cargo features that build a comma-separated engine list.
features_for() {
    local out=()
    IFS=',' read -ra list <<<"$1"
    for e in "${list[@]}"; do
        case "$e" in
            sarsen | lmdb) ;;
            *) out+=("$e") ;;
        esac
    done
    local IFS=','
    echo "${out[*]}"
}

# build ENGINES: installs what the engines need and builds sarsen-bench with them.
# With SKIP_BUILD=1, uses the binary already in target/release as it is.
build() {
    local engines="$1"
    if [ "${SKIP_BUILD:-0}" = 1 ] && [ -x "$BIN" ]; then
        return
    fi
    local features
    features="$(features_for "$engines")"
    IFS=',' read -ra list <<<"$features"
    install_packages "${list[@]}"
    (cd "$ROOT" && cargo build --release -p sarsen-bench --features "$features")
    # sarsen-capi loads Sarsen's liblmdb.so from beside the binary.
    if [[ ",$engines," == *,sarsen-capi,* ]]; then
        (cd "$ROOT" && cargo build --release -p sarsen-lmdb)
    fi
    # The build leaves hundreds of megabytes of dirty pages; their writeback
    # would otherwise land on the first engine's first workload (Sarsen's
    # fillseq ran at half its speed in two main jobs, and at LMDB's alone).
    sync
}
