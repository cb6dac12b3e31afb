#!/bin/bash
# A training start for class data sharing (knob jvm_cds): starts the app with "$@" (its JVM options, class
# path and arguments), waits until HEALTH_URL says UP, stops it with SIGTERM, and the JVM writes ARCHIVE
# as it exits (written beside it first: a half-made archive never takes the real one's place).
#
#   cds_train.sh ARCHIVE HEALTH_URL TIMEOUT_S JAVA_ARGS...    exit 1 with the reason when no archive came
set -uo pipefail
archive=$1 url=$2 timeout_s=$3
shift 3
rm -f "$archive.new"
java -XX:ArchiveClassesAtExit="$archive.new" "$@" > /dev/null 2>&1 &
pid=$!
deadline=$(( $(date +%s) + timeout_s ))
until curl -fsS -m 5 "$url" 2>/dev/null | grep -q '"UP"'; do
  kill -0 $pid 2>/dev/null || { echo "cds_train.sh: the training start died before it was healthy"; exit 1; }
  if [ "$(date +%s)" -ge "$deadline" ]; then
    kill -KILL $pid; echo "cds_train.sh: the training start was not healthy after $timeout_s s"; exit 1
  fi
  sleep 3
done
kill -TERM $pid
wait $pid
[ -s "$archive.new" ] || { echo "cds_train.sh: the training start wrote no archive"; exit 1; }
mv "$archive.new" "$archive"
echo "cds_train.sh: $archive made in $SECONDS s"
