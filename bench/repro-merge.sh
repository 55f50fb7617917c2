#!/usr/bin/env bash
# RocksDB's merge-operator benchmark, scaled (BENCHMARKS.md): NUM keys (10M) with
# 8-byte counter values; updaterandom (get, add 1, put) against mergerandom
# (uint64add), NUM operations each, 2 writer threads where the engine allows
# concurrent writers (else 1); RocksDB with its WAL off. The counters' sum is
# checked after each run. Results in results/merge.
source "$(dirname "$0")/lib.sh"

NUM="${NUM:-10000000}"
ENGINES="${ENGINES:-sarsen,lmdb,rocksdb}"
RESULTS="${RESULTS:-$ROOT/results/merge}"
DB="${DB:-${TMPDIR:-/tmp}/sarsen-repro-merge}"

build "$ENGINES"
mkdir -p "$RESULTS"
rm -rf "$DB"
"$BIN" --engines "$ENGINES" --num "$NUM" --value_size 8 \
    --benchmarks fillrandom,updaterandom,mergerandom --merge_operator uint64add \
    --threads 2 --db "$DB" --out "$RESULTS" "$@"
rm -rf "$DB"
echo "results in $RESULTS" >&2
