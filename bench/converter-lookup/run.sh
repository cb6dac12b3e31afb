#!/bin/bash
# bench/converter-lookup/run.sh [VERSION…]: the reproduction on each Camel version (default: the lab's two lines, the
# 4.x LTS lines and the newest 4.x served here), one JVM each, with the Java on PATH (17 runs them all).
set -uo pipefail
cd "$(dirname "$0")"
mkdir -p target
mvn=../../app/mvnw
[ $# -gt 0 ] || set -- 3.22.2 4.0.0 4.4.0 4.8.0 4.14.0 4.18.0 4.18.2 4.22.0
for v in "$@"; do
  # a version whose modules are not all served is named and skipped, not a silent stop
  if ! "$mvn" -q -B -Dcamel.version="$v" -Dmdep.outputFile=target/cp-"$v".txt package dependency:build-classpath \
      > target/build-"$v".log 2>&1; then
    echo "Camel $v: not built ($(grep -m1 -o 'Could not resolve[^:]*\|ERROR.*' target/build-"$v".log))"
    continue
  fi
  java -cp "target/classes:$(cat target/cp-"$v".txt)" lab.bench.ConverterLookup 2>/dev/null
done
