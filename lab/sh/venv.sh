# Sourced by start.sh and test.sh: one Python venv (.venv) for every host-side Python part of the lab,
# re-created only when what it installs changes.
lab_venv() {
  local root="$1" stamp="$1/.venv/.requirements.sha" want
  want="$(cat "$root/requirements-dev.txt" "$root/requirements-nodeps.txt" "$root"/mock-service/pyproject.toml \
           2>/dev/null | sha256sum | cut -d' ' -f1)"
  if [ -x "$root/.venv/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
    return 0
  fi
  echo "== preparing .venv (the lab's Python tools)"
  python3 -m venv --clear "$root/.venv" || return 1
  "$root/.venv/bin/pip" install -q --upgrade pip || return 1
  "$root/.venv/bin/pip" install -q -r "$root/requirements-dev.txt" || return 1
  "$root/.venv/bin/pip" install -q --no-deps -r "$root/requirements-nodeps.txt" || return 1
  if [ -f "$root/mock-service/pyproject.toml" ]; then
    "$root/.venv/bin/pip" install -q -e "$root/mock-service[test]" || return 1
  fi
  echo "$want" > "$stamp"
}
