# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The guests the benchmarks run on the lab's libvirtd: one vCPU, no OS, a
512-byte boot sector as their whole disk."""

GUEST_XML = """<domain type='qemu'>
  <name>{name}</name>
  <memory unit='MiB'>16</memory>
  <vcpu placement='static'>1</vcpu>
  <os><type arch='x86_64' machine='pc'>hvm</type><boot dev='hd'/></os>
  <devices>
    <emulator>/usr/bin/qemu-system-x86_64</emulator>
    <disk type='file' device='disk'><driver name='qemu' type='raw'/><source file='{disk}'/>
      <target dev='hda' bus='ide'/></disk>
  </devices>
</domain>"""


def boot_sector(code):
    """A disk of one boot sector running `code` (machine code, real mode)."""
    return code + bytes(510 - len(code)) + b"\x55\xaa"


# cli; hlt; jmp back: halts for good.
IDLE_BOOT_SECTOR = boot_sector(b"\xfa\xf4\xeb\xfd")
