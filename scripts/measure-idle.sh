#!/usr/bin/env bash
# Measures an idle toolsmithd: the CPU time it uses over a window of idleness, once its initial
# ingest is over, with FILES one-action Claude Code sessions in ~/.claude/projects (read through
# the default sources), and its resident memory.
#
# Usage: scripts/measure-idle.sh [--files N] [--bin DIR] [SECONDS]
#   --files N   sessions to write first, 50 per project directory (default 0: no logs at all)
#   --bin DIR   take toolsmithd and toolsmith from DIR (e.g. an older build to compare with)
#               instead of building the release binaries of this checkout
#   SECONDS     the idle window measured (default 10)
#
# The figures in the README and in issue 17 come from:
#   scripts/measure-idle.sh --files 300 10
#   scripts/measure-idle.sh --files 5000 10
set -euo pipefail
cd "$(dirname "$0")/.."
files=0
bin=
secs=10
while [ $# -gt 0 ]; do
  case $1 in
    --files) files=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    -h | --help) sed -n '2,14p' "$0"; exit 0 ;;
    *) secs=$1; shift ;;
  esac
done
if [ -z "$bin" ]; then
  cargo build --release --quiet --bin toolsmithd --bin toolsmith
  bin=target/release
fi
bin=$(cd "$bin" && pwd)
tmp=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; [ -n "$pid" ] && wait "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT
export HOME=$tmp/home XDG_CONFIG_HOME=$tmp/config XDG_DATA_HOME=$tmp/data \
  XDG_STATE_HOME=$tmp/xdg-state XDG_RUNTIME_DIR=$tmp/run
unset TOOLSMITH_CONFIG TOOLSMITH_SOCKET NOTIFY_SOCKET WATCHDOG_USEC LISTEN_FDS RUST_LOG
mkdir -p "$HOME" "$XDG_RUNTIME_DIR"

# One Bash call and its result per session, as Claude Code writes them.
for ((i = 0; i < files; i++)); do
  dir=$HOME/.claude/projects/-home-dev-project-$((i / 50))
  [ $((i % 50)) -eq 0 ] && mkdir -p "$dir"
  id=$(printf '00000000-0000-4000-8000-%012d' "$i")
  ts=2026-11-10T09:00:00.000Z
  common="\"isSidechain\":false,\"userType\":\"external\",\"cwd\":\"/home/dev/project\",\"sessionId\":\"$id\",\"version\":\"1.0.98\",\"timestamp\":\"$ts\""
  printf '%s\n%s\n' \
    "{\"parentUuid\":null,$common,\"type\":\"assistant\",\"uuid\":\"a-$id\",\"message\":{\"role\":\"assistant\",\"content\":[{\"type\":\"tool_use\",\"id\":\"toolu_$i\",\"name\":\"Bash\",\"input\":{\"command\":\"make test-$((i % 7))\"}}]}}" \
    "{\"parentUuid\":\"a-$id\",$common,\"type\":\"user\",\"uuid\":\"u-$id\",\"message\":{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"toolu_$i\",\"content\":\"ok\",\"is_error\":false}]}}" \
    >"$dir/$id.jsonl"
done

state=$tmp/state
"$bin/toolsmithd" --state "$state" 2>"$tmp/log" &
pid=$!
status() { "$bin/toolsmith" --state "$state" status --json 2>/dev/null; }
field() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1]))' "$1"; }

# The initial ingest is over when every session's action is stored.
started=$(date +%s.%N)
until s=$(status) && [ "$(field 'd["counters"]["ingest"]["actions"]' <<<"$s")" -ge "$files" ]; do
  if ! kill -0 "$pid" 2>/dev/null; then echo "toolsmithd exited:"; cat "$tmp/log"; exit 1; fi
  if (($(date +%s) - ${started%.*} > 600)); then echo "initial ingest not done after 600 s"; exit 1; fi
  sleep 0.2
done
ingest_s=$(awk -v a="$started" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}')
# Let the last round's stragglers (debounced events) pass before the window opens.
sleep 1

ticks=$(getconf CLK_TCK)
cpu_ticks() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
# schedstat: nanoseconds on CPU per thread (finer than clock ticks), as "tid ns" lines. A thread
# that exits (an idle blocking-pool thread does after 10 s) takes its figure with it, so the
# window's figure sums, over the threads alive at its end, what each used since its start.
oncpu() {
  for t in /proc/$pid/task/*; do echo "${t##*/} $(awk '{print $1}' "$t/schedstat" 2>/dev/null || echo 0)"; done
}
s0=$(status)
t0=$(cpu_ticks)
oncpu >"$tmp/oncpu0"
sleep "$secs"
t1=$(cpu_ticks)
oncpu >"$tmp/oncpu1"
s1=$(status)
n0=0
n1=$(awk 'NR == FNR {before[$1] = $2; next} {n += $2 - ($1 in before ? before[$1] : 0)} END {printf "%d", n}' "$tmp/oncpu0" "$tmp/oncpu1")

rounds=$(($(field 'd["counters"]["ingest"]["rounds"]' <<<"$s1") - $(field 'd["counters"]["ingest"]["rounds"]' <<<"$s0")))
opens0=$(field 'd["counters"]["ingest"].get("opens", "?")' <<<"$s0")
opens1=$(field 'd["counters"]["ingest"].get("opens", "?")' <<<"$s1")
opens=$([ "$opens0" = "?" ] && echo "? (not counted by this build)" || echo $((opens1 - opens0)))
rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status")
threads=$(awk '/^Threads:/ {print $2}' "/proc/$pid/status")
cpu=$(awk -v a="$t0" -v b="$t1" -v t="$ticks" 'BEGIN {printf "%.2f", (b - a) / t}')
oncpu=$(awk -v a="$n0" -v b="$n1" 'BEGIN {printf "%.4f", (b - a) / 1e9}')
echo "toolsmithd ($bin/toolsmithd), $files sessions, initial ingest ${ingest_s} s:"
echo "  idle ${secs} s: CPU ${cpu} s user+system (in clock ticks; schedstat of the threads alive at the end: ${oncpu} s), ${rounds} ingest rounds, ${opens} file opens"
echo "  RSS $((rss / 1024)).$(((rss % 1024) * 10 / 1024)) MiB, ${threads} threads"
