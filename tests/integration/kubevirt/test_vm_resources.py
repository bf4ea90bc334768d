"""kubevirt_vm_resources on a running VM of the lab's real KubeVirt: the
module says the change reaches the VM only at its next restart, KubeVirt's
VM controller then reports exactly that (the RestartRequired condition on
the VM), the running launcher keeps its resources, and the restart gives
the new launcher what the template now says."""

from polling import wait_for


def restart_required(kubevirt, name):
    conditions = kubevirt.read("virtualmachines", name).get("status", {}).get("conditions") or []
    return any(c.get("type") == "RestartRequired" and c.get("status") == "True" for c in conditions)


def test_a_changed_template_is_reported_restart_required_as_kubevirt_reports_it(run_as, kubevirt):
    name = kubevirt.vm("idle")
    pod_before = kubevirt.running_pod(name).metadata.name
    assert "cpu" not in kubevirt.compute_limits(name) and not restart_required(kubevirt, name)

    result = run_as("admin", "kubevirt_vm_resources", {"namespace": kubevirt.namespace, "names": [name],
                                                       "cpu_limit": "1", "force": True})
    assert not result.get("failed"), result
    vm = result["vms"][0]
    assert result["changed"] and vm["restart_required"] and "cpu_limit" in vm["restart_reasons"], vm
    assert vm["restart_required_condition"] is False, vm

    # KubeVirt's own verdict, on the VM; the running launcher is untouched.
    wait_for("KubeVirt's RestartRequired condition on %s" % name, lambda: restart_required(kubevirt, name), 60)
    assert kubevirt.running_pod(name).metadata.name == pod_before and "cpu" not in kubevirt.compute_limits(name)
    again = run_as("admin", "kubevirt_vm_resources", {"namespace": kubevirt.namespace, "names": [name],
                                                      "cpu_limit": "1", "force": True})
    assert not again["changed"] and again["vms"][0]["restart_required_condition"] is True, again

    kubevirt.restart(name)
    assert kubevirt.compute_limits(name)["cpu"] == "1"
    wait_for("the RestartRequired condition of %s gone after the restart" % name,
             lambda: not restart_required(kubevirt, name), 60)
