#!/usr/bin/env bash
# Issue 31's measurement: every folder of ../shared/corpus/formats-2026 and recent/ ingested
# through the real CLI (formats recognised from the files), one store per folder; prints a table
# per format: files read, new actions, results stored with their calls, problems, and the files
# passed by (an agent's companion files, not logs).
#
#   scripts/corpus-formats.sh [TOOLSMITH_BINARY]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-$here/target/release/toolsmith}
corpus=$here/../shared/corpus
[ -d "$corpus" ] || { echo "no corpus at $corpus" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for dir in "$corpus"/formats-2026/*/ "$corpus"/recent/*/; do
  name=$(basename "$(dirname "$dir")")/$(basename "$dir")
  "$bin" --state "$work/$(echo "$name" | tr / _)" --json ingest "$dir" > "$work/$(echo "$name" | tr / _).json"
done
python3 - "$work" <<'PY'
import json, os, sys, collections
rows = collections.OrderedDict()
for name in sorted(os.listdir(sys.argv[1])):
    if not name.endswith(".json"):
        continue
    report = json.load(open(os.path.join(sys.argv[1], name)))
    folder = name[:-5].replace("_", "/", 1)
    for f in report["files"]:
        fmt = f.get("format") or "(passed by)"
        key = (folder, fmt)
        r = rows.setdefault(key, [0, 0, 0, 0])
        r[0] += 1
        r[1] += f.get("actions", 0)
        r[2] += f.get("results", 0)
        r[3] += f.get("problems", 0)
print(f"| {'folder':<22} | {'format':<15} | files | actions | results | problems |")
print(f"|{'-'*24}|{'-'*17}|-------|---------|---------|----------|")
for (folder, fmt), (files, actions, results, problems) in rows.items():
    print(f"| {folder:<22} | {fmt:<15} | {files:>5} | {actions:>7} | {results:>7} | {problems:>8} |")
PY
