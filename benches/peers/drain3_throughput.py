#!/usr/bin/env python3
"""Throughput of Python drain3 on the same input as benches/loghub_accuracy.rs.

Feeds the Content column of the 16 Loghub 2k structured CSVs (32,000 lines) to a fresh
drain3 TemplateMiner per dataset, best of several repetitions, and prints lines per second:
the figures the Rust miner's throughput is compared with. Two configurations: drain3's
defaults (depth 4, sim_th 0.4, no masking), and the same with the masking instructions of
drain3's example drain3.ini (IDs, IPs, hex sequences, 0x-hex, numbers), which is closer to the
Rust miner's work since that one always masks.

Usage: pip install drain3; python3 benches/peers/drain3_throughput.py [corpus/loghub dir]
The corpus defaults to $TOOLSMITH_CORPUS/loghub, else ../shared/corpus/loghub next to the crate.
"""

import csv
import os
import sys
import time
from pathlib import Path

from importlib.metadata import version

from drain3 import TemplateMiner
from drain3.masking import MaskingInstruction
from drain3.template_miner_config import TemplateMinerConfig

DATASETS = [
    "HDFS", "Hadoop", "Spark", "Zookeeper", "BGL", "HPC", "Thunderbird", "Windows",
    "Linux", "Android", "HealthApp", "Apache", "Proxifier", "OpenSSH", "OpenStack", "Mac",
]
REPS = 3

# drain3's examples/drain3.ini masking list (its shell-command rule left out: no such lines here).
_B = r"((?<=[^A-Za-z0-9])|^)"
_E = r"((?=[^A-Za-z0-9])|$)"
MASKING = [
    (_B + r"(([0-9a-f]{2,}:){3,}([0-9a-f]{2,}))" + _E, "ID"),
    (_B + r"(\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3})" + _E, "IP"),
    (_B + r"([0-9a-f]{6,} ?){3,}" + _E, "SEQ"),
    (_B + r"([0-9A-F]{4} ?){4,}" + _E, "SEQ"),
    (_B + r"(0x[a-f0-9A-F]+)" + _E, "HEX"),
    (_B + r"([\-\+]?\d+)" + _E, "NUM"),
]


def corpus_dir() -> Path:
    if len(sys.argv) > 1:
        return Path(sys.argv[1])
    env = os.environ.get("TOOLSMITH_CORPUS")
    if env:
        return Path(env) / "loghub"
    return Path(__file__).resolve().parents[2] / ".." / "shared" / "corpus" / "loghub"


def contents(path: Path) -> list[str]:
    with path.open(newline="", encoding="utf-8") as f:
        return [row["Content"] for row in csv.DictReader(f)]


def main() -> int:
    root = corpus_dir()
    if not root.is_dir():
        print(f"corpus not found at {root}: skipped")
        return 1 if os.environ.get("CI") == "true" else 0
    data = [contents(root / d / f"{d}_2k.log_structured.csv") for d in DATASETS]
    total = sum(len(lines) for lines in data)
    masked = TemplateMinerConfig()
    masked.masking_instructions = [MaskingInstruction(p, m) for p, m in MASKING]
    # Explicit configs: without one, drain3 would read a drain3.ini from the working directory.
    for name, config in [("defaults, no masking", TemplateMinerConfig()),
                         ("with example masking", masked)]:
        best = float("inf")
        clusters = 0
        for _ in range(REPS):
            start = time.perf_counter()
            clusters = 0
            for lines in data:
                miner = TemplateMiner(config=config)
                for line in lines:
                    miner.add_log_message(line)
                clusters += len(miner.drain.clusters)
            best = min(best, time.perf_counter() - start)
        print(f"drain3 {version('drain3')} ({name}): {total} lines in {best * 1e3:.0f} ms, "
              f"best of {REPS}: {total / best:.0f} lines/s ({clusters} clusters)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
