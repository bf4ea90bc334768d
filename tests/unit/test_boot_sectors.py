"""The guests' programs (tests/testbed/boot_sectors.py): each is a boot
sector the BIOS accepts, and until_stopped's bytes are its source,
guests/until_stopped.s, as binutils assembles it."""

import os
import shutil
import subprocess

import pytest

import boot_sectors

SOURCE = os.path.join(os.path.dirname(os.path.abspath(boot_sectors.__file__)), "guests", "until_stopped.s")


@pytest.mark.parametrize("program", sorted(boot_sectors.PROGRAMS))
def test_each_program_is_a_boot_sector_of_the_size_asked(tmp_path, program):
    disk = tmp_path / "disk.img"
    boot_sectors.write_disk(str(disk), program, 1 << 20)
    data = disk.read_bytes()
    assert len(data) == 1 << 20 and data[510:512] == b"\x55\xaa"
    assert data.startswith(boot_sectors.PROGRAMS[program]) and not any(data[512:])


def test_stop_sets_the_flag_until_stopped_reads_and_nothing_else(tmp_path):
    disk = tmp_path / "disk.img"
    boot_sectors.write_disk(str(disk), "until_stopped", 1 << 20)
    before = disk.read_bytes()
    boot_sectors.stop(str(disk))
    after = disk.read_bytes()
    assert after[boot_sectors.STOP_FLAG_OFFSET] == 1
    assert [i for i in range(len(after)) if after[i] != before[i]] == [boot_sectors.STOP_FLAG_OFFSET]


def test_until_stopped_is_its_source_assembled(tmp_path):
    if not (shutil.which("as") and shutil.which("ld")):
        pytest.fail("binutils (as, ld) is needed to assemble %s; scripts/bootstrap installs it" % SOURCE)
    subprocess.run(["as", "--32", "-o", str(tmp_path / "g.o"), SOURCE], check=True)
    subprocess.run(["ld", "-m", "elf_i386", "-e", "start", "-Ttext", "0x7c00", "--oformat", "binary",
                    "-o", str(tmp_path / "g.bin"), str(tmp_path / "g.o")], check=True)
    assert (tmp_path / "g.bin").read_bytes() == boot_sectors.PROGRAMS["until_stopped"]
