"""Packs the lab's virt-launcher image without a registry: KubeVirt's launcher
binaries (built from tests/testbed/servers/kubevirt) on a root file system made
of the files of the Debian packages libvirt and QEMU need, as this machine has
them installed, laid out as KubeVirt's own image lays them out (its
cmd/virt-launcher/BUILD.bazel): the binaries in /usr/bin, KubeVirt's
qemu.conf, virtqemud.conf and qemu hook in /etc/libvirt, users root and qemu
(107). Written as an OCI image layout tarball for `ctr images import`.

Debian 12 has no modular libvirt daemons: /usr/sbin/virtqemud, which
virt-launcher starts, runs the monolithic libvirtd with the same arguments.

usage: launcher_image.py BIN_DIR KUBEVIRT_SOURCE OUTPUT.tar IMAGE
"""

import hashlib
import io
import json
import os
import platform
import subprocess
import sys
import tarfile

import node_image

# What the launcher runs: libvirt's QEMU driver, QEMU (TCG), qemu-img, and a shell for KubeVirt's scripts.
PACKAGES = ("base-files", "bash", "coreutils", "libvirt-daemon", "libvirt-daemon-driver-qemu",
            "qemu-system-x86", "qemu-utils")
LAUNCHER_BINARIES = ("virt-launcher", "virt-launcher-monitor", "virt-probe", "virt-tail", "virt-freezer")
# Documentation takes a third of the packages' size and nothing reads it.
SKIPPED = ("/usr/share/doc/", "/usr/share/man/", "/usr/share/info/", "/usr/share/locale/", "/usr/share/lintian/")
# Debian 12 is merged-/usr: these are symlinks into /usr.
MERGED = {"bin": "usr/bin", "sbin": "usr/sbin", "lib": "usr/lib", "lib64": "usr/lib64"}
# KubeVirt's users, and Debian's libvirt-qemu: Debian's libvirt resolves its built-in QEMU user before it
# reads qemu.conf (which says qemu) and refuses to start without it.
PASSWD = ("root:x:0:0:root:/root:/bin/bash\nqemu:x:107:107:qemu:/home/qemu:/bin/bash\n"
          "libvirt-qemu:x:64055:64055:libvirt-qemu:/var/lib/libvirt:/usr/sbin/nologin\n")
GROUP = "root:x:0:\nqemu:x:107:\nkvm:x:108:\nlibvirt-qemu:x:64055:\n"
VIRTQEMUD = "#!/bin/bash\n# Debian 12 ships the monolithic daemon only; it takes virtqemud's arguments.\nexec /usr/sbin/libvirtd \"$@\"\n"


def package_closure(packages):
    """The installed packages these depend on, recursively (no recommends)."""
    listing = subprocess.run(
        ["apt-cache", "depends", "--recurse", "--installed", "--no-recommends", "--no-suggests",
         "--no-conflicts", "--no-breaks", "--no-replaces", "--no-enhances", *packages],
        check=True, capture_output=True, text=True).stdout
    names = {line.strip("<>") for line in listing.splitlines() if line and not line.startswith(" ")}
    # dpkg-query fails for the names of virtual packages among them; those are simply not installed.
    status = subprocess.run(["dpkg-query", "-W", "-f", "${Package}\t${Status}\n", *sorted(names)],
                            check=False, capture_output=True, text=True).stdout
    installed = {line.split("\t")[0] for line in status.splitlines() if line.endswith(" installed")}
    missing = set(packages) - installed
    if missing:
        raise SystemExit("launcher_image.py: not installed: %s (run scripts/bootstrap)" % ", ".join(sorted(missing)))
    return sorted(installed)


def canonical(path):
    """The path with its directories resolved (/lib/x.so -> /usr/lib/x.so)."""
    return os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path))


def package_files(packages):
    listing = subprocess.run(["dpkg-query", "-L", *packages], check=True, capture_output=True, text=True).stdout
    files = set()
    for line in listing.splitlines():
        if not line.startswith("/") or line == "/." or line.startswith(SKIPPED):
            continue  # "diverted by ..." notes and the root itself
        path = canonical(line)
        # Files and symlinks (/var/run -> /run among them); directories come from what they hold.
        if os.path.islink(path) or os.path.isfile(path):
            files.add(path)
    return files - {"/" + name for name in MERGED}


def normalised(info, mode=None):
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    if mode is not None:
        info.mode = mode
    return info


def add_bytes(layer, name, data, mode=0o644):
    info = normalised(tarfile.TarInfo(name), mode)
    info.size, info.mtime = len(data), 0
    layer.addfile(info, io.BytesIO(data))


def add_directory(layer, name, mode=0o755):
    info = normalised(tarfile.TarInfo(name), mode)
    info.type, info.mtime = tarfile.DIRTYPE, 0
    layer.addfile(info)


