#!/usr/bin/env bash
# Starts a 3-node sarsen-kv cluster on 127.0.0.1:21001-21003 (data in
# ${KV_DIR:-/tmp/sarsen-kv}/n1..n3), makes node 1 the leader of a one-node
# cluster, adds nodes 2 and 3 as learners and then as voters. The nodes keep
# running in the background; `scripts/cluster.sh stop` ends them (by the
# pids recorded in the data directory).
set -euo pipefail
cd "$(dirname "$0")/../../.."
DIR=${KV_DIR:-/tmp/sarsen-kv}
BASE=${KV_PORT:-21000}

if [ "${1:-}" = stop ]; then
    for n in 1 2 3; do
        [ -f "$DIR/n$n.pid" ] && kill "$(cat "$DIR/n$n.pid")" 2>/dev/null || true
        rm -f "$DIR/n$n.pid"
    done
    exit 0
fi

cargo build --release -p sarsen-raft --bin sarsen-kv
BIN=${CARGO_TARGET_DIR:-target}/release/sarsen-kv
mkdir -p "$DIR"
for n in 1 2 3; do
    "$BIN" --id $n --addr 127.0.0.1:$((BASE + n)) --dir "$DIR/n$n" >"$DIR/n$n.log" 2>&1 &
    echo $! >"$DIR/n$n.pid"
done
for n in 1 2 3; do
    for _ in $(seq 50); do
        curl -sf "127.0.0.1:$((BASE + n))/admin/metrics" >/dev/null && break
        sleep 0.1
    done
done

L=127.0.0.1:$((BASE + 1))
curl -sf -X POST "$L/admin/init" >/dev/null || echo "(already initialized)"
for n in 2 3; do
    curl -sf -X POST "$L/admin/add-learner" -H 'content-type: application/json' \
        -d "{\"id\": $n, \"addr\": \"127.0.0.1:$((BASE + n))\"}" >/dev/null
done
curl -sf -X POST "$L/admin/change-membership" -H 'content-type: application/json' -d '{"members": [1, 2, 3]}' >/dev/null
echo "3 nodes up: 127.0.0.1:$((BASE + 1))-$((BASE + 3)); logs and pids in $DIR"
echo "try: curl -X PUT --data-binary world $L/kv/hello; curl $L/kv/hello"
