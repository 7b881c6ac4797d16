#!/usr/bin/env bash
# Measures an idle toolsmithd: resident memory and CPU time used after N seconds (default 60).
# Usage: scripts/measure-idle.sh [SECONDS]   (builds the release binary first)
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
cargo build --release --quiet --bin toolsmithd
tmp=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$tmp"' EXIT
HOME=$tmp XDG_CONFIG_HOME=$tmp/config XDG_DATA_HOME=$tmp/data XDG_RUNTIME_DIR=$tmp/run \
  target/release/toolsmithd --state "$tmp/state" 2>"$tmp/log" &
pid=$!
sleep "$secs"
ticks=$(getconf CLK_TCK)
read -r utime stime < <(awk '{print $14, $15}' "/proc/$pid/stat")
rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status")
hwm=$(awk '/^VmHWM:/ {print $2}' "/proc/$pid/status")
threads=$(awk '/^Threads:/ {print $2}' "/proc/$pid/status")
cpu=$(awk -v u="$utime" -v s="$stime" -v t="$ticks" 'BEGIN {printf "%.3fs", (u + s) / t}')
# schedstat: nanoseconds on CPU over all threads' lifetimes so far (finer than clock ticks).
oncpu=0
for t in /proc/$pid/task/*/schedstat; do oncpu=$((oncpu + $(awk '{print $1}' "$t"))); done
cpu="$cpu (schedstat: $(awk -v n="$oncpu" 'BEGIN {printf "%.4f", n / 1e9}')s)"
echo "idle toolsmithd after ${secs}s: RSS $((rss / 1024)).$(((rss % 1024) * 10 / 1024)) MiB (peak $((hwm / 1024)) MiB), CPU ${cpu} (user+system, incl. start-up), ${threads} threads"
