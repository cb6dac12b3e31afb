#!/bin/bash
# Knob jvm_cds made on the controller with the machines' JVM build (tasks/cds.yml, cds_jvm.sh): the jar unpacked
# into DIR as on the machines (unpack_jar.py: the same files, sizes and times, a class path relative to DIR),
# then a training start of it here (cds_train.sh): seconds natively instead of minutes under emulation, and
# none of a 512 MB machine's memory, which the dump alone exceeds. Again only for another key (cds_key.sh).
#
#   cds_make.sh JAR KIT DIR JAVA_HOME HEALTH_PATH APP_ARGS...    KIT: the tuning kit, last on the class path as on
#   the machines; JAVA_HOME: the machines' JVM build (cds_jvm.sh),
#   "-" for the controller's java; APP_ARGS' "{port}" becomes a free port of 127.0.0.1;
#   prints the key of DIR/app.jsa; exit 1 with the reason when no archive came
set -euo pipefail
here=$(dirname "$(readlink -f "$0")")
jar=$(readlink -f "$1") kit=$(readlink -f "$2") dir=$3 java_home=$4 health=$5
shift 5
[ "$java_home" = - ] || export PATH="$java_home/bin:$PATH"
mkdir -p "$dir"
cd "$dir"
python3 "$here/unpack_jar.py" "$jar" unpacked "$kit" > /dev/null
key=$("$here/cds_key.sh" unpacked)
if [ "$(cat app.jsa.key 2>/dev/null)" != "$key" ]; then
  rm -f app.jsa.key
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  "$here/cds_train.sh" "$PWD/app.jsa" "http://127.0.0.1:$port$health" 300 unpacked/launch.args \
    @unpacked/launch.args "${@//\{port\}/$port}" >&2
  echo "$key" > app.jsa.key
fi
echo "$key"
