"""The metrics_textfile role on the lab's hypervisor, run by ansible-playbook:
the textfile it writes, checked by promtool, and its refusals."""

import os
import subprocess
import sys

import pytest
import yaml

import playbook_forkserver
from run_module import INVENTORY, ROOT

pytestmark = pytest.mark.xdist_group("libvirt")


def run_role(tmp_path, **role_vars):
    play = [{"hosts": "localhost", "gather_facts": False,
             "roles": [{"role": "overcommit.control.metrics_textfile", "vars": role_vars}]}]
    path = tmp_path / "play.yml"
    path.write_text(yaml.safe_dump(play))
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, "collections"))
    command = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", INVENTORY, str(path)]
    return playbook_forkserver.run(command, env=env)


def test_the_textfile_reports_the_lab_guests_and_passes_promtool(tmp_path, busy_guest):
    folder = tmp_path / "textfile"
    folder.mkdir()
    completed = run_role(tmp_path, metrics_textfile_dir=str(folder), metrics_textfile_sample_seconds=1)
    assert completed.returncode == 0, completed.stdout[-3000:]
    text = (folder / "overcommit.prom").read_text()
    assert 'overcommit_vm_cpus_used{host="localhost",vm="oc-lab-busy-1",class="shared"}' in text
    assert 'overcommit_vm_class_info{host="localhost",vm="oc-lab-dedicated-2",class="dedicated"} 1' in text
    busy = [line for line in text.splitlines() if line.startswith('overcommit_vm_cpus_used{host="localhost",vm="oc-lab-busy-1"')]
    assert float(busy[0].split()[-1]) > 0.2  # it spins a whole vCPU
    check = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True, timeout=60,
                           check=False)
    assert check.returncode == 0, check.stdout + check.stderr
    # Replaced atomically: nothing else is left in the folder.
    assert sorted(os.listdir(folder)) == ["overcommit.prom"]


def test_a_missing_folder_or_a_name_node_exporter_ignores_is_refused(tmp_path):
    completed = run_role(tmp_path, metrics_textfile_dir=str(tmp_path / "nowhere"))
    assert completed.returncode != 0 and "the folder exists: False" in completed.stdout
    completed = run_role(tmp_path, metrics_textfile_dir=str(tmp_path), metrics_textfile_file="overcommit.txt")
    assert completed.returncode != 0 and "metrics_textfile_file=overcommit.txt" in completed.stdout
    assert not (tmp_path / "overcommit.txt").exists()


def test_an_unwritable_folder_is_refused_before_anything_is_measured(tmp_path):
    """A read-only filesystem: the tests run as root, whom permission bits do
    not stop."""
    folder = tmp_path / "readonly"
    folder.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(folder)], timeout=60, check=True)
    try:
        completed = run_role(tmp_path, metrics_textfile_dir=str(folder))
    finally:
        subprocess.run(["umount", str(folder)], timeout=60, check=True)
    assert completed.returncode != 0 and "is writable: False" in completed.stdout
    assert "Measure the domains" not in completed.stdout
    blocker = tmp_path / "file"
    blocker.write_text("")
    completed = run_role(tmp_path, metrics_textfile_dir=str(blocker))
    assert completed.returncode != 0 and "is a folder: False" in completed.stdout
