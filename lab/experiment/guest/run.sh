#!/bin/bash
# The guest side of a lab run, sent over SSH (`sudo bash -s -- MODE RUN_ID ...`): nothing to install.
#   manifest             print what the manifest says a run collects here, as shell variables
#   mark RUN_ID          remember where each log ends, start this run's PCP archive and its profile of
#                        the app's JVM (async-profiler loaded by jattach, the manifest's events)
#   pack RUN_ID EPOCH    stop the archive (and a profiler still running), stage this run's logs, journal,
#                        configs, versions, the archive (plus a pmrep CSV of the exported metrics) and the
#                        profile, and write them to stdout as a tar.gz
# What to collect and where it is comes from /etc/lab/manifest.json, which Ansible writes (site.yml,
# group_vars/all/lab.yml: lab_manifest); logs are cut at the offsets `mark` saved, so a run folder holds
# only its own run's lines.
set -uo pipefail
mode="${1:?mode}"
if [ "$mode" != manifest ]; then
  run_id="${2:?run id}"
  case "$run_id" in */*|.*|"") echo "run.sh: bad run id: $run_id" >&2; exit 2;; esac
fi
state=${LAB_RUN_STATE:-/var/lib/lab-run}            # another path only in tests
manifest=${LAB_MANIFEST:-/etc/lab/manifest.json}      # lab/paths.py GUEST_MANIFEST; another path only in tests
[ -r "$manifest" ] || { echo "run.sh: $manifest is missing: provision this machine (./start.sh provision)" >&2; exit 3; }
# The manifest as shell variables: LOGS and JOURNALS (run-folder name <- guest file or unit), CONFIGS (paths
# or globs), INFO_URL, ARCHIVE_ROOT, INTERVAL, METRICS, PROFILE_* (the profiler's settings; no events: off).
vars=$(python3 - "$manifest" <<'PY'
import json, shlex, sys
m = json.load(open(sys.argv[1]))
q = shlex.quote
def assoc(name, mapping):
    print(f"declare -A {name}=(" + " ".join(f"[{q(k)}]={q(str(v))}" for k, v in mapping.items()) + ")")
assoc("LOGS", m.get("logs", {}))
assoc("JOURNALS", m.get("journals", {}))
print("CONFIGS=(" + " ".join(q(c) for c in m.get("configs", [])) + ")")
print("CRASH_FILES=(" + " ".join(q(c) for c in m.get("crash_files", [])) + ")")
pcp = m["pcp"]
print(f"INFO_URL={q(m.get('info_url', ''))} ARCHIVE_ROOT={q(str(pcp['archive_root']))} INTERVAL={q(str(pcp['interval_s']))}")
print("METRICS=(" + " ".join(q(x) for x in pcp["metrics"]) + ")")
p = m.get("profile", {})
print("PROFILE_EVENTS=(" + " ".join(q(e) for e in p.get("events", [])) + ")")
for key in ("interval_ms", "alloc_bytes", "lock_ns", "library", "output_root", "service"):
    print(f"PROFILE_{key.upper()}={q(str(p.get(key, '')))}")
PY
) || { echo "run.sh: cannot read $manifest (see above); provision this machine again" >&2; exit 3; }
eval "$vars"

# profile.json: what was asked, of which process, when (stop adds "stopped" and the recording's size)
profile_json() {
  python3 - "$1/profile.json" "$2" "$3" "$4" "${PROFILE_INTERVAL_MS}" "${PROFILE_EVENTS[@]}" <<'PY'
import json, os, sys
path, pid, started, error, interval, events = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6:]
info = {"engine": "async-profiler", "events": events, "interval_ms": int(interval), "pid": int(pid),
        "started": started, "stopped": None, "error": error or None}
with open(path, "w") as f:
    json.dump(info, f, indent=2)
PY
}

# loads async-profiler into the service's JVM, recording into $PROFILE_OUTPUT_ROOT/RUN_ID until profile_stop
# (the whole load: the host cuts the warm-up off when it converts the recording)
profile_start() {
  local dir="$PROFILE_OUTPUT_ROOT/$run_id" pid opts started out error=""
  [ ${#PROFILE_EVENTS[@]} -gt 0 ] || { echo "profiling off (knob profiler_events: [])"; return 0; }
  pid=$(systemctl show -p MainPID --value "$PROFILE_SERVICE")
  [ "${pid:-0}" -gt 0 ] || { echo "run.sh: warning: $PROFILE_SERVICE is not running: nothing to profile" >&2; return 1; }
  rm -rf "$dir"; mkdir -p "$dir"; chown --reference="$PROFILE_OUTPUT_ROOT" "$dir"
  jattach "$pid" load "$PROFILE_LIBRARY" true stop >/dev/null 2>&1   # a recording an earlier run left going
  # JFR output: the only one async-profiler writes several events into at once. A chunk is readable once
  # finished (default: after 1 h): a JVM killed mid-run (OOM) left nothing to convert, now its last minute.
  opts="start,jfr,file=$dir/profile.jfr,log=$dir/profile.log,interval=${PROFILE_INTERVAL_MS}ms,chunktime=60s"
  for event in "${PROFILE_EVENTS[@]}"; do
    case "$event" in
      cpu) opts="$opts,event=cpu";;
      alloc) opts="$opts,alloc=$PROFILE_ALLOC_BYTES";;
      lock) opts="$opts,lock=$PROFILE_LOCK_NS";;
    esac
  done
  started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  out=$(jattach "$pid" load "$PROFILE_LIBRARY" true "$opts" 2>&1) || error="jattach: $out"
  profile_json "$dir" "$pid" "$started" "$error"
  if [ -n "$error" ]; then
    echo "run.sh: warning: profiling $PROFILE_SERVICE (pid $pid) did not start: $out" >&2; return 1
  fi
  echo "profiling $PROFILE_SERVICE (pid $pid): ${PROFILE_EVENTS[*]} every ${PROFILE_INTERVAL_MS} ms"
}

# stops a recording of this run that is still going (the load ended, or it was interrupted); idempotent
profile_stop() {
  local info="$PROFILE_OUTPUT_ROOT/$run_id/profile.json" pid
  [ -f "$info" ] || return 0
  python3 -c 'import json,sys; i=json.load(open(sys.argv[1])); sys.exit(0 if i["stopped"] is None and not i["error"] else 1)' "$info" || return 0
  pid=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' "$info")
  local out error=""
  out=$(jattach "$pid" load "$PROFILE_LIBRARY" true stop 2>&1) || error="stop: $out"
  python3 - "$info" "$error" <<'PY'
import datetime, json, os, sys
path, error = sys.argv[1], sys.argv[2]
info = json.load(open(path))
info["stopped"] = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
info["error"] = info["error"] or error or None
jfr = os.path.join(os.path.dirname(path), "profile.jfr")
info["jfr_bytes"] = os.path.getsize(jfr) if os.path.exists(jfr) else 0
json.dump(info, open(path, "w"), indent=2)
PY
}

case "$mode" in
manifest)
  declare -p LOGS JOURNALS CONFIGS METRICS INFO_URL ARCHIVE_ROOT INTERVAL PROFILE_EVENTS PROFILE_INTERVAL_MS \
    PROFILE_ALLOC_BYTES PROFILE_LOCK_NS PROFILE_LIBRARY PROFILE_OUTPUT_ROOT PROFILE_SERVICE
  ;;
mark)
  mkdir -p "$state"
  for name in "${!LOGS[@]}"; do
    echo "$name $(stat -c %s "${LOGS[$name]}" 2>/dev/null || echo 0)"
  done > "$state/$run_id.offsets"
  lab-pmlogger start "$run_id"
  profile_start || true        # a run without profiles is still a run (the warning says why)
  ;;
pack)
  since="${3:?start epoch}"
  stage=$(mktemp -d); trap 'rm -rf "$stage"' EXIT
  mkdir -p "$stage/logs" "$stage/config" "$stage/pcp"
  lab-pmlogger stop
  profile_stop
  if [ -d "$PROFILE_OUTPUT_ROOT/$run_id" ]; then
    cp -rp "$PROFILE_OUTPUT_ROOT/$run_id" "$stage/profile"
  fi
  # logs: from the offset `mark` saw (whole file when it was rotated since)
  for name in "${!LOGS[@]}"; do
    file="${LOGS[$name]}"; [ -f "$file" ] || continue
    from=$(awk -v n="$name" '$1 == n {print $2}' "$state/$run_id.offsets" 2>/dev/null)
    from=${from:-0}; [ "$(stat -c %s "$file")" -lt "$from" ] && from=0
    tail -c +"$((from + 1))" "$file" > "$stage/logs/$name"
  done
  [ -s "$stage/logs/audit.log" ] && gzip "$stage/logs/audit.log"
  for name in "${!JOURNALS[@]}"; do
    journalctl --since "@$since" -u "${JOURNALS[$name]}" -o short-iso --no-pager > "$stage/logs/$name" 2>&1
  done
  # the journal without SSH/sudo session noise (the lab's own commands): OOM killer, restarts, failures
  journalctl --since "@$since" -o short-iso --no-pager 2>&1 \
    | grep -vE 'sshd\[|sudo\[|sudo: |pam_unix|systemd-logind|session-[0-9]+\.scope|(New|Removed) session|user@[0-9]+\.service|user-runtime-dir' \
    > "$stage/logs/journal.txt"
  # crash files written since the mark (globs: the JVM's hs_err_pid<N>.log), for the report's crash hint
  # shellcheck disable=SC2068  # unquoted: globs
  for f in ${CRASH_FILES[@]}; do
    [ -f "$f" ] && [ "$(stat -c %Y "$f")" -ge "$since" ] && cp -p "$f" "$stage/logs/"
  done
  # configs, secrets redacted (a run folder is shared; the AJP secret is not)
  # shellcheck disable=SC2068  # unquoted: a config may be a glob
  for f in ${CONFIGS[@]}; do
    [ -f "$f" ] && sed -E 's/(secret[=:][[:space:]]*"?)[^"[:space:]]+/\1REDACTED/g' "$f" > "$stage/config/$(basename "$f")"
  done
  apache2ctl -M > "$stage/config/httpd-modules.txt" 2>&1
  [ -n "$INFO_URL" ] && { curl -s -m 10 "$INFO_URL" > "$stage/config/actuator-info.json" || true; }
  pkg() { dpkg-query -W -f='${Version}' "$1" 2>/dev/null || echo "not installed"; }
  {
    echo "java=$(java -version 2>&1 | awk -F'"' '/version/ {print $2; exit}')"
    echo "httpd=$(apache2 -v 2>/dev/null | sed -n 's/^Server version: Apache\/\([^ ]*\).*/\1/p')"
    echo "pcp=$(pkg pcp)"
    echo "libtcnative=$(pkg libtcnative-1)"
    echo "python=$(python3 -c 'import platform; print(platform.python_version())')"
    echo "kernel=$(uname -r)"
    echo "debian=$(cat /etc/debian_version)"
    echo "memory_kb=$(awk '/^MemTotal/ {print $2}' /proc/meminfo)"
    echo "cpus=$(nproc)"
    echo "uptime_s=$(cut -d' ' -f1 /proc/uptime)"
    # a container's memory is its cgroup's limit (its /proc/meminfo is the host's); systemd says what it runs in
    echo "memory_limit_kb=$(( $(cat /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null || echo 0) / 1024 ))"
    echo "container=$(cat /run/systemd/container 2>/dev/null || systemd-detect-virt -c 2>/dev/null || echo none)"
  } > "$stage/config/versions.txt"
  # the machine as a JVM with no options of its own sees it: its container support, CPUs, memory, default heap
  # and collector (the same shape on a VM and a container, or a difference the report names)
  java -Xlog:os+container=debug -XshowSettings:system -XX:+PrintFlagsFinal -version 2>&1 \
    | grep -E 'os,container|Provider:|Effective CPU Count|Memory Limit|CPU Quota|CPU Period|CPU Shares| (MaxHeapSize|InitialHeapSize|ActiveProcessorCount|Use(Serial|G1|Parallel|Z|Shenandoah)GC|CICompilerCount) ' \
    > "$stage/config/jvm-shape.txt"
  # the run's PCP archive, and its values as CSV (pmrep converts counters to rates)
  # (one archive-<time> per pmlogger start: several when it was restarted during the run, merged into one)
  archive=$ARCHIVE_ROOT/$run_id
  if [ -d "$archive" ]; then
    cp -p "$archive"/pmlogger*.log "$stage/pcp/" 2>/dev/null
    parts=$(ls "$archive"/archive-*.meta 2>/dev/null | sed 's/\.meta$//' | tr '\n' ' ')
    if [ -n "$parts" ]; then
      # shellcheck disable=SC2086  # one word per archive
      if ! pmlogextract $parts "$stage/pcp/archive" 2> "$stage/pcp/pmlogextract.err"; then
        cp -p "$archive"/archive-* "$stage/pcp/"      # unmerged, but kept
      fi
      [ -s "$stage/pcp/pmlogextract.err" ] || rm -f "$stage/pcp/pmlogextract.err"
    fi
    read_from="$stage/pcp/archive"
    [ -f "$read_from.0" ] || read_from=$(echo $parts | tr ' ' ',')
    # pmrep refuses the whole list for one name the archive lacks (an agent that was down when pmlogger
    # started): ask only for those it holds, and say which were missing
    held=$(pminfo -a "$read_from" "${METRICS[@]}" 2>/dev/null)      # the names it holds, one per line
    present=(); missing=""
    for metric in "${METRICS[@]}"; do
      if grep -qxF -- "$metric" <<< "$held"; then present+=("$metric"); else missing+=" $metric"; fi
    done
    [ -n "${missing:-}" ] && echo "not in the archive:${missing}" > "$stage/pcp/missing-metrics.txt"
    if [ -n "$read_from" ] && [ ${#present[@]} -gt 0 ]; then
      pmrep -a "$read_from" -t "$INTERVAL" -o csv -Z UTC -f '%s.%f' -I "${present[@]}" \
        > "$stage/pcp/pmrep.csv" 2> "$stage/pcp/pmrep.err" || true
    fi
    # which process each hotproc instance is (python3 is both the mock and PCP's openmetrics agent)
    if grep -qxF hotproc.psinfo.psargs <<< "$(pminfo -a "$read_from" hotproc.psinfo.psargs 2>/dev/null)"; then
      pmrep -a "$read_from" -t 30 -o csv -Z UTC -f '%s' hotproc.psinfo.psargs > "$stage/pcp/psargs.csv" 2>/dev/null || true
    fi
    # what each of those processes runs now: PCP names a process once, when it first sees it, and a service
    # started by systemd ≥ 255 may be seen as /usr/lib/systemd/systemd-executor before it execs its command
    # (the JVM on the trixie box): PID,argv[0] of every live process, for the host to name them right
    for proc in /proc/[0-9]*; do
      argv0=$(tr '\0' '\n' < "$proc/cmdline" 2>/dev/null | head -n 1) || continue
      if [ -n "$argv0" ]; then printf '%s,%s\n' "${proc#/proc/}" "$argv0"; fi
    done > "$stage/pcp/argv0.csv" || true
  fi
  tar -C "$stage" -czf - .
  ;;
*) echo "run.sh: unknown mode $mode (manifest | mark | pack)" >&2; exit 2;;
esac
