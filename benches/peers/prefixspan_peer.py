#!/usr/bin/env python3
"""Python `prefixspan` as the peer of toolsmith's sequence miner (src/mine/sequences.rs).

Reads sequences from INPUT, one per line as space-separated integers (an empty line is an empty
sequence), runs `PrefixSpan(db).frequent(minsup)` and writes its patterns in the canonical form
the golden files and benches/prefixspan.rs use:

    # prefixspan <version> frequent(minsup=<minsup>)
    <support>\t<item> <item> ...

one pattern per line, sorted by the items as integer lists (a prefix before its extensions).

Usage:
    pip install prefixspan
    prefixspan_peer.py --minsup N [--out FILE] INPUT         write the canonical output
    prefixspan_peer.py --minsup N --time REPS [--out FILE] INPUT
        also time frequent() alone (not the start-up or the reading) REPS times and print
        `seconds <s>` per repetition, then `patterns <count>`
"""

import argparse
import sys
import time
from importlib.metadata import version

from prefixspan import PrefixSpan


def read(path):
    with open(path, encoding="ascii") as f:
        return [[int(tok) for tok in line.split()] for line in f.read().splitlines()]


def canonical(minsup, results):
    lines = [f"# prefixspan {version('prefixspan')} frequent(minsup={minsup})"]
    for support, pattern in sorted(results, key=lambda r: r[1]):
        lines.append(f"{support}\t{' '.join(map(str, pattern))}")
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("input")
    parser.add_argument("--minsup", type=int, required=True)
    parser.add_argument("--out", help="write the canonical output here (default: stdout)")
    parser.add_argument("--time", type=int, metavar="REPS", help="timing mode")
    args = parser.parse_args()

    db = read(args.input)
    results = None
    for _ in range(args.time or 1):
        started = time.perf_counter()
        results = PrefixSpan(db).frequent(args.minsup)
        elapsed = time.perf_counter() - started
        if args.time:
            print(f"seconds {elapsed:.6f}", flush=True)
    if args.time:
        print(f"patterns {len(results)}")
    text = canonical(args.minsup, results)
    if args.out:
        with open(args.out, "w", encoding="ascii") as f:
            f.write(text)
    elif not args.time:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
