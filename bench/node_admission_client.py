# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Baseline (b) of bench/node_admission.py: the reads and writes
node_admission makes, written plainly with the kubernetes client. Gating
lists the fleet (as the module does for its share check) and the selected
nodes, then patches each node's taints and gate annotation with its
resourceVersion, re-reading on 409; opening lists the selected nodes and
patches the taint and annotation away.

    python node_admission_client.py gate|open LABEL_SELECTOR KUBECONFIG
"""

import json
import sys

from kubernetes import client, config
from kubernetes.client.rest import ApiException

KEY = "overcommit.control/gated"
RECORD = "overcommit.control/gate"


def desired(node, action):
    taints = [dict((k, v) for k, v in (("key", t.key), ("value", t.value), ("effect", t.effect)) if v)
              for t in node.spec.taints or []]
    present = any(t["key"] == KEY for t in taints)
    if action == "gate" and not present:
        record = json.dumps({"reason": "bench", "taints": [KEY], "cordoned": False})
        return taints + [{"key": KEY, "effect": "NoSchedule"}], record
    if action == "open" and present:
        return [t for t in taints if t["key"] != KEY] or None, None
    return False, False


def main():
    action, selector, kubeconfig = sys.argv[1:4]
    core = client.CoreV1Api(config.new_client_from_config(config_file=kubeconfig))
    if action == "gate":
        core.list_node()
    changed = 0
    for node in core.list_node(label_selector=selector).items:
        while True:
            taints, record = desired(node, action)
            if taints is False:
                break
            body = {"metadata": {"resourceVersion": node.metadata.resource_version,
                                 "annotations": {RECORD: record}},
                    "spec": {"taints": taints}}
            try:
                core.patch_node(node.metadata.name, body)
                changed += 1
                break
            except ApiException as exc:
                if exc.status != 409:
                    raise
                node = core.read_node(node.metadata.name)
    print(json.dumps({"changed": changed}))


if __name__ == "__main__":
    main()
