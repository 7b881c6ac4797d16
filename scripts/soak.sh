#!/bin/sh
# The soak test at full length: the daemon under a writer appending agent sessions in every
# format, event-driven approvals, tool runs through the CLI and MCP, and kill -9 at random
# moments; then the checks and the figures (actions/s, memory, open files).
#
#   scripts/soak.sh [SECONDS] [ACTIONS_PER_SECOND]     (default: 3600 s at 150 actions/s)
#
# `.ci/run` runs the same test in its shortened form (30 s) through `cargo test`.
set -eu
cd "$(dirname "$0")/.."
TOOLSMITH_SOAK_SECS="${1:-3600}" TOOLSMITH_SOAK_RATE="${2:-150}" \
    exec cargo test --release --test it -- soak:: --nocapture
