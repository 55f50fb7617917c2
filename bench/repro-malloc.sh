#!/usr/bin/env bash
# Symas' malloc report (2015), scaled (BENCHMARKS.md): 2M records with 4000-byte
# values on /dev/shm, loaded with batched sequential writes, then readwhilewriting
# with 2 readers that each read every record once and 1 writer; each engine run
# with glibc's malloc, jemalloc and tcmalloc (LD_PRELOAD of Debian's libjemalloc2
# and libtcmalloc-minimal4). One (engine, allocator) at a time, its database
# deleted after, so /dev/shm needs room for one (8 GB at the default NUM).
# Results in results/malloc.
source "$(dirname "$0")/lib.sh"

NUM="${NUM:-2000000}"
# RocksDB and fjall are left out by default: on a 24 GB machine RocksDB's
# database grew to 17 GB on /dev/shm under readwhilewriting and, with 4.9 GB of
# heap, was OOM-killed; fjall's heap reaches 5.5 GB at a quarter of this size.
# Add them with ENGINES=... on a machine with room.
ENGINES="${ENGINES:-sarsen,lmdb,libmdbx,redb}"
RESULTS="${RESULTS:-$ROOT/results/malloc}"
DB="${DB:-/dev/shm/sarsen-repro-malloc}"

install_packages malloc
build "$ENGINES"
mkdir -p "$RESULTS"
IFS=',' read -ra list <<<"$ENGINES"
files=()
for e in "${list[@]}"; do
    for m in glibc jemalloc tcmalloc; do
        rm -rf "$DB"
        "$BIN" --engines "$e" --num "$NUM" --value_size 4000 \
            --benchmarks fillseq,readwhilewriting --threads 2 --reads "$NUM" \
            --malloc "$m" --db "$DB" \
            --json "$RESULTS/$e-$m.json" "$@" | tee "$RESULTS/$e-$m.md"
        files+=("$RESULTS/$e-$m.json")
    done
done
rm -rf "$DB"
"$BIN" report --out "$RESULTS" "${files[@]}"
echo "results in $RESULTS" >&2
