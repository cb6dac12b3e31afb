"""Where the lab keeps its files on the host: run folders under results/, its state under .lab/ (both
git-ignored), nothing in $HOME."""
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ANSIBLE_DIR = ROOT / "ansible"               # site.yml, the knob catalog, roles/
RESULTS = ROOT / "results"                  # one folder per run (and per series, per comparison)
STATE_DIR = ROOT / ".lab"
BOX_DIR = STATE_DIR / "box"                 # cached base boxes, one per recipe hash
VAGRANT_HOME = STATE_DIR / "vagrant.d"      # the lab's own Vagrant home: a user's boxes stay untouched
RUN_DIR = STATE_DIR / "run"                 # PID files and sockets of what the lab started
LOG_DIR = STATE_DIR / "log"                 # daemon logs (libvirtd, virtlogd, slirp4netns)
SETTINGS_JSON = STATE_DIR / "settings.json"  # resolved settings the Vagrantfile reads
# On each machine: what a run restarts and collects there, written by Ansible (site.yml). lab/experiment/guest/run.sh
# has the same default (it cannot import this).
GUEST_MANIFEST = "/etc/lab/manifest.json"
GUEST_PROVISION_MEMORY = "/var/log/lab-provision-memory.txt"   # group_vars/all/lab.yml lab_provision_memory_file
