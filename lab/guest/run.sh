#!/bin/bash
# The guest side of a lab run, sent over SSH (`sudo bash -s -- MODE RUN_ID ...`): nothing to install.
#   mark RUN_ID          remember where each log ends, start this run's PCP archive
#   pack RUN_ID EPOCH INTERVAL METRIC...
#                        stop the archive, stage this run's logs, journal, configs, versions and the
#                        archive (plus a pmrep CSV of METRICs) and write them to stdout as a tar.gz
# Logs are cut at the offsets `mark` saved, so a run folder holds only its own run's lines.
set -uo pipefail
mode="${1:?mode}"; run_id="${2:?run id}"
case "$run_id" in */*|.*|"") echo "run.sh: bad run id: $run_id" >&2; exit 2;; esac
state=/var/lib/lab-run
# run-folder name <- guest file
declare -A LOGS=(
  [app.log]=/var/log/camel-app/app.log
  [audit.log]=/var/log/camel-app/audit.log
  [gc.log]=/var/log/camel-app/gc.log
  [httpd-access.log]=/var/log/apache2/access.log
  [httpd-error.log]=/var/log/apache2/error.log
)
CONFIGS=(/etc/camel-app/application.yml /etc/camel-app/jvm.options /etc/camel-app/logback.xml
         /etc/apache2/conf-enabled/lab-tuning.conf /etc/apache2/sites-enabled/lab.conf
         /etc/default/mock-service /etc/systemd/system/camel-app.service /etc/systemd/system/mock-service.service
         /etc/sysctl.d/60-lab.conf /etc/nftables.conf /etc/pcp/lab/pmlogger.config /etc/lab/knobs.json)

case "$mode" in
mark)
  mkdir -p "$state"
  for name in "${!LOGS[@]}"; do
    echo "$name $(stat -c %s "${LOGS[$name]}" 2>/dev/null || echo 0)"
  done > "$state/$run_id.offsets"
  lab-pmlogger start "$run_id"
  ;;
pack)
  since="${3:?start epoch}"; interval="${4:-1}"; shift 4
  stage=$(mktemp -d); trap 'rm -rf "$stage"' EXIT
  mkdir -p "$stage/logs" "$stage/config" "$stage/pcp"
  lab-pmlogger stop
  # logs: from the offset `mark` saw (whole file when it was rotated since)
  for name in "${!LOGS[@]}"; do
    file="${LOGS[$name]}"; [ -f "$file" ] || continue
    from=$(awk -v n="$name" '$1 == n {print $2}' "$state/$run_id.offsets" 2>/dev/null)
    from=${from:-0}; [ "$(stat -c %s "$file")" -lt "$from" ] && from=0
    tail -c +"$((from + 1))" "$file" > "$stage/logs/$name"
  done
  [ -s "$stage/logs/audit.log" ] && gzip "$stage/logs/audit.log"
  journalctl --since "@$since" -u mock-service -o short-iso --no-pager > "$stage/logs/mock.log" 2>&1
  # the journal without SSH/sudo session noise (the lab's own commands): OOM killer, restarts, failures
  journalctl --since "@$since" -o short-iso --no-pager 2>&1 \
    | grep -vE 'sshd\[|sudo\[|sudo: |pam_unix|systemd-logind|session-[0-9]+\.scope|(New|Removed) session|user@[0-9]+\.service|user-runtime-dir' \
    > "$stage/logs/journal.txt"
  # configs, secrets redacted (a run folder is shared; the AJP secret is not)
  for f in "${CONFIGS[@]}" /etc/apache2/mods-enabled/mpm_*.conf; do
    [ -f "$f" ] && sed -E 's/(secret[=:][[:space:]]*"?)[^"[:space:]]+/\1REDACTED/g' "$f" > "$stage/config/$(basename "$f")"
  done
  apache2ctl -M > "$stage/config/httpd-modules.txt" 2>&1
  curl -s -m 10 http://127.0.0.1:8080/actuator/info > "$stage/config/actuator-info.json" || true
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
  } > "$stage/config/versions.txt"
  # the run's PCP archive, and its values as CSV (pmrep converts counters to rates)
  # (one archive-<time> per pmlogger start: several when it was restarted during the run, merged into one)
  archive=/var/log/pcp/lab/$run_id
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
    held=$(pminfo -a "$read_from" "$@" 2>/dev/null)      # the names it holds, one per line
    present=(); missing=""
    for metric in "$@"; do
      if grep -qxF -- "$metric" <<< "$held"; then present+=("$metric"); else missing+=" $metric"; fi
    done
    [ -n "${missing:-}" ] && echo "not in the archive:${missing}" > "$stage/pcp/missing-metrics.txt"
    if [ -n "$read_from" ] && [ ${#present[@]} -gt 0 ]; then
      pmrep -a "$read_from" -t "$interval" -o csv -Z UTC -f '%s.%f' -I "${present[@]}" \
        > "$stage/pcp/pmrep.csv" 2> "$stage/pcp/pmrep.err" || true
    fi
  fi
  tar -C "$stage" -czf - .
  ;;
*) echo "run.sh: unknown mode $mode (mark | pack)" >&2; exit 2;;
esac
