#!/usr/bin/env bash
# Symas' in-memory scaling report (2014), scaled to this machine (BENCHMARKS.md):
# load NUM records (16-byte keys, 100-byte values; 100M by default, about 12 GB per
# engine, which fits in RAM here), then readwhilewriting with 1 and 2 reader threads
# and one writer, DURATION seconds each. One engine at a time, its database deleted
# after, so the disk needs room for one. Results: report.md, results.json and charts
# in results/inmemory (or $RESULTS).
#   NUM=10000000 DURATION=30 bench/repro-inmemory.sh     # a quicker run
source "$(dirname "$0")/lib.sh"

NUM="${NUM:-100000000}"
DURATION="${DURATION:-60}"
ENGINES="${ENGINES:-sarsen,lmdb,libmdbx,redb,fjall,rocksdb}"
RESULTS="${RESULTS:-$ROOT/results/inmemory}"
DB="${DB:-${TMPDIR:-/tmp}/sarsen-repro-inmemory}"

build "$ENGINES"
mkdir -p "$RESULTS"
IFS=',' read -ra list <<<"$ENGINES"
for e in "${list[@]}"; do
    rm -rf "$DB"
    "$BIN" --engines "$e" --num "$NUM" --benchmarks fillseq,readwhilewriting \
        --threads 1,2 --duration "$DURATION" --db "$DB" \
        --json "$RESULTS/$e.json" "$@" | tee "$RESULTS/$e.md"
done
rm -rf "$DB"
files=()
for e in "${list[@]}"; do files+=("$RESULTS/$e.json"); done
"$BIN" report --out "$RESULTS" "${files[@]}"
echo "results in $RESULTS" >&2
