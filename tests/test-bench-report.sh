#!/bin/bash
# SPDX-License-Identifier: MIT
# The benchmark's arithmetic (speed-ups, share of the ceiling's gain, targets,
# speed of packing) on made-up runs: no workload runs, no root needed.
set -euo pipefail
exec python3 "$(dirname "$0")/bench/test-bench-report.py"
