#!/bin/sh
# Runs inside the box's root filesystem (chroot) after mmdebstrap: users, services, first-boot state.
# Arguments: the Debian mirror URL and suite.
set -eu
mirror="$1"; suite="$2"

cat > /etc/apt/sources.list <<LIST
deb $mirror $suite main
deb $mirror $suite-updates main
deb ${mirror%/debian}/debian-security $suite-security main
LIST

# The roles' packages (preload.txt), installed without recommends as the roles do. No service may start
# inside the chroot (policy-rc.d 101), and none is enabled but those in units.txt (the roles enable the rest).
if [ -s /tmp/preload.txt ]; then
  # The JDK's update-alternatives links its manual page here, which dpkg no longer unpacks (lab-box-excludes)
  mkdir -p /usr/share/man/man1
  printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
  chmod 755 /usr/sbin/policy-rc.d
  apt-get update -q --error-on=any
  # pcp's postinst runs `systemctl start pmcd` whenever systemctl exists, and fails without a running
  # systemd: a systemctl that does nothing comes first in PATH for this install only. (It also swallows
  # deb-systemd-helper's `systemctl preset`: the packages' units stay disabled.)
  mkdir -p /tmp/chroot-bin
  printf '#!/bin/sh\nexit 0\n' > /tmp/chroot-bin/systemctl
  chmod 755 /tmp/chroot-bin/systemctl
  # (apt gives dpkg its own PATH: DPkg::Path)
  apt-get install -y -q --no-install-recommends -o DPkg::Path=/tmp/chroot-bin:/usr/sbin:/usr/bin:/sbin:/bin \
    $(grep -v '^#' /tmp/preload.txt)
  rm -rf /usr/sbin/policy-rc.d /tmp/preload.txt /tmp/chroot-bin
  systemctl enable $(grep -v '^#' /tmp/units.txt)
fi
rm -f /tmp/units.txt

echo lab-box > /etc/hostname
printf '127.0.0.1\tlocalhost\n127.0.1.1\tlab-box\n' > /etc/hosts

useradd --create-home --shell /bin/bash vagrant
install -d -m 700 -o vagrant -g vagrant /home/vagrant/.ssh
install -m 600 -o vagrant -g vagrant /tmp/login.pub /home/vagrant/.ssh/authorized_keys
chmod 440 /etc/sudoers.d/vagrant
# Vagrant logs in as vagrant with the lab's own key (lab/box.py login_key); no passwords anywhere.
passwd --lock root

systemctl enable systemd-networkd.service lab-identity.service lab-ssh-hostkeys.service ssh.service
# Nothing may run behind the lab's back: no unattended apt runs holding the dpkg lock during
# provisioning, no periodic scrubs or trims competing with the load; and no boot waiting for every NIC.
systemctl mask apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer e2scrub_reap.service \
  fstrim.timer man-db.timer systemd-networkd-wait-online.service
# Nor modules for what a lab machine has not got (graphics, FUSE, device mapper, loop devices, EFI): systemd
# loads them at every boot, 4-8 s each under TCG (see also /etc/modprobe.d/lab-box.conf).
systemctl mask modprobe@drm.service modprobe@fuse.service modprobe@dm_mod.service modprobe@loop.service \
  modprobe@efi_pstore.service
# systemd runs its generators at every boot and every daemon-reload (three in a fresh provisioning), 0.2-0.7 s
# each under TCG. A lab machine needs the fstab's only: no SysV script lacks a unit (pcp's legacy wrapper was the
# only one made), and it has no encrypted, verity or GPT-found disks, no hibernation, no console logins.
mkdir -p /etc/systemd/system-generators
for generator in cryptsetup debug getty gpt-auto hibernate-resume integritysetup rc-local run system-update \
  sysv veritysetup; do
  ln -s /dev/null /etc/systemd/system-generators/systemd-$generator-generator
done
# UseDNS and GSSAPI lookups would stall logins inside the lab namespace. One ed25519 host key only:
# RSA key generation takes minutes on a first boot under TCG.
printf 'UseDNS no\nGSSAPIAuthentication no\nHostKey /etc/ssh/ssh_host_ed25519_key\n' > /etc/ssh/sshd_config.d/lab.conf

# Name resolution: lab-identity writes the management network's DNS server (libvirt's dnsmasq) at boot.
# (systemd-resolved took 13 s of every boot under TCG, on the way to SSH, and 7 MB of a 512 MB machine.)
# mmdebstrap left the build host's resolv.conf behind, which guests cannot reach.
printf '# written at boot by /usr/local/sbin/lab-identity\n' > /etc/resolv.conf

# First-boot state: every machine makes its own host keys and machine-id (which also seeds its
# DHCP client id: twins sharing one would be given the same address).
rm -f /etc/ssh/ssh_host_*
: > /etc/machine-id
rm -f /var/lib/dbus/machine-id

# (apt's downloaded packages stay for the host's cache, which empties apt's cache after: lab/machines/debcache.py)
rm -rf /var/lib/apt/lists/* /tmp/login.pub
