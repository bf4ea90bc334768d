"""The lab node's CNI plugin (tests/testbed/cni/lab-pod-net) releases an
address however often the runtime asks: containerd tears a sandbox down
more than once (stop, then remove, and again on every retry), and pods torn
down together release side by side. A DEL that failed once left a launcher
pod terminating for good."""

import json
import os
import subprocess
from concurrent.futures import ThreadPoolExecutor

PLUGIN = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "testbed", "cni", "lab-pod-net")


def call(command, container, ipam_dir):
    config = json.dumps({"cniVersion": "1.0.0", "name": "lab", "type": "lab-pod-net", "subnet": "10.244.0",
                         "ipamDir": str(ipam_dir)})
    env = dict(os.environ, CNI_COMMAND=command, CNI_CONTAINERID=container, CNI_NETNS="/nonexistent",
               CNI_IFNAME="eth0", CNI_PATH="/nonexistent")
    return subprocess.run([PLUGIN], input=config, env=env, capture_output=True, text=True, check=False)


def addresses(ipam_dir):
    return dict((name, (ipam_dir / name).read_text().strip()) for name in os.listdir(ipam_dir)
                if not name.startswith("."))


def test_del_releases_only_its_own_address_and_succeeds_again_and_side_by_side(tmp_path):
    (tmp_path / "10.244.0.2").write_text("sandbox-a\n")
    (tmp_path / "10.244.0.3").write_text("sandbox-b\n")
    (tmp_path / "10.244.0.4").write_text("sandbox-c\n")

    first = call("DEL", "sandbox-a", tmp_path)
    assert first.returncode == 0, first.stderr
    assert addresses(tmp_path) == {"10.244.0.3": "sandbox-b", "10.244.0.4": "sandbox-c"}
    again = call("DEL", "sandbox-a", tmp_path)
    assert again.returncode == 0, again.stderr

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda name: call("DEL", name, tmp_path), ["sandbox-b", "sandbox-c"] * 2))
    assert [result.returncode for result in results] == [0, 0, 0, 0], [result.stderr for result in results]
    assert addresses(tmp_path) == {}


def test_del_of_a_network_that_never_gave_an_address_succeeds(tmp_path):
    done = call("DEL", "sandbox-z", tmp_path / "never-made")
    assert done.returncode == 0, done.stderr


def test_version_names_the_versions_it_speaks(tmp_path):
    done = call("VERSION", "", tmp_path)
    assert done.returncode == 0
    assert "1.0.0" in json.loads(done.stdout)["supportedVersions"]
