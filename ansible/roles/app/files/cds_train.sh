#!/bin/bash
# A training start for class data sharing (knob jvm_cds), in two JVMs so that a 512 MB machine holds each in
# turn: the app, started with "$@" (its JVM options, class path and arguments) until HEALTH_URL says UP, lists
# the classes it loaded and is stopped with SIGTERM; then a JVM of its own loads just those classes from the
# class path in CLASS_PATH_ARGS (a java argument file: -cp, and the main class, which a dump ignores) and
# dumps them into ARCHIVE, a static archive (written beside it first: a half-made archive never takes the
# real one's place). Dumping at the app's exit instead (-XX:ArchiveClassesAtExit) needs the app's memory and
# the dump's at once: on a guest it reclaimed pages for 15 minutes until the kernel killed it.
# The JVMs' own output goes to ARCHIVE.log; its last lines are shown when the training fails.
#
#   cds_train.sh ARCHIVE HEALTH_URL TIMEOUT_S CLASS_PATH_ARGS JAVA_ARGS...   exit 1 with the reason when no archive came
set -uo pipefail
archive=$1 url=$2 timeout_s=$3 class_path_args=$4
shift 4
fail() { rm -f "$archive.new"; echo "cds_train.sh: $*"; tail -n 20 "$archive.log" 2>/dev/null; exit 1; }
# an app that already answers would end the training at once, with a list of almost nothing
if curl -fsS -m 5 "$url" > /dev/null 2>&1; then
  echo "cds_train.sh: something already answers $url: stop the app first"; exit 1
fi
rm -f "$archive.new" "$archive.classlist"
java -XX:DumpLoadedClassList="$archive.classlist" "$@" > "$archive.log" 2>&1 &
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
listed=$SECONDS
[ -s "$archive.classlist" ] || fail "the training start listed no classes"
java -Xshare:dump -XX:SharedClassListFile="$archive.classlist" -XX:SharedArchiveFile="$archive.new" \
  @"$class_path_args" > "$archive.dump.log" 2>&1
dumped=$?
cat "$archive.dump.log" >> "$archive.log"
[ $dumped -eq 0 ] || fail "the dump of the listed classes failed"
# A class the dump cannot find is left out with a warning only. Classes generated at run time (JDK proxies
# $ProxyN, CGLIB's …$$…) are never on the class path; any other one missing means the wrong class path.
missing=$(sed -n 's/.*Preload Warning: Cannot find //p' "$archive.dump.log" | grep -Evc '\$Proxy[0-9]+$|\$\$')
[ "$missing" -eq 0 ] || fail "the dump of the listed classes failed: $missing of them are not on the class path of $class_path_args"
[ -s "$archive.new" ] || fail "the dump wrote no archive"
mv "$archive.new" "$archive"
echo "cds_train.sh: $archive made: $(wc -l < "$archive.classlist") classes listed in $listed s, dumped in $(( SECONDS - listed )) s"
