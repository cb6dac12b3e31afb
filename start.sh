#!/usr/bin/env bash
# Camel Tuning Lab: the one command. A thin entry: prepare the lab's Python tools, then hand over to
# lab/ (./start.sh --help lists the commands; each says itself whether it needs root: report, compare and
# status do not).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# The lab calls system tools (ip, losetup, libvirtd…) that live in sbin.
export PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"
. "$here/lab/sh/venv.sh"
if [ "$(id -u)" = 0 ] || [ -w "$here/.venv" ] || { [ ! -e "$here/.venv" ] && [ -w "$here" ]; }; then
  lab_venv "$here" >&2 || { echo "start.sh: could not prepare .venv (see pip's message above)" >&2; exit 1; }
  lab_venv_bytecode "$here" background
elif ! lab_venv "$here" >/dev/null 2>&1; then     # another's .venv (root's): used as it is when it is current
  echo "start.sh: .venv must be built or rebuilt (requirements-dev.txt or mock-service changed since it was made)" \
       "and it is not yours to write: run \`sudo ./start.sh --help\` once (it only prepares .venv), then this" \
       "command again" >&2
  exit 1
fi
cd "$here"
exec "$here/.venv/bin/python" -m lab "$@"
