#!/usr/bin/env bash
# PCP's tools (pmcd, pmlogger, pmrep) on this machine, from the distro: what a load generator runs, and what the
# generator tests need here. Debian's pcp postinst calls `systemctl start pmcd` whenever systemctl exists, which
# fails where systemd is not PID 1 (a container, this CI): there dpkg runs with a no-op systemctl first in its
# PATH, and nothing is started (the caller starts pmcd when it needs it).
set -euo pipefail
packages=(pcp python3-pcp)
if dpkg-query -W -f='${Status}\n' "${packages[@]}" 2>/dev/null | grep -qv "install ok installed" \
   || ! dpkg-query -W "${packages[@]}" >/dev/null 2>&1; then
  stub=""
  if [ "$(ps -o comm= -p 1 2>/dev/null)" != "systemd" ]; then
    stub=$(mktemp -d); trap 'rm -rf "$stub"' EXIT
    printf '#!/bin/sh\nexit 0\n' > "$stub/systemctl"; chmod +x "$stub/systemctl"
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -q --no-install-recommends -o "DPkg::Path=${stub:+$stub:}/usr/sbin:/usr/bin:/sbin:/bin" \
    "${packages[@]}" >/dev/null
fi
