"""Packs the lab node's container images without a registry: an OCI image
layout tarball holding two images of one static binary (tests/testbed/servers/
spinner), the pod sandbox image (the binary pauses) and the workload image (it
spins or pauses as its command says), for `ctr images import`.

usage: node_image.py BINARY OUTPUT.tar PAUSE_IMAGE WORKLOAD_IMAGE
"""

import hashlib
import io
import json
import platform
import sys
import tarfile

ARCHITECTURES = {"x86_64": "amd64", "aarch64": "arm64"}
INDEX = "application/vnd.oci.image.index.v1+json"
MANIFEST = "application/vnd.oci.image.manifest.v1+json"
CONFIG = "application/vnd.oci.image.config.v1+json"
LAYER = "application/vnd.oci.image.layer.v1.tar"


def layer_of(binary):
    """One uncompressed layer with the binary at /spinner (fixed times, so
    the same binary always makes the same image)."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as layer:
        with open(binary, "rb") as handle:
            data = handle.read()
        info = tarfile.TarInfo("spinner")
        info.size, info.mode, info.mtime = len(data), 0o755, 0
        layer.addfile(info, io.BytesIO(data))
    return out.getvalue()


def blob(blobs, media_type, data):
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    blobs[digest] = data
    return {"mediaType": media_type, "digest": digest, "size": len(data)}


def as_json(value):
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


def image(blobs, layer, entrypoint, name, arch):
    config = blob(blobs, CONFIG, as_json({
        "architecture": arch, "os": "linux",
        "config": {"Entrypoint": entrypoint, "WorkingDir": "/"},
        "rootfs": {"type": "layers", "diff_ids": [layer["digest"]]}}))
    manifest = blob(blobs, MANIFEST, as_json({"schemaVersion": 2, "mediaType": MANIFEST, "config": config,
                                              "layers": [layer]}))
    return dict(manifest, platform={"architecture": arch, "os": "linux"},
                annotations={"io.containerd.image.name": name, "org.opencontainers.image.ref.name": name})


def main():
    binary, output, pause_image, workload_image = sys.argv[1:5]
    arch = ARCHITECTURES.get(platform.machine(), platform.machine())
    blobs = {}
    layer = blob(blobs, LAYER, layer_of(binary))
    manifests = [image(blobs, layer, ["/spinner", "pause"], pause_image, arch),
                 image(blobs, layer, ["/spinner"], workload_image, arch)]
    files = {"oci-layout": as_json({"imageLayoutVersion": "1.0.0"}),
             "index.json": as_json({"schemaVersion": 2, "mediaType": INDEX, "manifests": manifests})}
    for digest, data in blobs.items():
        files["blobs/sha256/" + digest.split(":", 1)[1]] = data
    with tarfile.open(output, "w") as tar:
        for name in sorted(files):
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(files[name]), 0o644, 0
            tar.addfile(info, io.BytesIO(files[name]))


if __name__ == "__main__":
    main()
