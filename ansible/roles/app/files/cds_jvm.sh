#!/bin/bash
# The machines' own JVM build on the controller (knob jvm_cds, tasks/cds.yml): a JVM skips an archive another
# build made, and the box's apt may have a newer security update of the JDK than the controller's. The package
# the machine names comes from the same Debian mirror and is unpacked, not installed, into DIR (once); a JDK
# may run from another folder than the one it was packaged for, and its archives still serve it there.
#
#   cds_jvm.sh PACKAGE:ARCH=VERSION DIR     prints the java home; exit 1 with apt's reason otherwise
set -euo pipefail
package=$1 dir=$2
home=$( (find "$dir" -path '*/bin/java' -type f 2>/dev/null || true) | head -n 1)
if [ -z "$home" ]; then
  rm -rf "$dir.new"
  mkdir -p "$dir.new"
  # the controller's package lists may be older than the box's: once more after an update
  (cd "$dir.new" && { apt-get download -q "$package" || { apt-get update -qq && apt-get download -q "$package"; }; }) >&2 \
    || { echo "cds_jvm.sh: apt cannot download $package on this controller" >&2; exit 1; }
  dpkg -x "$dir.new"/*.deb "$dir.new/root"
  rm -f "$dir.new"/*.deb
  rm -rf "$dir"
  mv "$dir.new" "$dir"
  home=$(find "$dir" -path '*/bin/java' -type f | head -n 1)
fi
[ -n "$home" ] || { echo "cds_jvm.sh: $package has no bin/java" >&2; exit 1; }
dirname "$(dirname "$home")"
