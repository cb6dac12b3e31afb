#!/bin/bash
# What a class-data-sharing archive of the jar unpacked in UNPACKED (knob jvm_cds) is made of: the unpacking
# (its stamp: the jar and the unpacker) and this machine's JVM build, which skips an archive of another build.
# The same on the controller and on a machine whose JVM is the controller's build (tasks/cds.yml).
#
#   cds_key.sh UNPACKED     prints the key (three lines)
set -euo pipefail
echo static-archive
cat "$1/source.sha256"
sha256sum "$(dirname "$(readlink -f "$(command -v java)")")/../lib/server/libjvm.so" | cut -d' ' -f1
