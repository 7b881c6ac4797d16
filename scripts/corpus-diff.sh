#!/usr/bin/env bash
# Issue 32's corpus diff: what a change to ingest (the secret-redaction rules) does to the real
# logs. Every folder of ../shared/corpus that holds agent logs or shell histories (the top-level
# ones and each one under formats-2026/ and recent/, as scripts/corpus-formats.sh finds them) is
# ingested through the real CLI by each binary into a fresh state directory of its own, then the
# stored rows are compared one by one: actions (tool, input, cwd) and their results (output, ok,
# exit code), and results still waiting for their call (`pending_results`).
#
#   scripts/corpus-diff.sh BEFORE_BIN AFTER_BIN
#
# Prints markdown: per folder, rows compared and rows changed; then each changed row with its
# folder, log file:line and field, the change shown as the AFTER text around it (placeholders
# visible) and only the length of what was removed: the corpus is real logs, and a value the
# rules took out must not be printed here. Rows found in one store and not the other are listed.
# Exits 0 when it compared (changes or not) and when the corpus is absent (skipped, saying so;
# under CI=true an absent corpus fails, exit 1); 1 when a binary is missing; 2 on bad usage.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
if [ $# -ne 2 ]; then
  echo "usage: scripts/corpus-diff.sh BEFORE_BIN AFTER_BIN (two toolsmith binaries)" >&2
  exit 2
fi
for bin in "$1" "$2"; do
  [ -x "$bin" ] || { echo "corpus-diff: $bin is not an executable toolsmith binary" >&2; exit 1; }
done
corpus=${TOOLSMITH_CORPUS:-$here/../shared/corpus}
if [ ! -d "$corpus" ]; then
  echo "corpus-diff: no corpus at $corpus (set TOOLSMITH_CORPUS, or check out ../shared/corpus" \
       "next to the project): skipped, nothing compared" >&2
  [ "${CI:-}" = true ] && exit 1
  exit 0
fi
exec python3 - "$1" "$2" "$corpus" <<'PY'
import difflib
import os
import re
import sqlite3
import subprocess
import sys
import tempfile

before_bin, after_bin, corpus = sys.argv[1], sys.argv[2], os.path.realpath(sys.argv[3])
# loghub holds system logs for the template-mining benchmark, not agent logs or histories.
NOT_AGENT_LOGS = {"loghub"}
CONTEXT = 40  # characters of the AFTER text shown on each side of a change (~80 in all)
HUNKS = 6  # changes shown per field; the rest are counted


def log_folders():
    """Folders holding log files directly; a folder of folders (formats-2026/, recent/) is
    replaced by its subfolders."""
    out = []

    def walk(rel):
        path = os.path.join(corpus, rel)
        entries = sorted(os.listdir(path))
        files = [e for e in entries if os.path.isfile(os.path.join(path, e))
                 and not e.startswith(("PROVENANCE", "LICENSE"))]
        dirs = [e for e in entries if os.path.isdir(os.path.join(path, e))]
        if files:
            out.append(rel)
        elif dirs:
            for d in dirs:
                walk(os.path.join(rel, d))

    for top in sorted(os.listdir(corpus)):
        if os.path.isdir(os.path.join(corpus, top)) and top not in NOT_AGENT_LOGS:
            walk(top)
    return out


def clean_env(home):
    env = {k: v for k, v in os.environ.items()
           if k not in ("TOOLSMITH_CONFIG", "TOOLSMITH_SOCKET", "CONFIGURATION_DIRECTORY",
                        "STATE_DIRECTORY", "RUNTIME_DIRECTORY")}
    env.update(HOME=home, XDG_CONFIG_HOME=os.path.join(home, "config"),
               XDG_DATA_HOME=os.path.join(home, "data"),
               XDG_RUNTIME_DIR=os.path.join(home, "run"))
    return env


def ingest(binary, folder, state, home):
    """Ingests the folder into a fresh state directory; returns an error text or None."""
    run = subprocess.run([binary, "--state", state, "--json", "ingest",
                          os.path.join(corpus, folder)],
                         capture_output=True, env=clean_env(home))
    if run.returncode != 0:
        err = run.stderr.decode("utf-8", "replace").strip().splitlines()
        return f"exit {run.returncode}: {err[-1] if err else '(no message)'}"
    return None


def rows(state, folder):
    """Every stored row, keyed by where it was read: (file, session, place in the file)."""
    db = os.path.join(state, "state.db")
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    conn.text_factory = lambda b: b.decode("utf-8", "replace")
    found = {}
    # A store written before migration 10 has no `line` column: its rows are named by call.
    columns = {row[1] for row in conn.execute("PRAGMA table_info(actions)")}
    line_column = "a.line" if "line" in columns else "NULL"
    for path, line, session, seq, call, tool, inp, cwd, output, ok, code in conn.execute(
            f"SELECT f.path, {line_column}, a.session, a.seq, a.call_id, a.tool, a.input, a.cwd, a.output,"
            " a.ok, a.exit_code FROM actions a LEFT JOIN ingest_files f ON f.id = a.file_id"):
        rel = os.path.relpath(path, os.path.join(corpus, folder)) if path else "(file unknown)"
        # The rank of the file's generation sits above bit 44 of seq (action::stored): it
        # depends on the order files were read, the place below it on the bytes only.
        place = seq & ((1 << 44) - 1) if seq < (1 << 63) else seq
        found[("action", rel, session, place)] = {
            "where": f"{rel}:{line}" if line is not None else f"{rel} ({'whole-file record, ' if line_column != 'NULL' else ''}call {call or place})",
            "tool": tool, "input": inp, "cwd": cwd, "output": output, "ok": ok,
            "exit_code": code}
    for session, call, ok, code, output in conn.execute(
            "SELECT session, call_id, ok, exit_code, output FROM pending_results"):
        found[("pending", "", session, call)] = {
            "where": f"result of call {call} (session {session}), its call not stored",
            "output": output, "ok": ok, "exit_code": code}
    conn.close()
    return found


def shown(text):
    """Text on one line, control characters visible as escapes."""
    # Backslashes are left as stored (an input is JSON text, its escapes are its own).
    return text.replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")


def code(text):
    return f"`` {text} ``"


TOKEN = re.compile(r"\w+|\s+|[^\w\s]")


def hunks(before, after):
    """The changes from before to after: (start, end) in after and the removed length."""
    # The shared prefix and suffix first: a long output differs in a small part, and the
    # token matcher below is quadratic at worst.
    p = 0
    while p < min(len(before), len(after)) and before[p] == after[p]:
        p += 1
    s = 0
    while s < min(len(before), len(after)) - p and before[-1 - s] == after[-1 - s]:
        s += 1
    b_mid, a_mid = before[p:len(before) - s], after[p:len(after) - s]
    bt, at = TOKEN.findall(b_mid), TOKEN.findall(a_mid)
    b_off, a_off = [0], [0]
    for t in bt:
        b_off.append(b_off[-1] + len(t))
    for t in at:
        a_off.append(a_off[-1] + len(t))
    out = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, bt, at, autojunk=False).get_opcodes():
        if tag != "equal":
            out.append((p + a_off[j1], p + a_off[j2], b_off[i2] - b_off[i1]))
    # Changes a few characters apart read as one.
    merged = []
    for h in out:
        if merged and h[0] - merged[-1][1] <= 8:
            last = merged[-1]
            merged[-1] = (last[0], h[1], last[2] + h[2])
        else:
            merged.append(h)
    return merged


