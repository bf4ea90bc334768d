# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What one cycle of the closed loop costs, and how it grows with the hosts
one control node steers, in one run on the lab.

The cycle is playbooks/closed_loop.yml in mode=dry_run with kubernetes=true
(every read and decision, no action), as an AWX schedule or a polling
rulebook runs it, for inventories of 1, 4 and 16 hypervisor hosts. The lab
has one hypervisor, so every host of an inventory is the lab's libvirtd
reached as a host of its own (ansible_connection local, its own name, each
standing for one of the lab's Kubernetes nodes): each host's reads, module
runs and decisions are real; what the lab cannot give is N machines' worth
of CPU, so the modules of all hosts run on this one, and the control node's
own share is what the playbook costs beyond them. The Kubernetes API is
reached through a counting front (tests/integration/k8s/apiproxy.py) so that
every request a cycle sends is counted.

Per inventory size it prints: the cycle's wall time (median of --cycles),
CPU seconds it took on this machine (ansible-playbook and every module it
ran, user + system), the largest resident memory of any one of those
processes, Kubernetes API requests, and the cycles a minute one control node
sustains back to back; then each figure per host beside the one-host cycle
(the baseline: one host per cycle, as the polling rulebook runs it on each
hypervisor).

    source scripts/lib.sh
    $VENV/bin/python bench/loop_scale.py [--hosts 1 4 16] [--cycles 3] [--forks 5] [--json FILE]
    $VENV/bin/python bench/loop_scale.py --from bench/recorded/loop_scale_lab.json

Needs the lab (tests/testbed/lab up libvirt kube) and the machine to itself.
"""

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration", "k8s"))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))

from apiproxy import ApiProxy, kubeconfig_parts  # noqa: E402

LAB_ENV = os.path.expanduser(os.environ.get("OVERCOMMIT_LAB_HOME", "~/.cache/overcommit-lab")) + "/lab.env"
NODES = ("lab-node-a", "lab-node-b")


def lab_env():
    env = {}
    with open(LAB_ENV) as handle:
        for line in handle:
            line = line.strip()
            if line.startswith("export "):
                line = line[len("export "):]
            if "=" in line and not line.startswith("#"):
                key, value = line.split("=", 1)
                env[key] = value.strip("'\"")
    return env


def inventory(path, hosts, forks):
    """An inventory of `hosts` hypervisor hosts, each the lab's libvirtd."""
    members = dict(("lab-hv-%02d" % number, {"libvirt_uri": "qemu:///system",
                                             "kubernetes_node": NODES[number % len(NODES)]})
                   for number in range(1, hosts + 1))
    with open(path, "w") as handle:
        yaml.safe_dump({"all": {"vars": {"ansible_connection": "local",
                                         "ansible_python_interpreter": sys.executable},
                                "children": {"hypervisors": {"hosts": members},
                                             "controllers": {"hosts": {"localhost": None}}}}}, handle)
    return path


def children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss


def cycle(command, env, proxy):
    """One cycle: (wall seconds, CPU seconds, API requests)."""
    cpu_before, _rss = children_cpu()
    requests_before = len(proxy.requests)
    started = time.monotonic()
    done = subprocess.run(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False)
    wall = time.monotonic() - started
    if done.returncode:
        raise SystemExit("a cycle failed (exit %d):\n%s" % (done.returncode, done.stdout[-3000:]))
    cpu_after, _rss = children_cpu()
    return wall, cpu_after - cpu_before, len(proxy.requests) - requests_before


def measure(sizes, cycles, forks):
    lab = lab_env()
    server, ca_cert, token = kubeconfig_parts(lab["OVERCOMMIT_KUBECONFIG_OPERATOR"])
    proxy = ApiProxy(server, ca_cert).__enter__()
    bin_dir = os.path.dirname(sys.executable)
    env = dict(os.environ, **{"ANSIBLE_COLLECTIONS_PATH": os.path.join(ROOT, "collections"), "ANSIBLE_NOCOLOR": "1",
                              "ANSIBLE_FORKS": str(forks), "K8S_AUTH_HOST": proxy.url, "K8S_AUTH_API_KEY": token,
                              "PATH": bin_dir + os.pathsep + os.environ.get("PATH", "")})
    env.pop("K8S_AUTH_KUBECONFIG", None)
    rows = []
    try:
        with tempfile.TemporaryDirectory(prefix="oc-bench-scale-") as work:
            env.setdefault("ANSIBLE_HOME", os.path.join(work, "ansible-home"))
            for size in sizes:
                command = [os.path.join(bin_dir, "ansible-playbook"), "-i",
                           inventory(os.path.join(work, "hosts-%d.yml" % size), size, forks),
                           os.path.join(ROOT, "playbooks", "closed_loop.yml"), "-e", "mode=dry_run",
                           "-e", "kubernetes=true", "-e", "samples=2", "-e", "interval=3"]
                cycle(command, env, proxy)  # warms the caches a first run fills
                runs = [cycle(command, env, proxy) for _number in range(cycles)]
                rows.append({"hosts": size, "wall": [r[0] for r in runs], "cpu": [r[1] for r in runs],
                             "requests": [r[2] for r in runs]})
                print("%s  %d hosts measured" % (time.strftime("%H:%M:%S"), size), file=sys.stderr)
    finally:
        proxy.__exit__(None, None, None)
    return {"forks": forks, "cpus": os.cpu_count(), "samples": 2, "interval": 3, "rows": rows,
            "max_rss_mib": round(children_cpu()[1] / 1024.0, 1)}


def report(record):
    print("one closed-loop cycle (closed_loop.yml, mode=dry_run, kubernetes=true, 2 rounds 3 s apart), "
          "median of %d cycles; forks %d; %d CPUs; every host the lab's libvirtd"
          % (len(record["rows"][0]["wall"]), record["forks"], record["cpus"]))
    print("  %-6s %-10s %-12s %-14s %-14s %-16s %s" % (
        "hosts", "wall s", "CPU s", "CPU s / host", "API requests", "requests / host", "cycles / min"))
    base = record["rows"][0]
    base_cpu = statistics.median(base["cpu"]) / base["hosts"]
    for row in record["rows"]:
        wall, cpu = statistics.median(row["wall"]), statistics.median(row["cpu"])
        requests = statistics.median(row["requests"])
        print("  %-6d %-10.1f %-12.1f %-14s %-14d %-16.1f %.1f" % (
            row["hosts"], wall, cpu, "%.2f (%.2fx)" % (cpu / row["hosts"], cpu / row["hosts"] / base_cpu),
            requests, requests / row["hosts"], 60.0 / wall))
    sizes = [row["hosts"] for row in record["rows"]]
    if len(set(sizes)) > 1:
        # A line through the sizes' CPU: how the cost grows with hosts. Every
        # process ran here, so it does not tell the hypervisors' share apart.
        cpus = [statistics.median(row["cpu"]) for row in record["rows"]]
        mean_size, mean_cpu = statistics.mean(sizes), statistics.mean(cpus)
        slope = sum((x - mean_size) * (y - mean_cpu) for x, y in zip(sizes, cpus)) / \
            sum((x - mean_size) ** 2 for x in sizes)
        print("  least-squares line through the sizes (a fit, not a measured split): %.2f s + %.2f s per host"
              % (mean_cpu - slope * mean_size, slope))
    print("  largest resident memory of one process of any cycle: %.0f MiB (up to forks + 1 at once)"
          % record["max_rss_mib"])
    print("  baseline: the %d-host cycle (a polling rulebook runs a 1-host cycle on each hypervisor); "
          "the x figure is CPU per host against it" % base["hosts"])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--hosts", type=int, nargs="+", default=[1, 4, 16])
    parser.add_argument("--cycles", type=int, default=3)
    parser.add_argument("--forks", type=int, default=5)
    parser.add_argument("--json", help="also write the run here")
    parser.add_argument("--from", dest="recorded", help="report on a run written by --json instead of measuring")
    args = parser.parse_args()
    if args.recorded:
        with open(args.recorded) as handle:
            record = json.load(handle)
    else:
        if sorted(args.hosts) != args.hosts or args.hosts[0] < 1 or args.cycles < 1:
            parser.error("--hosts: sizes from 1 up, in increasing order; --cycles: 1 or more")
        record = measure(args.hosts, args.cycles, args.forks)
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(record, handle, indent=1)
    report(record)


if __name__ == "__main__":
    main()
