#!/usr/bin/env bash
# The test command: install the project and its test extras into .venv, run the static checks
# (ruff, mypy, import-linter), start the local Slurm
# test cluster where this machine allows it (root + apt-get), then run the whole test suite.
#   bash tools/test.sh [pytest args...]
# HPCSCHED_CI=1 (set by .ci/run) turns "cannot start Slurm here" (and missing torch) into failures.
set -euo pipefail
cd "$(dirname "$0")/.."

python=${PYTHON:-python3}
[[ -x .venv/bin/python ]] || "$python" -m venv .venv
# torch==2.13.0 is the CPU build on this kind of machine; the tests need no GPU.
.venv/bin/pip install --quiet --disable-pip-version-check 'torch==2.13.0' -e '.[dev,examples,plot]'

# static checks first (seconds): lint, types, layering (pyproject.toml configures all three)
.venv/bin/ruff check hpcsched tools tests
.venv/bin/mypy
.venv/bin/lint-imports --no-cache

set +e
bash tools/slurm_test_cluster.sh start
slurm_rc=$?
set -e
if [[ $slurm_rc -eq 0 ]]; then
    eval "$(bash tools/slurm_test_cluster.sh env)"
    export HPCSCHED_SLURM_CLUSTER=1
elif [[ $slurm_rc -eq 3 && ${HPCSCHED_CI:-0} != 1 ]]; then
    echo "tools/test.sh: no local Slurm cluster on this machine; the tests marked 'slurm' will be skipped" >&2
else
    echo "tools/test.sh: the local Slurm test cluster failed to start (exit $slurm_rc)" >&2
    exit 1
fi

exec .venv/bin/python -m pytest "$@"
