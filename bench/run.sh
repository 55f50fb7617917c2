#!/usr/bin/env bash
# The main job: Sarsen against its default peers on generated data, 1,000,000
# records, every workload. Installs what the peers need (libclang for libmdbx),
# builds, runs, and writes report.md, results.json and SVG charts into
# results/default (or $RESULTS). Extra arguments go to sarsen-bench, e.g.
#   bench/run.sh --num 100000
#   ENGINES=sarsen,lmdb,libmdbx,redb,rocksdb bench/run.sh
source "$(dirname "$0")/lib.sh"

ENGINES="${ENGINES:-sarsen,lmdb,libmdbx,redb,fjall}"
RESULTS="${RESULTS:-$ROOT/results/default}"

build "$ENGINES"
"$BIN" --num 1000000 --engines "$ENGINES" --out "$RESULTS" "$@"
echo "results in $RESULTS" >&2
