#!/usr/bin/env bash
# The main job: Sarsen against its default peers on generated data, 1,000,000
# records, every workload; then the write workloads of Sarsen and LMDB again
# without a writable map, each engine's default mode (into $RESULTS/pwrite;
# NO_PWRITE=1 skips it). Installs what the peers need (libclang for libmdbx),
# builds, runs, and writes report.md, results.json and SVG charts into
# results/default (or $RESULTS). Extra arguments go to sarsen-bench, e.g.
#   bench/run.sh --num 100000
#   ENGINES=sarsen,lmdb,libmdbx,redb,rocksdb bench/run.sh
# With GROUP=1, then issue 20's group-commit pass, bench/groupcommit.sh:
# fillsync with 1, 2, 4 and 8 writer threads for sarsen, lmdb, libmdbx,
# rocksdb, redb and fjall (GROUP_ENGINES), into $RESULTS/groupcommit; it takes
# no extra arguments from here, and builds RocksDB (a long C++ build) once.
source "$(dirname "$0")/lib.sh"

ENGINES="${ENGINES:-sarsen,lmdb,libmdbx,redb,fjall}"
RESULTS="${RESULTS:-$ROOT/results/default}"

build "$ENGINES"
"$BIN" --num 1000000 --engines "$ENGINES" --out "$RESULTS" "$@"
echo "results in $RESULTS" >&2

# The write workloads again in each engine's default mode, writing dirty
# pages with pwrite instead of through a writable map (--write_map false),
# for the engines that have both modes; into $RESULTS/pwrite.
PWRITE=()
for e in sarsen lmdb sarsen-capi; do
    case ",$ENGINES," in *",$e,"*) PWRITE+=("$e") ;; esac
done
if [ "${#PWRITE[@]}" -ge 2 ] && [ -z "${NO_PWRITE:-}" ]; then
    "$BIN" --num 1000000 --engines "$(IFS=,; echo "${PWRITE[*]}")" --write_map false \
        --benchmarks fillrandom,overwrite,readwhilewriting,updaterandom,deleterandom \
        --out "$RESULTS/pwrite" "$@"
    echo "default-mode (pwrite) results in $RESULTS/pwrite" >&2
fi

if [ -n "${GROUP:-}" ] && [ "${GROUP}" != 0 ]; then
    ENGINES="${GROUP_ENGINES:-sarsen,lmdb,libmdbx,rocksdb,redb,fjall}" \
        RESULTS="$RESULTS/groupcommit" "$ROOT/bench/groupcommit.sh"
fi
