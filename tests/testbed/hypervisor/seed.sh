#!/bin/sh
# Runs at every boot of a lab hypervisor VM, before sshd and libvirtd: takes
# this host's identity from its seed disk (label ocseed, made by the lab for
# each host): hostname, SSH host key, the keys allowed to log in (as root and
# as the operator ocadmin) and libvirt's host UUID.
set -eu
mkdir -p /run/ocseed
mount -o ro LABEL=ocseed /run/ocseed
seed=/run/ocseed
cp "$seed/hostname" /etc/hostname
hostname "$(cat /etc/hostname)"
rm -f /etc/ssh/ssh_host_*
install -m 600 "$seed/ssh_host_ed25519_key" /etc/ssh/ssh_host_ed25519_key
install -m 644 "$seed/ssh_host_ed25519_key.pub" /etc/ssh/ssh_host_ed25519_key.pub
install -d -m 700 /root/.ssh
install -m 600 "$seed/authorized_keys" /root/.ssh/authorized_keys
install -d -m 700 -o ocadmin -g ocadmin /home/ocadmin/.ssh
install -m 600 -o ocadmin -g ocadmin "$seed/authorized_keys" /home/ocadmin/.ssh/authorized_keys
if [ -f "$seed/host_uuid" ]; then
  sed -i '/^host_uuid/d' /etc/libvirt/libvirtd.conf
  echo "host_uuid = \"$(cat "$seed/host_uuid")\"" >>/etc/libvirt/libvirtd.conf
fi
umount /run/ocseed
