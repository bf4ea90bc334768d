"""The programs the lab's guests run: no OS, the disk's first sector (a
boot sector the BIOS loads at 0x7c00, in real mode) is the whole program.
The lab's libvirt guests, its KubeVirt VM, the demo's and the tests' VMs
get their disks here. Python's standard library only: the lab script runs
it before the lab's virtualenv is needed.

  busy           `jmp $`: spins the first vCPU for good.
  idle           `cli; hlt; jmp`: halts for good.
  until_stopped  spins every vCPU until the first byte of the disk's second
                 sector is not 0 (stop() writes it), reading that sector
                 through the BIOS after every 2^20 turns of its loop, then
                 halts them all: a tenant's job that ends
                 (guests/until_stopped.s is its source).

usage: boot_sectors.py PATH PROGRAM [BYTES]   writes a disk of BYTES (512)
"""

import os
import sys

PROGRAMS = {
    "busy": b"\xeb\xfe",
    "idle": b"\xfa\xf4\xeb\xfd",
    "until_stopped": bytes.fromhex(
        "fa31c08ed88ec08ed0bc007c8816fd7dc606007e00be967cbf0080b90f00f3a40f0116b87c0f20c00c010f22c0bb0800"
        "8ee324fe0f22c031db8ee366bb0003e0fe646766c70300450c00e83e00646766c70308460c00e83200646766c7030846"
        "0c00fbb80102b9020030f68a16fd7dbb007ecd13803e007e00750c66b900001000664975fcebdcfaf4ebfc66b9000010"
        "00664975fcc331c08ed8803e007e0074f9faf4ebfc8d74000000000000000000ffff00000092cf000f00a87c0000"),
}
STOP_FLAG_OFFSET = 512


def write_disk(path, program, size=512):
    """A raw disk of `size` bytes whose boot sector runs `program`. (Disks
    QEMU opens with O_DIRECT, as KubeVirt's, must be whole blocks of the file
    system: a MiB.)"""
    folder = os.path.dirname(path)
    if folder:
        os.makedirs(folder, exist_ok=True)
    code = PROGRAMS[program]
    with open(path, "wb") as disk:
        disk.write(code + bytes(510 - len(code)) + b"\x55\xaa" + bytes(size - 512))


def stop(path):
    """Ends the work of an until_stopped guest: it halts at its next read of the flag."""
    fd = os.open(path, os.O_WRONLY)
    try:
        os.pwrite(fd, b"\x01", STOP_FLAG_OFFSET)
        os.fsync(fd)
    finally:
        os.close(fd)


if __name__ == "__main__":
    write_disk(sys.argv[1], sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 512)
