#!/usr/bin/env bash
# Symas' on-disk (Optane) report (2018), scaled (BENCHMARKS.md): a database several
# times larger than the memory the run may use. NUM records (2.5M) of 16-byte keys
# and 4000-byte values, about 10 GB, loaded with fillrandom, then readwhilewriting
# with 1 and 2 readers for DURATION seconds, all inside a memory cgroup of MEM
# bytes (2 GiB; page cache included), so that reads and writes go to the device.
# Needs root for the cgroup (v1 memory controller or v2). One engine at a time.
# Results in results/ondisk.
source "$(dirname "$0")/lib.sh"

NUM="${NUM:-2500000}"
DURATION="${DURATION:-60}"
MEM="${MEM:-2147483648}"
ENGINES="${ENGINES:-sarsen,lmdb,libmdbx,redb,rocksdb}"
RESULTS="${RESULTS:-$ROOT/results/ondisk}"
DB="${DB:-$ROOT/target/sarsen-repro-ondisk}"

build "$ENGINES"
mkdir -p "$RESULTS"

# Puts this shell (and so every child it starts) into a cgroup limited to $MEM.
enter_cgroup() {
    local v1=/sys/fs/cgroup/memory v2=/sys/fs/cgroup
    if [ -d "$v1" ] && [ -w "$v1" ]; then
        mkdir -p "$v1/sarsen-ondisk"
        echo "$MEM" >"$v1/sarsen-ondisk/memory.limit_in_bytes"
        echo $$ >"$v1/sarsen-ondisk/cgroup.procs"
    elif [ -f "$v2/cgroup.controllers" ] && [ -w "$v2" ]; then
        mkdir -p "$v2/sarsen-ondisk"
        echo "$MEM" >"$v2/sarsen-ondisk/memory.max"
        echo $$ >"$v2/sarsen-ondisk/cgroup.procs"
    else
        echo "repro-ondisk: cannot create a memory cgroup (not root?); refusing to run" \
            "an on-disk test whose database would fit in the page cache" >&2
        exit 1
    fi
}

enter_cgroup
IFS=',' read -ra list <<<"$ENGINES"
for e in "${list[@]}"; do
    rm -rf "$DB"
    sync
    echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || true
    "$BIN" --engines "$e" --num "$NUM" --value_size 4000 \
        --benchmarks fillrandom,readwhilewriting --threads 1,2 --duration "$DURATION" \
        --cache_size $((MEM / 4)) --db "$DB" \
        --json "$RESULTS/$e.json" "$@" | tee "$RESULTS/$e.md"
done
rm -rf "$DB"
files=()
for e in "${list[@]}"; do files+=("$RESULTS/$e.json"); done
"$BIN" report --out "$RESULTS" "${files[@]}"
echo "results in $RESULTS" >&2
