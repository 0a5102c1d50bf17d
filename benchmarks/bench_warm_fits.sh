#!/usr/bin/env bash
# Warm fits of two source trees in one session: the level paper's protocol
# (Level and SILP on four bundled sets, 3 half splits, medians of 3 repeats).
#
#   bash benchmarks/bench_warm_fits.sh OLD_TREE NEW_TREE [PYTHON]
#
# Each tree (a checkout, e.g. `git worktree add /tmp/start <commit>`) runs
# through PYTHONPATH with the same interpreter; a one-split run first fills
# that tree's numba cache, so that the timed runs are warm. The tables'
# titles carry the tree they belong to.
set -euo pipefail
PY="${3:-python}"
OLD="$(cd "$1" && pwd)"
NEW="$(cd "$2" && pwd)"
cd "$(mktemp -d)"  # python -m puts the working directory first on sys.path
for t in "$OLD" "$NEW"; do
  tag="$(git -C "$t" rev-parse --short=7 HEAD)"
  PYTHONPATH="$t" "$PY" -m mklopt bench --protocol level2008 --datasets sonar --splits 1 \
    --methods level silp --quiet --out "$(mktemp -d)" >/dev/null
  echo "**Level and SILP under the level paper's protocol, warm [$tag]**"
  PYTHONPATH="$t" "$PY" -m mklopt bench --protocol level2008 \
    --datasets ionosphere sonar breast pima --splits 3 --repeats 3 --methods level silp \
    --quiet --out "$(mktemp -d)" | sed -E "s/^\*\*(.*)\*\*$/**\1 [$tag]**/"
done
