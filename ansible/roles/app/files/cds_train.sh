#!/bin/bash
# A training start for class data sharing (knob jvm_cds): starts the app with "$@" (its JVM options, class
# path and arguments), waits until HEALTH_URL says UP, stops it with SIGTERM, and the JVM writes ARCHIVE
# as it exits (written beside it first: a half-made archive never takes the real one's place). The JVM's
# own output goes to ARCHIVE.log; its last lines are shown when the training fails.
#
#   cds_train.sh ARCHIVE HEALTH_URL TIMEOUT_S JAVA_ARGS...    exit 1 with the reason when no archive came
set -uo pipefail
archive=$1 url=$2 timeout_s=$3
shift 3
fail() { echo "cds_train.sh: $*"; tail -n 20 "$archive.log" 2>/dev/null; exit 1; }
# an app that already answers would end the training at once, with an archive of almost nothing
if curl -fsS -m 5 "$url" > /dev/null 2>&1; then
  echo "cds_train.sh: something already answers $url: stop the app first"; exit 1
fi
rm -f "$archive.new"
java -XX:ArchiveClassesAtExit="$archive.new" "$@" > "$archive.log" 2>&1 &
pid=$!
deadline=$(( $(date +%s) + timeout_s ))
until curl -fsS -m 5 "$url" 2>/dev/null | grep -q '"UP"'; do
  kill -0 $pid 2>/dev/null || fail "the training start died before it was healthy"
  if [ "$(date +%s)" -ge "$deadline" ]; then
    kill -KILL $pid; fail "the training start was not healthy after $timeout_s s"
  fi
  sleep 3
done
kill -TERM $pid
wait $pid
[ -s "$archive.new" ] || fail "the training start wrote no archive"
mv "$archive.new" "$archive"
echo "cds_train.sh: $archive made in $SECONDS s"
