#!/usr/bin/env bash
# Regenerates tests/golden/prefixspan/: deterministic input sequences (<name>.in) and Python
# prefixspan's frequent() output for each (<name>.out), which tests/it/prefixspan_golden.rs compares
# the unconstrained sequence miner with. CI only reads the committed files.
#
# Usage: pip install prefixspan==0.5.2; scripts/regen-prefixspan-goldens.sh
# The real-data input is rebuilt from the Loghub OpenSSH sample in $TOOLSMITH_CORPUS/loghub
# (default ../shared/corpus/loghub next to the crate) when present; otherwise the committed
# openssh_sessions.in is kept and only its output is regenerated.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=tests/golden/prefixspan
corpus=${TOOLSMITH_CORPUS:-../shared/corpus}/loghub
peer=benches/peers/prefixspan_peer.py
python3 -c 'import prefixspan' 2>/dev/null || { echo "needs: pip install prefixspan" >&2; exit 1; }
mkdir -p "$dir"

python3 - "$dir" "$corpus" <<'PY'
import csv, random, re, sys
from pathlib import Path

out, corpus = Path(sys.argv[1]), Path(sys.argv[2])

def write(name, seqs):
    (out / f"{name}.in").write_text("".join(" ".join(map(str, s)) + "\n" for s in seqs))

def uniform(seed, n, lengths, alphabet):
    rng = random.Random(seed)
    return [[rng.randrange(alphabet) for _ in range(rng.randint(*lengths))] for _ in range(n)]

def plant(rng, seq, pattern):
    """Writes pattern's items over random increasing positions of seq (interleaved)."""
    if len(seq) < len(pattern):
        return
    for pos, item in zip(sorted(rng.sample(range(len(seq)), len(pattern))), pattern):
        seq[pos] = item

# Small uniform databases: many short patterns.
write("uniform_small", uniform(1, 200, (5, 15), 20))
write("uniform_wide", uniform(2, 400, (10, 30), 50))

# Planted patterns, interleaved with noise: long frequent patterns and all their subsequences.
rng = random.Random(3)
seqs = uniform(3, 300, (8, 25), 30)
planted = [[31, 32, 33, 34], [35, 36, 37, 38, 39], [3, 40, 7, 41, 3]]
for seq in seqs:
    for pattern in planted:
        if rng.random() < 0.3:
            plant(rng, seq, pattern)
write("planted", seqs)

# Agent-like sessions: a Markov chain over action types (read, search, edit, build, test, ...)
# with Zipf-distributed jumps, so sessions repeat loops like edit→build→test.
rng = random.Random(4)
types = 40
zipf = [1 / (k + 1) for k in range(types)]
loops = {0: [1, 2], 1: [2, 0], 2: [3, 0], 3: [4, 2], 4: [2, 5], 5: [0, 6]}
sessions = []
for _ in range(300):
    state, session = 0, []
    for _ in range(rng.randint(5, 40)):
        session.append(state)
        if state in loops and rng.random() < 0.7:
            state = rng.choice(loops[state])
        else:
            state = rng.choices(range(types), weights=zipf)[0]
    sessions.append(session)
write("agent_markov", sessions)

# Edge cases: empty sequences, runs of one symbol, single items, large symbol values.
write("edge_cases", [[], [7], [7, 7, 7, 7, 7, 7, 7, 7], [7, 7, 7, 7], [], [4000000000, 7, 4000000000],
                     [4000000000, 4000000000], [1, 2, 1, 2, 1, 2], [2, 1, 2, 1], [7]])

# Real sessions: Loghub's OpenSSH sample, one sequence per sshd process (Pid), of the event ids
# (E1..E27 → 1..27) of its lines in order.
src = corpus / "OpenSSH" / "OpenSSH_2k.log_structured.csv"
if src.is_file():
    by_pid = {}
    with src.open(newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            by_pid.setdefault(row["Pid"], []).append(int(re.sub(r"\D", "", row["EventId"])))
    write("openssh_sessions", list(by_pid.values()))
elif not (out / "openssh_sessions.in").is_file():
    sys.exit(f"{src} not found and no committed openssh_sessions.in")
PY

# name minsup: chosen so each output is at most a few thousand patterns.
while read -r name minsup; do
  python3 "$peer" --minsup "$minsup" --out "$dir/$name.out" "$dir/$name.in"
  echo "$name: $(grep -vc '^#' "$dir/$name.out") patterns at minsup $minsup"
done <<'LIST'
uniform_small 6
uniform_wide 12
planted 25
agent_markov 110
edge_cases 2
openssh_sessions 6
LIST