def write_layer(handle, bin_dir, source, files):
    launcher = os.path.join(source, "cmd", "virt-launcher")
    copies = {"usr/bin/node-labeller.sh": ("node-labeller/node-labeller.sh", 0o755),
              "etc/libvirt/qemu.conf": ("qemu.conf", 0o644),
              "etc/libvirt/virtqemud.conf": ("virtqemud.conf", 0o644),
              "etc/libvirt/hooks/qemu": ("qemu", 0o755),
              "etc/nsswitch.conf": ("nsswitch.conf", 0o644)}
    with open("/etc/ld.so.cache", "rb") as cache:
        generated = {"usr/sbin/virtqemud": (VIRTQEMUD.encode(), 0o755),
                     "etc/passwd": (PASSWD.encode(), 0o644),
                     "etc/group": (GROUP.encode(), 0o644),
                     # Debian ships virtlogd's configuration with libvirt-daemon-system, which the lab does
                     # not install; virt-launcher starts virtlogd with it, and its defaults are what it needs.
                     "etc/libvirt/virtlogd.conf": (b"", 0o644),
                     "etc/ld.so.cache": (cache.read(), 0o644)}
    with tarfile.open(fileobj=handle, mode="w", format=tarfile.PAX_FORMAT) as layer:
        directories = {os.path.dirname(path) for path in files} | {"/etc/libvirt/hooks", "/usr/lib64/qemu-kvm"}
        for directory in sorted({parent for path in directories for parent in parents(path)}):
            if os.path.isdir(directory):
                layer.add(directory, arcname=directory.lstrip("/"), recursive=False, filter=normalised)
            else:
                add_directory(layer, directory.lstrip("/"))
        for name, target in sorted(MERGED.items()):
            info = normalised(tarfile.TarInfo(name), 0o777)
            info.type, info.linkname = tarfile.SYMTYPE, target
            layer.addfile(info)
        own = set(copies) | {"usr/bin/" + binary for binary in LAUNCHER_BINARIES} | set(generated)
        for path in sorted(files):
            if path.lstrip("/") not in own:
                layer.add(path, arcname=path.lstrip("/"), recursive=False, filter=normalised)
        for binary in LAUNCHER_BINARIES:
            layer.add(os.path.realpath(os.path.join(bin_dir, binary)), arcname="usr/bin/" + binary,
                      filter=lambda info: normalised(info, 0o755))
        for name, (relative, mode) in sorted(copies.items()):
            with open(os.path.join(launcher, relative), "rb") as copied:
                add_bytes(layer, name, copied.read(), mode)
        for name, (data, mode) in sorted(generated.items()):
            add_bytes(layer, name, data, mode)
        for directory, mode in (("home/qemu", 0o755), ("root", 0o700), ("tmp", 0o1777), ("var/tmp", 0o1777),
                                ("run", 0o755), ("var/lib/libvirt", 0o755), ("var/log/libvirt", 0o755)):
            add_directory(layer, directory, mode)


def parents(path):
    """Every directory from / down to path, without /."""
    parts = path.strip("/").split("/")
    return ["/" + "/".join(parts[:i]) for i in range(1, len(parts) + 1) if parts[0]]


def file_digest(path):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return "sha256:" + digest.hexdigest()


def main():
    bin_dir, source, output, image_name = sys.argv[1:5]
    arch = node_image.ARCHITECTURES.get(platform.machine(), platform.machine())
    layer_path = output + ".layer"
    with open(layer_path, "wb") as handle:
        write_layer(handle, bin_dir, source, package_files(package_closure(PACKAGES)))
    layer = {"mediaType": node_image.LAYER, "digest": file_digest(layer_path), "size": os.path.getsize(layer_path)}
    blobs = {}
    manifest = node_image.image(blobs, layer, ["/usr/bin/virt-launcher"], image_name, arch)
    files = {"oci-layout": node_image.as_json({"imageLayoutVersion": "1.0.0"}),
             "index.json": node_image.as_json({"schemaVersion": 2, "mediaType": node_image.INDEX,
                                               "manifests": [manifest]})}
    for digest, data in blobs.items():
        files["blobs/sha256/" + digest.split(":", 1)[1]] = data
    with tarfile.open(output + ".tmp", "w") as tar:
        for name in sorted(files):
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(files[name]), 0o644, 0
            tar.addfile(info, io.BytesIO(files[name]))
        tar.add(layer_path, arcname="blobs/sha256/" + layer["digest"].split(":", 1)[1],
                filter=lambda info: normalised(info, 0o644))
    os.remove(layer_path)
    os.replace(output + ".tmp", output)
    json.dump({"image": image_name, "layer": layer}, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
