#!/bin/bash
# The way into confinement for what runs a customer's text on the lab's host (lab/confine.py builds the line):
# run as root, it joins the cgroups, enters the network namespace and a mount namespace of its own, shows the
# paths the command needs through the folders its user may not enter, and execs the rest of the line (setpriv:
# the lab's user). Every step is an exec: the PID the lab started is the command's.
#
#   confine.sh [--cgroup PROCS_FILE]... [--netns NETNS_FILE] [--show FOLDER PATH]... -- COMMAND...
#
# --show FOLDER PATH: FOLDER (closed to the user) becomes, in this mount namespace only, a tmpfs holding just the
# PATHs given with it, each bound from the real one; the rest of FOLDER is not there. The PATHs must exist.
set -euo pipefail

STAGE=/run/camel-lab-confine        # where the real paths are bound before their folder is hidden

cgroups=() netns="" shows=() inside=false
while [ $# -gt 0 ]; do
  case $1 in
    --cgroup) cgroups+=("$2"); shift 2 ;;
    --netns) netns=$2; shift 2 ;;
    --show) shows+=("$2" "$3"); shift 3 ;;
    --inside) inside=true; shift ;;
    --) shift; break ;;
    *) echo "confine.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ $# -gt 0 ] || { echo "confine.sh: no command" >&2; exit 2; }

if ! $inside; then
  for procs in "${cgroups[@]}"; do echo $$ > "$procs"; done
  again=("$0" --inside)
  for ((i = 0; i < ${#shows[@]}; i += 2)); do again+=(--show "${shows[i]}" "${shows[i + 1]}"); done
  enter=()
  [ -z "$netns" ] || enter=(nsenter "--net=$netns" --)
  [ ${#shows[@]} -eq 0 ] || exec "${enter[@]}" unshare --mount --propagation private -- "${again[@]}" -- "$@"
  [ ${#enter[@]} -eq 0 ] || exec "${enter[@]}" "$@"
  exec "$@"
fi

# Inside the new mount namespace: nothing done here is seen outside it.
mkdir -p "$STAGE"
mount -t tmpfs -o mode=0700,size=64k lab-confine-stage "$STAGE"
folders=()
for ((i = 0; i < ${#shows[@]}; i += 2)); do
  path=${shows[i + 1]} staged="$STAGE/$((i / 2))"
  if [ -d "$path" ]; then mkdir "$staged"; else : > "$staged"; fi
  mount --bind "$path" "$staged"
  case " ${folders[*]-} " in *" ${shows[i]} "*) ;; *) folders+=("${shows[i]}") ;; esac
done
for folder in "${folders[@]}"; do
  mount -t tmpfs -o mode=0755,size=64k lab-confine-view "$folder"
done
for ((i = 0; i < ${#shows[@]}; i += 2)); do
  path=${shows[i + 1]} staged="$STAGE/$((i / 2))"
  mkdir -p "$(dirname "$path")"
  if [ -d "$staged" ]; then mkdir -p "$path"; else : > "$path"; fi
  mount --move "$staged" "$path"
done
umount "$STAGE"
cd "$PWD" 2>/dev/null || cd /       # the working folder as this namespace shows it
exec "$@"
