#!/usr/bin/env bash
# Issue 20's benchmark: fillsync (one put per durable transaction, distinct keys
# per thread) with 1, 2, 4 and 8 writer threads, for Sarsen and the peers that
# commit durably in their own way: LMDB and libmdbx (no NOSYNC flags), RocksDB
# (WAL on, sync=true), redb (Durability::Immediate) and fjall
# (PersistMode::SyncAll). Reports commits/s and the p50/p99 latency of one commit
# per engine and thread count ("fillsync against writer threads" in report.md)
# and charts the commit rate against writer threads (fillsync-threads.svg), in
# results/groupcommit (or $RESULTS).
#
# fillsync writes NUM/1000 commits in all at each thread count (NUM: 10,000,000
# by default, 10,000 commits; a few minutes in all). RocksDB is a C++ build of 20-50 minutes the first
# time (ENGINES without rocksdb skips it). Extra arguments go to sarsen-bench:
#   bench/groupcommit.sh --repeat 3
#   NUM=20000000 THREADS=1,2,4,8,16 bench/groupcommit.sh
# bench/run.sh runs this after the main job with GROUP=1.
source "$(dirname "$0")/lib.sh"

ENGINES="${ENGINES:-sarsen,lmdb,libmdbx,rocksdb,redb,fjall}"
RESULTS="${RESULTS:-$ROOT/results/groupcommit}"
NUM="${NUM:-10000000}"
THREADS="${THREADS:-1,2,4,8}"

build "$ENGINES"
"$BIN" --num "$NUM" --engines "$ENGINES" --benchmarks fillsync --threads "$THREADS" \
    --out "$RESULTS" "$@"
echo "group-commit results in $RESULTS" >&2
