#!/usr/bin/env bash
# Installs the peers the benchmarks compare against (the tests do not need them: they read
# committed golden files):
# - Python drain3 (benches/loghub_accuracy.rs) and prefixspan (benches/prefixspan.rs,
#   scripts/regen-prefixspan-goldens.sh), from PyPI;
# - bubblewrap (benches/sandbox_startup.rs) and hyperfine, from Debian.
set -euo pipefail
python3 -m pip install --quiet drain3 prefixspan
if ! command -v bwrap >/dev/null || ! command -v hyperfine >/dev/null; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends bubblewrap hyperfine
fi
