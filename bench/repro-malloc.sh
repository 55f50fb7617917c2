#!/usr/bin/env bash
# Symas' malloc report (2015), scaled (BENCHMARKS.md): 2M records with 4000-byte
# values on /dev/shm, loaded with batched sequential writes, then readwhilewriting
# with 2 readers that each read every record once and 1 writer; each engine run
# with glibc's malloc, jemalloc and tcmalloc (LD_PRELOAD of Debian's libjemalloc2
# and libtcmalloc-minimal4). One engine at a time. Results in results/malloc.
source "$(dirname "$0")/lib.sh"

NUM="${NUM:-2000000}"
ENGINES="${ENGINES:-sarsen,lmdb,libmdbx,redb,fjall,rocksdb}"
RESULTS="${RESULTS:-$ROOT/results/malloc}"
DB="${DB:-/dev/shm/sarsen-repro-malloc}"

install_packages malloc
build "$ENGINES"
mkdir -p "$RESULTS"
IFS=',' read -ra list <<<"$ENGINES"
for e in "${list[@]}"; do
    rm -rf "$DB"
    "$BIN" --engines "$e" --num "$NUM" --value_size 4000 \
        --benchmarks fillseq,readwhilewriting --threads 2 --reads "$NUM" \
        --malloc glibc,jemalloc,tcmalloc --db "$DB" \
        --json "$RESULTS/$e.json" "$@" | tee "$RESULTS/$e.md"
done
rm -rf "$DB"
files=()
for e in "${list[@]}"; do files+=("$RESULTS/$e.json"); done
"$BIN" report --out "$RESULTS" "${files[@]}"
echo "results in $RESULTS" >&2
