"""kubevirt_config on the lab's real KubeVirt CR, judged by what
virt-controller renders from it: a changed cpuAllocationRatio is the CPU
request of the next VM's launcher pod (vCPUs / ratio), while a launcher
already running keeps the request it was started with (a pod's request
changes only by a resize, which KubeVirt does not make for this). The
test puts the CR back as it found it."""

from kubernetes import client

KUBEVIRT_CR = {"namespace": "kubevirt", "name": "kubevirt"}


def compute_cpu_request(kubevirt, name):
    return kubevirt.compute_spec(name).resources.requests["cpu"]


def test_a_changed_cpu_allocation_ratio_is_the_cpu_request_of_the_next_launcher(run_as, kubevirt, kube_admin):
    before = run_as("admin", "kubevirt_config", dict(KUBEVIRT_CR), check=True)
    assert not before.get("failed"), before
    ratio = before["effective"]["cpu_allocation_ratio"]
    running = kubevirt.vm("idle")
    assert compute_cpu_request(kubevirt, running) == "%dm" % (1000 // ratio)

    changed = run_as("admin", "kubevirt_config", dict(KUBEVIRT_CR, cpu_allocation_ratio=4))
    try:
        assert changed["changed"] and changed["after"]["cpu_allocation_ratio"] == 4, changed
        custom = client.CustomObjectsApi(kube_admin)
        cr = custom.get_namespaced_custom_object("kubevirt.io", "v1", "kubevirt", "kubevirts", "kubevirt")
        assert cr["spec"]["configuration"]["developerConfiguration"]["cpuAllocationRatio"] == 4
        started = kubevirt.vm("idle")
        assert compute_cpu_request(kubevirt, started) == "250m"
        assert compute_cpu_request(kubevirt, running) == "%dm" % (1000 // ratio)
    finally:
        if before["before"]["cpu_allocation_ratio"] is None:
            put_back = run_as("admin", "kubevirt_config", dict(KUBEVIRT_CR, clear=["cpu_allocation_ratio"]))
        else:
            put_back = run_as("admin", "kubevirt_config",
                              dict(KUBEVIRT_CR, cpu_allocation_ratio=before["before"]["cpu_allocation_ratio"]))
        assert not put_back.get("failed"), put_back
