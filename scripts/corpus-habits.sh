#!/usr/bin/env bash
# Issue 30's measurement: all of ../shared/corpus ingested, mined, and `generate` run until a pass
# proposes nothing; prints every habit chosen for a tool (candidate), best pattern score first.
#
#   scripts/corpus-habits.sh [TOOLSMITH_BINARY] [STATE_DIR]
#
# The list is what tests/data/habit-labels.toml labels (keep / not).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-$here/target/release/toolsmith}
state=${2:-$(mktemp -d)}
corpus=$here/../shared/corpus
[ -d "$corpus" ] || { echo "no corpus at $corpus" >&2; exit 1; }
export HOME=$state/home XDG_CONFIG_HOME=$state/home/.config
mkdir -p "$HOME"
"$bin" --state "$state" ingest "$corpus" >/dev/null
"$bin" --state "$state" mine >/dev/null
for pass in $(seq 1 30); do
  made=$("$bin" --state "$state" --json generate | python3 -c 'import json,sys; print(len(json.load(sys.stdin).get("candidates",[])))')
  [ "$made" -gt 0 ] || break
done
"$bin" --state "$state" --json candidates > "$state/candidates.json"
"$bin" --state "$state" --json patterns --limit 100000 > "$state/patterns.json"
python3 - "$state" <<'PY'
import json, sys
state = sys.argv[1]
cands = json.load(open(f"{state}/candidates.json"))
pats = {p["id"]: p for p in json.load(open(f"{state}/patterns.json"))}
rows = []
for c in cands if isinstance(cands, list) else cands.get("candidates", []):
    pid = c.get("pattern") or c.get("pattern_id")
    p = pats.get(pid)
    if not p:
        continue
    rows.append((p["score"], pid, c.get("tool"), c.get("state"), " → ".join(p.get("templates", []))))
rows.sort(key=lambda r: -r[0])
for i, (score, pid, tool, st, steps) in enumerate(rows, 1):
    print(f"{i:3} {score:5.1f} {pid} {st:<10} {steps[:160]}")
print(f"chosen: {len(rows)}")
PY
