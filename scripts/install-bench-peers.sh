#!/usr/bin/env bash
# Installs the Python peers the benchmarks compare against (not needed by the tests, which read
# committed golden files): drain3 (benches/loghub_accuracy.rs) and prefixspan
# (benches/prefixspan.rs, scripts/regen-prefixspan-goldens.sh).
set -euo pipefail
python3 -m pip install --quiet drain3 prefixspan
