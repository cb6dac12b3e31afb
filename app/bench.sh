#!/usr/bin/env bash
# Benchmark (not a test) of the app's two stacks on this host, against the real mock service:
# for each stack's fat jar: startup time, RSS (idle and peak under load), and req/s + latency of
# GET /api/customers/{id} and GET /api/customers/{id}/summary at 50 connections (wrk).
#
#   app/bench.sh                 both stacks (camel3 camel4)
#   app/bench.sh camel3          one stack
#
# Environment: CONNECTIONS (50), DURATION per measured run in s (20), WARMUP per endpoint in s (10),
# THREADS of wrk (2), JAVA_OPTS ("-Xmx256m"), APP_PORT (18080), MOCK_PORT (19080), MOCK_ARGS (extra
# mock-service flags, e.g. "--latency fixed:5"), BUILD=1 to rebuild the jars first.
# Needs: Java 17, python3 (the mock service runs from ../mock-service with the standard library only), wrk
# (Debian: apt-get install wrk; installed here when missing and running as root), curl.
# Output: a table on stdout, and target/bench-<UTC time>/ with results.md, results.json, wrk outputs, app/audit/GC logs.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
cd "$here"

stacks=("$@")
[ ${#stacks[@]} -eq 0 ] && stacks=(camel3 camel4)
CONNECTIONS=${CONNECTIONS:-50}
DURATION=${DURATION:-20}
WARMUP=${WARMUP:-10}
THREADS=${THREADS:-2}
JAVA_OPTS=${JAVA_OPTS:--Xmx256m}
APP_PORT=${APP_PORT:-18080}
MOCK_PORT=${MOCK_PORT:-19080}
MOCK_ARGS=${MOCK_ARGS:-}

out="$here/target/bench-$(date -u +%Y%m%dT%H%M%SZ)"
mkdir -p "$out"

pids=()
cleanup() {
  for p in "${pids[@]:-}"; do
    [ -n "$p" ] && kill "$p" 2>/dev/null && wait "$p" 2>/dev/null || true
  done
}
trap cleanup EXIT

need() { command -v "$1" >/dev/null 2>&1; }
if ! need wrk; then
  if need apt-get && [ "$(id -u)" = 0 ]; then
    echo "bench: installing wrk" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q wrk >/dev/null
  else
    echo "bench: wrk is missing (Debian: apt-get install wrk)" >&2; exit 2
  fi
fi

for s in "${stacks[@]}"; do
  case "$s" in camel3|camel4) ;; *) echo "bench: unknown stack '$s' (camel3|camel4)" >&2; exit 2 ;; esac
  jar="$here/$s/target/camel-tuning-app-$s.jar"
  if [ "${BUILD:-0}" = 1 ] || [ ! -f "$jar" ]; then
    echo "bench: building $s" >&2
    ./mvnw -B -ntp -q package -DskipTests -pl "$s" >&2
  fi
done

wait_http() { # url timeout-seconds → 0 when it answers 200
  local url=$1 limit=$2 t0=$SECONDS
  while [ $((SECONDS - t0)) -lt "$limit" ]; do
    curl -fsS -o /dev/null "$url" 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}

rss_mb() { awk '/^VmRSS/ {printf "%.0f", $2/1024}' "/proc/$1/status" 2>/dev/null || echo 0; }

# the load's paths: ids 1..1000, one per request, in turn
cat > "$out/get.lua" <<'EOF'
local n = 0
request = function()
  n = n + 1
  return wrk.format("GET", "/api/customers/" .. (n % 1000 + 1))
end
EOF
sed 's#"/api/customers/" .. (n % 1000 + 1)#"/api/customers/" .. (n % 1000 + 1) .. "/summary"#' "$out/get.lua" > "$out/summary.lua"

echo "bench: mock service on 127.0.0.1:$MOCK_PORT" >&2
# shellcheck disable=SC2086
PYTHONPATH="$here/../mock-service" python3 -m mock_service --host 127.0.0.1 --port "$MOCK_PORT" $MOCK_ARGS \
  > "$out/mock.log" 2>&1 &
pids+=($!)
wait_http "http://127.0.0.1:$MOCK_PORT/health" 30 || { echo "bench: mock service did not start (see $out/mock.log)" >&2; exit 1; }

run_wrk() { # name script seconds → wrk output file
  wrk -t"$THREADS" -c"$CONNECTIONS" -d"${3}s" --latency -s "$out/$2.lua" "http://127.0.0.1:$APP_PORT" > "$out/$1" 2>&1
}
rps() { awk '/^Requests\/sec:/ {printf "%.0f", $2}' "$1"; }
p99() { awk '$1 == "99%" {print $2}' "$1"; }
errors() { # non-2xx responses + socket errors
  awk '/Non-2xx/ {n += $NF} /Socket errors/ {gsub(/,/, ""); n += $4 + $6 + $8 + $10} END {print n + 0}' "$1"
}

