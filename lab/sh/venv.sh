# Sourced by start.sh and test.sh: one Python venv (.venv) for every host-side Python part of the lab,
# re-created only when what it installs changes.
# uv installs the same pinned requirements as pip ~10× faster (a fresh clone's .venv: 40 s → 4 s here); where uv
# cannot (no wheel for the platform, an index only pip is configured for: uv reads no pip.conf), pip does.
LAB_UV="uv==0.13.9"

# uv itself, kept per user beside uv's own cache and made once (a venv and pip: ~7 s). A clone's .venv is then made
# by it (~1 s, where python's venv and pip's install of uv into it took 4 s and 3 s of every fresh clone here).
lab_uv() {
  local home="${XDG_CACHE_HOME:-$HOME/.cache}/camel-lab/${LAB_UV/==/-}"
  if [ ! -x "$home/bin/uv" ]; then
    { python3 -m venv --clear "$home" && "$home/bin/pip" install -q "$LAB_UV"; } >/dev/null 2>&1 \
      || { rm -rf "$home"; return 1; }
  fi
  echo "$home/bin/uv"
}

_lab_install() {     # $1: the checkout, $2: the installer (the path of uv, or pip)
  local root="$1" py="$1/.venv/bin/python" install
  if [ "$2" != pip ]; then
    install=("$2" pip install -q --python "$py")
  else
    "$root/.venv/bin/pip" install -q --upgrade pip || return 1
    install=("$root/.venv/bin/pip" install -q)
  fi
  "${install[@]}" -r "$root/requirements-dev.txt" || return 1
  "${install[@]}" --no-deps -r "$root/requirements-nodeps.txt" || return 1
  if [ -f "$root/mock-service/pyproject.toml" ]; then
    "${install[@]}" -e "$root/mock-service[test]" || return 1
  fi
}

lab_venv_stamp() {   # what .venv/.requirements.sha holds once $1's .venv has what its files ask for
  (echo "$LAB_UV"; cat "$1/requirements-dev.txt" "$1/requirements-nodeps.txt" "$1/mock-service/pyproject.toml" \
    2>/dev/null) | sha256sum | cut -d' ' -f1
}

lab_venv() {
  local root="$1" stamp="$1/.venv/.requirements.sha" want
  want="$(lab_venv_stamp "$root")"
  if [ -x "$root/.venv/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
    return 0
  fi
  echo "== preparing .venv (the lab's Python tools)"
  local uv
  if ! { uv="$(lab_uv)" && "$uv" venv -q --seed --clear --python "$(command -v python3)" "$root/.venv" \
         && _lab_install "$root" "$uv"; }; then
    echo "   uv could not install them: pip will (slower)"
    python3 -m venv --clear "$root/.venv" || return 1
    _lab_install "$root" pip || return 1
  fi
  echo "$want" > "$stamp"
}

# Where PYTHONDONTWRITEBYTECODE is set (as on these hosts) Python caches nothing it compiles, and uv leaves
# compiling to the first import: every Python process compiled its imports again (2.4 s of each ansible-playbook's
# 0.6, 2.5 s of each report's 7). There the venv's packages, but their own test suites, are compiled once (23 s
# of two cores); elsewhere the first import caches them as before. $2=background: beside what follows, at the
# lowest priority (start.sh: a fresh clone's first run is not made to wait; it compiles what it imports itself,
# as before). The mark goes with the venv when it is made again.
lab_venv_bytecode() {
  local done="$1/.venv/.bytecode"
  [ -n "${PYTHONDONTWRITEBYTECODE:-}" ] && [ ! -f "$done" ] && [ -w "$1/.venv" ] || return 0
  # some packages ship files that do not compile on purpose (tests of Python 2 syntax): their errors are theirs
  local compile=(nice -n 19 "$1/.venv/bin/python" -m compileall -q -j 0 -x '/tests?/' "$1/.venv/lib")
  if [ "${2:-}" = background ]; then
    { "${compile[@]}"; touch "$done"; } >/dev/null 2>&1 &      # holds no pipe of the caller's open
  else
    echo "== compiling .venv's packages once (PYTHONDONTWRITEBYTECODE is set: Python would compile them in every process)"
    "${compile[@]}" >/dev/null 2>&1
    touch "$done" || true
  fi
}