def describe(field, before, after):
    """Lines describing one changed field, never printing text only the BEFORE side has."""
    if field in ("ok", "exit_code"):
        return [f"{field}: {before!r} → {after!r}"]
    if after is None:
        return [f"{field}: now empty (was {len(before)} chars)"]
    if before is None:
        return [f"{field}: was empty, now {code(shown(after[:2 * CONTEXT]))}"]
    lines = []
    found = hunks(before, after)
    for start, end, removed in found[:HUNKS]:
        left = max(0, start - CONTEXT)
        right = min(len(after), end + CONTEXT)
        text = ("… " if left > 0 else "") + shown(after[left:right]) + (" …" if right < len(after) else "")
        lines.append(f"{field}: {code(text)} (removed {removed} chars, "
                     f"inserted {end - start})")
    if len(found) > HUNKS:
        lines.append(f"{field}: … and {len(found) - HUNKS} more changes")
    return lines


def order(key):
    """Rows by file, then place in it (a pending result's call id in place of it)."""
    kind, rel, session, place = key
    return (kind, rel, place if isinstance(place, int) else -1, str(place), session)


FIELDS = ["tool", "input", "cwd", "output", "ok", "exit_code"]
summary, changes, missing, failures = [], [], [], []
with tempfile.TemporaryDirectory() as work:
    for n, folder in enumerate(log_folders()):
        stores = []
        for side, binary in (("before", before_bin), ("after", after_bin)):
            state = os.path.join(work, f"{n}-{side}")
            home = os.path.join(work, f"{n}-{side}-home")
            os.makedirs(home)
            err = ingest(binary, folder, state, home)
            if err:
                failures.append(f"- {folder}: the {side} binary's ingest failed ({err})")
            stores.append(rows(state, folder) if os.path.exists(os.path.join(state, "state.db")) else {})
        before, after = stores
        compared = changed = 0
        for key in sorted(set(before) | set(after), key=order):
            if key not in after:
                missing.append(f"- **{folder}** `{before[key]['where']}`: only in BEFORE's store")
                continue
            if key not in before:
                missing.append(f"- **{folder}** `{after[key]['where']}`: only in AFTER's store")
                continue
            compared += 1
            b, a = before[key], after[key]
            diff = [f for f in FIELDS if f in b and b[f] != a[f]]
            if diff:
                changed += 1
                lines = []
                for f in diff:
                    lines += describe(f, b[f], a[f])
                changes.append((folder, a["where"], lines))
        summary.append((folder, compared, changed, len(before), len(after)))

print(f"# Corpus diff\n\nbefore: `{before_bin}`  \nafter: `{after_bin}`  \ncorpus: `{corpus}`\n")
print("| folder | rows compared | rows changed | rows before | rows after |")
print("|---|---:|---:|---:|---:|")
for folder, compared, changed, nb, na in summary:
    print(f"| {folder} | {compared} | {changed} | {nb} | {na} |")
total_c = sum(s[1] for s in summary)
total_x = sum(s[2] for s in summary)
print(f"| **all {len(summary)} folders** | **{total_c}** | **{total_x}** | "
      f"{sum(s[3] for s in summary)} | {sum(s[4] for s in summary)} |")
print(f"\n(rows: stored actions with their results, and results waiting for their call; "
      f"skipped: {', '.join(sorted(NOT_AGENT_LOGS))}, not agent logs)")
if failures:
    print("\n## Ingest failures\n")
    print("\n".join(failures))
print(f"\n## Changed rows ({total_x})\n")
if not changes:
    print("none")
for folder, where, lines in changes:
    print(f"- **{folder}** `{where}`")
    for line in lines:
        print(f"  - {line}")
print(f"\n## Rows in one store only ({len(missing)})\n")
print("\n".join(missing) if missing else "none")
PY