results=()
for s in "${stacks[@]}"; do
  jar="$here/$s/target/camel-tuning-app-$s.jar"
  logs="$out/$s"
  mkdir -p "$logs"
  echo "bench: $s: starting $(basename "$jar") with $JAVA_OPTS" >&2
  load=$(cut -d' ' -f1 /proc/loadavg)
  t0=$(date +%s.%N)
  # shellcheck disable=SC2086
  java $JAVA_OPTS "-Xlog:gc*:file=$logs/gc.log:time,uptime,level,tags" -jar "$jar" \
    --server.port="$APP_PORT" --lab.backend.url="http://127.0.0.1:$MOCK_PORT" \
    --logging.config="$here/config/logback.xml" --lab.log.dir="$logs" --lab.log.console=OFF \
    > "$logs/stdout.log" 2>&1 &
  app=$!
  pids+=("$app")
  if ! wait_http "http://127.0.0.1:$APP_PORT/actuator/health" 120; then
    echo "bench: $s did not become healthy in 120 s (see $logs)" >&2; exit 1
  fi
  startup=$(awk -v a="$(date +%s.%N)" -v b="$t0" 'BEGIN {print a - b}')
  spring_started=$(grep -o 'Started LabApplication in [0-9.]* seconds' "$logs/app.log" | awk '{print $4}' || true)
  rss_idle=$(rss_mb "$app")

  # peak RSS while loaded: sampled every 0.5 s during warm-ups and measurements
  peak_file="$logs/rss-peak"
  echo 0 > "$peak_file"
  ( peak=0; while kill -0 "$app" 2>/dev/null; do r=$(rss_mb "$app"); [ "$r" -gt "$peak" ] && peak=$r && echo "$peak" > "$peak_file"; sleep 0.5; done ) &
  sampler=$!
  pids+=("$sampler")

  echo "bench: $s: warm-up ${WARMUP}s + ${DURATION}s per endpoint at $CONNECTIONS connections" >&2
  run_wrk "$s/wrk-get-warmup.txt" get "$WARMUP"
  run_wrk "$s/wrk-get.txt" get "$DURATION"
  run_wrk "$s/wrk-summary-warmup.txt" summary "$WARMUP"
  run_wrk "$s/wrk-summary.txt" summary "$DURATION"
  rss_peak=$(cat "$peak_file")
  curl -fsS "http://127.0.0.1:$APP_PORT/actuator/prometheus" > "$logs/prometheus.txt" || true

  kill "$app" 2>/dev/null; wait "$app" 2>/dev/null || true
  kill "$sampler" 2>/dev/null; wait "$sampler" 2>/dev/null || true

  gc_pauses=$(grep -c 'Pause' "$logs/gc.log" || true)
  audit_lines=$( { cat "$logs"/audit*.log; zcat "$logs"/audit*.gz 2>/dev/null; } 2>/dev/null | wc -l)
  load_end=$(cut -d' ' -f1 /proc/loadavg)
  results+=("$s|$load / $load_end|$(printf '%.1f' "$startup")|${spring_started:-?}|$rss_idle|$rss_peak|$(rps "$out/$s/wrk-get.txt")|$(p99 "$out/$s/wrk-get.txt")|$(errors "$out/$s/wrk-get.txt")|$(rps "$out/$s/wrk-summary.txt")|$(p99 "$out/$s/wrk-summary.txt")|$(errors "$out/$s/wrk-summary.txt")|$gc_pauses|$audit_lines")
done

{
  echo "# app benchmark $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo
  echo "Host: $(nproc) CPUs, $(awk '/MemTotal/ {printf "%.0f GB", $2/1048576}' /proc/meminfo); $(java -version 2>&1 | head -1);"
  echo "JVM options: $JAVA_OPTS; wrk -t$THREADS -c$CONNECTIONS, ${WARMUP} s warm-up + ${DURATION} s measured per endpoint;"
  echo "mock service on the same host (python3, ${MOCK_ARGS:-default flags}); audit log synchronous (example logback.xml)."
  echo
  echo "| stack | load avg at start / end | startup to healthy (s) | Spring 'Started' (s) | RSS idle (MB) | RSS peak under load (MB) | GET req/s | GET p99 | GET errors | summary req/s | summary p99 | summary errors | GC pauses | audit lines |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
  for r in "${results[@]}"; do echo "| ${r//|/ | } |"; done
} > "$out/results.md"

python3 - "$out" "${results[@]}" > "$out/results.json" <<'EOF'
import json, sys
keys = ["stack", "loadavg_start_end", "startup_s", "spring_started_s", "rss_idle_mb", "rss_peak_mb", "get_rps", "get_p99",
        "get_errors", "summary_rps", "summary_p99", "summary_errors", "gc_pauses", "audit_lines"]
print(json.dumps([dict(zip(keys, r.split("|"))) for r in sys.argv[2:]], indent=2))
EOF

cat "$out/results.md"
echo
echo "bench: details in $out" >&2
