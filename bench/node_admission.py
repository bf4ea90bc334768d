# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Gate and open N throwaway Node objects (500 by default) on the lab's
kube-apiserver three ways, each as an otherwise identical one-task playbook
timed end to end (ansible-playbook start to exit), and print the figures side
by side:

  module   overcommit.control.node_admission, all nodes in one task
  (a)      kubernetes.core.k8s_taint looped over the nodes, one task
  (b)      a plain kubernetes-client script making the same reads and
           patches (bench/node_admission_client.py), run by one command task

Targets: module at least 10x faster than (a), at most 1.5x (b).
The nodes carry a label unique to the run and are deleted afterwards.

    source scripts/lib.sh; source ~/.cache/overcommit-lab/lab.env
    $VENV/bin/python bench/node_admission.py [--nodes 500]

The k8s_taint loop dominates: about 2 s per node and phase on a 2-core
machine, so the default run takes about half an hour.
"""

import argparse
import json
import os
import sys
import tempfile
import uuid

from kubernetes import client, config

from timing import timed_playbook, write_play

HERE = os.path.dirname(os.path.abspath(__file__))
TAINT = {"key": "overcommit.control/gated", "effect": "NoSchedule"}
BENCH_LABEL = "overcommit.bench/run"


def task_for(variant, phase, selector, names_file, kubeconfig):
    if variant == "module":
        args = {"label_selector": selector, "state": "gated" if phase == "gate" else "open",
                "reason": "bench", "max_gated_share": 1.0, "kubeconfig": kubeconfig}
        return {"name": "node_admission", "overcommit.control.node_admission": args}
    if variant == "k8s_taint":
        return {"name": "k8s_taint per node", "loop": "{{ lookup('file', '%s') | from_json }}" % names_file,
                "kubernetes.core.k8s_taint": {"name": "{{ item }}", "taints": [TAINT], "kubeconfig": kubeconfig,
                                              "state": "present" if phase == "gate" else "absent"}}
    script = os.path.join(HERE, "node_admission_client.py")
    return {"name": "plain kubernetes-client script",
            "ansible.builtin.command": {"argv": ["{{ ansible_playbook_python }}", script, phase, selector,
                                                 kubeconfig]}}


def gated_count(core, selector):
    return sum(1 for node in core.list_node(label_selector=selector).items
               if any(t.key == TAINT["key"] for t in node.spec.taints or []))


def create_nodes(core, run, count):
    names = ["oc-bench-%s-%03d" % (run, index) for index in range(count)]
    for name in names:
        core.create_node({"metadata": {"name": name, "labels": {BENCH_LABEL: run}},
                          "spec": {"taints": [{"key": "example.com/foreign", "effect": "NoSchedule"}]}})
    return names


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--kubeconfig", default=os.environ.get("K8S_AUTH_KUBECONFIG"))
    options = parser.parse_args()
    if not options.kubeconfig:
        sys.exit("no kubeconfig: source ~/.cache/overcommit-lab/lab.env or pass --kubeconfig")
    core = client.CoreV1Api(config.new_client_from_config(config_file=options.kubeconfig))
    run = uuid.uuid4().hex[:8]
    selector = "%s=%s" % (BENCH_LABEL, run)
    figures = {}
    workdir = tempfile.mkdtemp(prefix="bench-node-admission-")
    try:
        names = create_nodes(core, run, options.nodes)
        names_file = os.path.join(workdir, "names.json")
        with open(names_file, "w") as handle:
            json.dump(names, handle)
        print("%d Node objects labelled %s; each figure is one ansible-playbook run, start to exit"
              % (len(names), selector), flush=True)
        for variant in ("module", "script", "k8s_taint"):
            for phase, expected in (("gate", len(names)), ("open", 0)):
                task = task_for(variant, phase, selector, names_file, options.kubeconfig)
                seconds = timed_playbook(write_play(workdir, task))
                found = gated_count(core, selector)
                if found != expected:
                    sys.exit("%s %s left %d nodes gated, expected %d" % (variant, phase, found, expected))
                figures[(variant, phase)] = seconds
                print("  %-9s %-4s %8.2f s" % (variant, phase, seconds), flush=True)
    finally:
        core.delete_collection_node(label_selector=selector)
    print()
    row = "%-6s %12.2f %14.2f %12.2f %15.1fx %13.2fx"
    print("%-6s %12s %14s %12s %16s %14s" % ("phase", "module (s)", "(a) k8s_taint", "(b) script",
                                             "(a)/module", "module/(b)"))
    for phase in ("gate", "open"):
        module, taint, script = (figures[(v, phase)] for v in ("module", "k8s_taint", "script"))
        print(row % (phase, module, taint, script, taint / module, module / script))
    module, taint, script = (sum(figures[(v, p)] for p in ("gate", "open")) for v in ("module", "k8s_taint", "script"))
    print(row % ("total", module, taint, script, taint / module, module / script))
    print("targets: (a)/module >= 10x: %s; module/(b) <= 1.5x: %s"
          % ("met" if taint / module >= 10 else "NOT met", "met" if module / script <= 1.5 else "NOT met"))


if __name__ == "__main__":
    main()
