#!/bin/bash
# The way into confinement for what runs a customer's text on the lab's host (lab/confine.py builds the line):
# run as root, it joins the cgroups, enters the network namespace and a mount namespace of its own, replaces folders
# by empty ones that show only the paths the command needs, and execs the rest of the line (setpriv: the lab's
# user). Every step is an exec: the PID the lab started is the command's.
#
#   confine.sh [--cgroup MOUNT RELATIVE FSTYPE OPTIONS]... [--netns NETNS_FILE]
#              [--folder FOLDER MODE]... [--show FOLDER PATH]... [--bind FILE SOURCE]... -- COMMAND...
#
# --cgroup: join MOUNT/RELATIVE (its cgroup.procs); where MOUNT is not there (`ip netns exec`, which runs Ansible,
# hides the host's /sys/fs/cgroup) the hierarchy (FSTYPE cgroup or cgroup2, OPTIONS its controller) is mounted again
# for the while in a mount namespace of its own.
# --folder FOLDER MODE: FOLDER becomes, in this mount namespace only, an empty tmpfs of MODE (a folder closed to the
# user: 0755, holding only what --show puts there; /tmp and its kind: 1777, the command's own).
# --show FOLDER PATH: PATH (existing, inside FOLDER) bound from the real one into FOLDER's tmpfs.
# --bind FILE SOURCE: FILE shows SOURCE instead (a build's /etc/resolv.conf: its own namespace's resolver).
set -euo pipefail

STAGE=/run/camel-lab-confine        # where the real paths are bound before their folder is replaced
HIERARCHY=/run/camel-lab-confine-cgroup

cgroups=() netns="" folders=() shows=() binds=() inside=false
while [ $# -gt 0 ]; do
  case $1 in
    --cgroup) cgroups+=("$2" "$3" "$4" "$5"); shift 5 ;;
    --netns) netns=$2; shift 2 ;;
    --folder) folders+=("$2" "$3"); shift 3 ;;
    --show) shows+=("$2" "$3"); shift 3 ;;
    --bind) binds+=("$2" "$3"); shift 3 ;;
    --inside) inside=true; shift ;;
    --) shift; break ;;
    *) echo "confine.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ $# -gt 0 ] || { echo "confine.sh: no command" >&2; exit 2; }

join() {     # MOUNT RELATIVE FSTYPE OPTIONS
  if [ -e "$1/$2/cgroup.procs" ]; then
    echo $$ > "$1/$2/cgroup.procs"
  else
    mkdir -p "$HIERARCHY"
    unshare --mount --propagation private -- sh -c 'mount -t "$3" ${4:+-o "$4"} lab-confine "$5" \
      && echo "$1" > "$5/$2/cgroup.procs"' join $$ "$2" "$3" "$4" "$HIERARCHY"
  fi
}

if ! $inside; then
  for ((i = 0; i < ${#cgroups[@]}; i += 4)); do
    join "${cgroups[i]}" "${cgroups[i + 1]}" "${cgroups[i + 2]}" "${cgroups[i + 3]}"
  done
  enter=()
  [ -z "$netns" ] || enter=(nsenter "--net=$netns" --)
  if [ ${#folders[@]} -gt 0 ]; then
    again=("$0" --inside)
    for ((i = 0; i < ${#folders[@]}; i += 2)); do again+=(--folder "${folders[i]}" "${folders[i + 1]}"); done
    for ((i = 0; i < ${#shows[@]}; i += 2)); do again+=(--show "${shows[i]}" "${shows[i + 1]}"); done
    for ((i = 0; i < ${#binds[@]}; i += 2)); do again+=(--bind "${binds[i]}" "${binds[i + 1]}"); done
    exec "${enter[@]}" unshare --mount --propagation private -- "${again[@]}" -- "$@"
  fi
  exec "${enter[@]}" "$@"
fi

# Inside the new mount namespace: nothing done here is seen outside it. Each path is bound aside first (its
# folder is about to be covered), then each folder covered, then each path moved to where it was.
mkdir -p "$STAGE"
mount -t tmpfs -o mode=0700,size=64k lab-confine-stage "$STAGE"
for ((i = 0; i < ${#shows[@]}; i += 2)); do
  path=${shows[i + 1]} staged="$STAGE/$((i / 2))"
  if [ -d "$path" ]; then mkdir "$staged"; else : > "$staged"; fi
  mount --bind "$path" "$staged"
done
for ((i = 0; i < ${#folders[@]}; i += 2)); do
  mount -t tmpfs -o "mode=${folders[i + 1]},size=256m" lab-confine-folder "${folders[i]}"
done
for ((i = 0; i < ${#shows[@]}; i += 2)); do
  path=${shows[i + 1]} staged="$STAGE/$((i / 2))"
  mkdir -p "$(dirname "$path")"
  if [ -d "$staged" ]; then mkdir -p "$path"; else : > "$path"; fi
  mount --move "$staged" "$path"
done
umount "$STAGE"
for ((i = 0; i < ${#binds[@]}; i += 2)); do mount --bind "${binds[i + 1]}" "${binds[i]}"; done
cd "$PWD" 2>/dev/null || cd /       # the working folder as this namespace shows it
exec "$@"
