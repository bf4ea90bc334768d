# shellcheck shell=bash disable=SC2034
# Shared paths for the project's scripts. Source it; do not run it.
# Everything the lab installs or starts lives under LAB_HOME, so a fresh clone
# reuses the cached venv and server binaries of an earlier run on this machine.
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
LAB_HOME=${OVERCOMMIT_LAB_HOME:-$HOME/.cache/overcommit-lab}
LAB_BIN=$LAB_HOME/bin
LAB_STATE=$LAB_HOME/state
LAB_LOGS=$LAB_HOME/logs
LAB_ENV=$LAB_HOME/lab.env
# The venv is keyed by the pinned requirements, so a change of pins builds a new one.
VENV=$LAB_HOME/venv-$(sha256sum "$ROOT/requirements.txt" | cut -c1-12)
# Collections path in which this checkout is installed as overcommit.control.
COLLECTIONS_DIR=$ROOT/collections

log() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }
die() { printf 'ERROR: %s\n' "$*" >&2; exit 1; }
