#!/usr/bin/env bash
# Camel Tuning Lab: the one command. A thin entry: prepare the lab's Python tools, then hand over to
# lab/ (./start.sh --help lists the commands).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# The lab calls system tools (ip, losetup, libvirtd…) that live in sbin.
export PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"
if [ "$(id -u)" != 0 ] && [[ " $* " != *" --help "* && " $* " != *" -h "* ]]; then
  echo "start.sh: the lab needs root (network namespace, loop devices, libvirt); run it with sudo" >&2
  exit 1
fi
. "$here/lab/sh/venv.sh"
lab_venv "$here" >&2 || { echo "start.sh: could not prepare .venv (see pip's message above)" >&2; exit 1; }
cd "$here"
exec "$here/.venv/bin/python" -m lab "$@"
