#!/usr/bin/env bash
# LITMUS developer entry point: sets up .venv on first use (or when pyproject.toml changes),
# then runs one task.
#   ./dev.sh demo    sample data → ingest → label → metrics → leaderboard (embedded DuckDB)
#   ./dev.sh test    lint + the whole test suite
#   ./dev.sh ui      the Dagster UI on 127.0.0.1:3000 over the demo's state (.litmus/)
#   ./dev.sh bench   the labeler benchmark (1,000,000 trajectories)
set -euo pipefail
cd "$(dirname "$0")"

PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ] || [ pyproject.toml -nt .venv/.litmus-installed ]; then
    echo "setting up .venv (first run takes a few minutes)…" >&2
    "$PYTHON" -m venv .venv
    .venv/bin/python -m pip install --quiet --upgrade pip
    .venv/bin/python -m pip install --quiet --progress-bar off -e '.[dev]'
    touch .venv/.litmus-installed
fi

task=${1:-help}
shift || true
export LITMUS_HOME=${LITMUS_HOME:-$PWD/.litmus}
# the venv's tools (dbt, dagster) are found without activating it
export PATH="$PWD/.venv/bin:$PATH"
case "$task" in
    demo)  exec .venv/bin/litmus demo "$@" ;;
    # Two workers (the machine has two cores); a module's tests stay on one worker, so its
    # module fixtures (a whole pipeline run each) are built once; modules are handed out in
    # collection order, longest first by measured time (tests/module_durations.py;
    # `./dev.sh test --store-durations` measures them anew). LITMUS_TEST_WORKERS=0: serial.
    # The lake and team-deployment tests need a real PostgreSQL server
    # (tests/postgres_server.py), the Celery workers' test a Redis server
    # (tests/redis_server.py): installed here when missing and running as root (CI's fresh
    # machine); elsewhere those tests skip without them.
    test)  servers=()
           ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || servers+=(postgresql-15)
           command -v redis-server >/dev/null || servers+=(redis-server)
           if [ "$(id -u)" = 0 ] && [ ${#servers[@]} -gt 0 ]; then
               echo "installing ${servers[*]} for the tests that need them…" >&2
               apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
                   apt-get install -y -qq --no-install-recommends "${servers[@]}" >/dev/null
           fi
           .venv/bin/ruff check . && exec .venv/bin/pytest -q \
               -n "${LITMUS_TEST_WORKERS:-2}" --dist loadfile --no-loadscope-reorder "$@" ;;
    # The Dagster dev server stops on SIGINT and maps SIGTERM to the same handling; a job a
    # shell starts in the background inherits SIGINT ignored, which would make it ignore
    # SIGTERM too. So SIGINT is restored to its default before it starts (exec keeps the pid).
    ui)    mkdir -p "$LITMUS_HOME/dagster"
           DAGSTER_HOME="$LITMUS_HOME/dagster" exec .venv/bin/python -c \
               'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])' \
               .venv/bin/dagster dev -w workspace.yaml -h 127.0.0.1 -p "${PORT:-3000}" ;;
    bench) exec .venv/bin/python benchmarks/bench_labeler.py "$@" ;;
    *)     sed -n '2,8p' "$0"; exit 2 ;;
esac
