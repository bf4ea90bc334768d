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
# galaxy-importer's own venv, keyed like the main one by its pins.
IMPORTER_VENV=$LAB_HOME/importer-venv-$(sha256sum "$ROOT/requirements-importer.txt" | cut -c1-12)
# Collections path in which this checkout is installed as overcommit.control.
COLLECTIONS_DIR=$ROOT/collections
# The tests' own ANSIBLE_HOME (Ansible's tmp and galaxy cache, molecule's and
# ansible-lint's working dirs), one per checkout: nothing is written to
# ~/.ansible, where a copy of the collection would shadow a checkout.
ANSIBLE_HOME_DIR=$LAB_HOME/ansible-home/$(echo "$ROOT" | sha256sum | cut -c1-8)
# ansible-test keeps its sanity venvs and pip bootstrap under ~/.ansible/test
# whatever ANSIBLE_HOME says, so it runs with this HOME instead (shared by the
# checkouts of this machine, like the venv).
ANSIBLE_TEST_HOME=$LAB_HOME/ansible-test-home

log() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }
die() { printf 'ERROR: %s\n' "$*" >&2; exit 1; }
