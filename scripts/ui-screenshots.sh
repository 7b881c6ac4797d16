#!/usr/bin/env bash
# Regenerates the screenshots of `toolsmith ui` in docs/: the review queue, a candidate and the
# "Keep rate and use" page, taken by headless Chromium (`--screenshot`) from a real `toolsmith
# ui` serving a registry made by `toolsmith demo` (its mined proposals, one approved), plus two
# requested tools (one rejected with a reason, one left waiting), runs of the approved tool
# from Claude Code's and Codex's shells, and a Claude Code session that typed the habit by hand
# after the approval (a missed use).
#
# Usage: scripts/ui-screenshots.sh [--bin DIR]
#   --bin DIR   take toolsmith from DIR instead of building this checkout's (debug) binary
#
# Needs chromium (Debian's `chromium`). Writes docs/ui-review-queue.png, docs/ui-candidate.png
# and docs/ui-stats.png.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=
while [ $# -gt 0 ]; do
  case $1 in
    --bin) bin=$2; shift 2 ;;
    -h | --help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done
if [ -z "$bin" ]; then
  cargo build --quiet --bin toolsmith --bin toolsmith-sandbox-helper
  bin=target/debug
fi
toolsmith=$(realpath "$bin/toolsmith")
chromium=$(command -v chromium || command -v chromium-browser || true)
[ -n "$chromium" ] || { echo "chromium is not installed (apt install chromium)" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/toolsmith-shots.XXXXXX")
ui_pid=
cleanup() {
  if [ -n "$ui_pid" ]; then kill "$ui_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

# A home of its own: nothing of the user's is read or changed.
export HOME=$work/home XDG_CONFIG_HOME=$work/home/.config XDG_STATE_HOME=$work/home/.state
mkdir -p "$HOME"
unset TOOLSMITH_SOCKET STATE_DIRECTORY CLAUDECODE GEMINI_CLI TOOLSMITH_AGENT
"$toolsmith" demo --dir "$work/demo" >/dev/null
export TOOLSMITH_CONFIG=$work/demo/config.toml
project=$work/demo/project

# Two requests: one rejected with its reason, one left waiting.
"$toolsmith" new "Show the disk use of a folder" --example "du -sh src" --example "du -sh tests" >/dev/null
"$toolsmith" new "Count the lines of a file" --example "wc -l Makefile" --example "wc -l README.md" >/dev/null
lines=$("$toolsmith" --json candidates | python3 -c '
import json, sys
print(next(c["id"] for c in json.load(sys.stdin) if c["request"] == "Count the lines of a file"))')
"$toolsmith" reject "$lines" --reason "wc is one call already: not worth a tool" >/dev/null

# The approved tool run from agents' shells.
for agent in "CLAUDECODE=1" "CLAUDECODE=1" "CLAUDECODE=1" "TOOLSMITH_AGENT=codex"; do
  env "$agent" "$toolsmith" run make-build-test --param dir=core --workspace "$project" >/dev/null
done

# After the approval, Claude Code typed the habit by hand once more: a missed use.
session_log=$work/demo/logs/claude-code/-work-project/after-approval.jsonl
python3 - "$session_log" <<'PY'
import datetime, json, os, sys
path = sys.argv[1]
os.makedirs(os.path.dirname(path), exist_ok=True)
base = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=5)
session = "00000000-0000-4000-8000-0000000000aa"
lines = []
for i, (s, command, ms) in enumerate([(0, "make build -C cli", 1400), (12, "make test -C cli", 5200)]):
    at = lambda d: (base + datetime.timedelta(seconds=s + d)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    tid, uuid = f"toolu_01after{i:04}", f"a{i:07}-0000-4000-8000-0000000000aa"
    lines.append({"parentUuid": None, "isSidechain": False, "userType": "external",
        "cwd": "/work/project", "sessionId": session, "version": "2.1.97", "type": "assistant",
        "message": {"id": f"msg_{i}", "type": "message", "role": "assistant",
            "model": "claude-sonnet-4-5", "content": [{"type": "tool_use", "id": tid,
            "name": "Bash", "input": {"command": command}}]}, "uuid": uuid, "timestamp": at(0)})
    lines.append({"parentUuid": uuid, "isSidechain": False, "userType": "external",
        "cwd": "/work/project", "sessionId": session, "version": "2.1.97", "type": "user",
        "message": {"role": "user", "content": [{"tool_use_id": tid, "type": "tool_result",
            "content": "ok", "is_error": False}]},
        "toolUseResult": {"stdout": "ok", "stderr": "", "interrupted": False, "durationMs": ms},
        "uuid": f"u{i:07}-0000-4000-8000-0000000000aa", "timestamp": at(1)})
with open(path, "w") as f:
    f.write("".join(json.dumps(l) + "\n" for l in lines))
PY
"$toolsmith" ingest "$session_log" >/dev/null

# The mined error→fix proposal is the candidate shown.
candidate=$("$toolsmith" --json candidates | python3 -c '
import json, sys
print(next(c["id"] for c in json.load(sys.stdin)
           if c["state"] == "awaiting-review" and c["origin"] != "request"))')

# Its first line is the URL with the token.
coproc UI { exec "$toolsmith" ui --port 0 2>/dev/null; }
# shellcheck disable=SC2153 # set by coproc
ui_pid=$UI_PID
read -r url <&"${UI[0]}"
base=${url%%/?token=*}
token=${url##*token=}

shot() { # FILE HEIGHT PATH
  "$chromium" --headless --no-sandbox --disable-gpu --hide-scrollbars \
    --user-data-dir="$work/chromium" --window-size="1280,$2" --screenshot="$1" \
    "$base$3?token=$token" 2>/dev/null
  echo "wrote $1"
}
shot docs/ui-review-queue.png 900 /
shot docs/ui-candidate.png 2600 "/candidate/$candidate"
shot docs/ui-stats.png 1250 /stats
