"""Runs that could not see, or could not act, say so and fail - on the lab's
real libvirtd, with ansible-playbook as operators run the playbooks.

A hypervisor whose libvirtd cannot be reached is one inventory host whose
libvirt_uri names a socket no daemon listens on: the real libvirt client
fails to connect to it, as it does to a stopped daemon (stopping the lab's
own libvirtd would stop every other test's server). The other host is the
lab's hypervisor. The throttle targets are a throwaway running domain,
read with libvirt directly before and after."""

import json

import libvirt
import pytest
import yaml

from run_module import run_playbook

# The plans and cycles read every domain of the lab's host, and the throttle
# targets are the corpus's running spare domain: one after another with the
# other tests of the lab's libvirtd.
pytestmark = pytest.mark.xdist_group("libvirt")

LIVE_OR_CONFIG = libvirt.VIR_DOMAIN_AFFECT_CONFIG
AWAY = "hv-away"


def inventory(tmp_path, groups):
    """An inventory file of `groups` ({group: {host: vars}}), every host on a
    local connection as the lab's own inventory has them."""
    data = {"all": {"vars": {"ansible_connection": "local",
                             "ansible_python_interpreter": "{{ ansible_playbook_python }}"},
                    "children": dict((group, {"hosts": hosts}) for group, hosts in groups.items())}}
    path = tmp_path / ("inventory-%d.yml" % len(list(tmp_path.glob("inventory-*.yml"))))
    path.write_text(yaml.safe_dump(data))
    return str(path)


def two_hypervisors(tmp_path):
    return inventory(tmp_path, {"hypervisors": {
        "lab-hypervisor": {"libvirt_uri": "qemu:///system"},
        AWAY: {"libvirt_uri": "qemu+unix:///system?socket=%s" % (tmp_path / "no-libvirtd.sock")}}})


def output(completed):
    return completed.stdout + completed.stderr


def test_a_plan_over_a_host_whose_libvirtd_is_away_names_it_and_fails_unless_allowed(tmp_path):
    plan_dir = tmp_path / "plan"
    hosts = two_hypervisors(tmp_path)
    completed = run_playbook("recommend.yml", {"plan_dir": str(plan_dir), "samples": 1, "interval": 1},
                             inventory=hosts)
    assert completed.returncode != 0, output(completed)[-3000:]
    plan = json.loads((plan_dir / "plan.json").read_text())
    assert [s["host"] for s in plan["skipped"]] == [AWAY], plan["skipped"]
    reason = plan["skipped"][0]["reason"]
    # The reader's own message, as libvirt gave it.
    assert "libvirt_cputune_info" in reason and "no-libvirtd.sock" in reason, reason
    assert plan["unmeasured"] == dict(plan["unmeasured"], count=1, hosts=2, fail=True)
    assert "not measured: %s" % AWAY in completed.stdout
    assert "1 of 2 hosts" in completed.stdout and "max_unmeasured_share=0" in completed.stdout
    # The operator may allow a share of the fleet to go unmeasured: the plan still names it.
    allowed = run_playbook("recommend.yml", {"plan_dir": str(plan_dir), "samples": 1, "interval": 1,
                                             "max_unmeasured_share": 0.5}, inventory=hosts)
    assert allowed.returncode == 0, output(allowed)[-3000:]
    plan = json.loads((plan_dir / "plan.json").read_text())
    assert [s["host"] for s in plan["skipped"]] == [AWAY] and not plan["unmeasured"]["fail"]


def test_a_cycle_over_a_host_whose_libvirtd_is_away_names_it_and_fails(tmp_path):
    cycle_dir = tmp_path / "cycles"
    completed = run_playbook("closed_loop.yml", {"mode": "dry_run", "samples": 1, "interval": 1,
                                                 "cycle_dir": str(cycle_dir)}, inventory=two_hypervisors(tmp_path))
    assert completed.returncode != 0, output(completed)[-3000:]
    summaries = sorted(cycle_dir.glob("cycle-*.json"))
    assert len(summaries) == 1
    summary = json.loads(summaries[0].read_text())
    assert [s["host"] for s in summary["skipped"]] == [AWAY] and summary["unmeasured"]["fail"]
    assert any(line.startswith("dry run, nothing applied: not measured: %s" % AWAY) for line in summary["lines"])
    assert "nothing to do" not in summary["lines"]


def test_a_cycle_whose_hosts_are_in_another_group_measures_them(tmp_path):
    """cycle_hosts names the group: the cycle reads those hosts, not the
    group hypervisors (which this inventory does not have)."""
    cycle_dir = tmp_path / "cycles"
    away_uri = "qemu+unix:///system?socket=%s" % (tmp_path / "no-libvirtd.sock")
    hosts = inventory(tmp_path, {"kvm": {AWAY: {"libvirt_uri": away_uri}}})
    completed = run_playbook("closed_loop.yml", {"mode": "dry_run", "samples": 1, "interval": 1,
                                                 "cycle_dir": str(cycle_dir), "cycle_hosts": "kvm"}, inventory=hosts)
    assert completed.returncode != 0
    summary = json.loads(sorted(cycle_dir.glob("cycle-*.json"))[0].read_text())
    assert [s["host"] for s in summary["skipped"]] == [AWAY]


def tuning(domain):
    return domain.schedulerParametersFlags(LIVE_OR_CONFIG)


@pytest.mark.parametrize("playbook, groups, extra, message", [
    # Hypervisors in a group the playbook does not target.
    ("throttle.yml", {"kvm": {"lab-hypervisor": {}}}, {"cpus": 0.5, "reason": "INC-1"},
     "no host of the inventory is in hypervisors, the hosts throttle.yml acts on (choose them with -e target_hosts=GROUP)"),
    ("restore.yml", {"kvm": {"lab-hypervisor": {}}}, {},
     "no host of the inventory is in hypervisors, the hosts restore.yml acts on (choose them with -e target_hosts=GROUP)"),
    # KubeVirt's API calls sent to a group with no host.
    ("throttle.yml", {"hypervisors": {"lab-hypervisor": {}}},
     {"kubevirt_vms": ["web-17"], "kubevirt_namespace": "lab", "cpus": 0.5, "reason": "INC-1",
      "kubevirt_hosts": "kubevirt-api"},
     "no host of the inventory is in kubevirt-api, the hosts throttle.yml acts on (choose them with -e "
     "kubevirt_hosts=GROUP)"),
    ("restore.yml", {"hypervisors": {"lab-hypervisor": {}}},
     {"kubevirt_vms": ["web-17"], "kubevirt_namespace": "lab", "kubevirt_hosts": "kubevirt-api"},
     "no host of the inventory is in kubevirt-api, the hosts restore.yml acts on (choose them with -e "
     "kubevirt_hosts=GROUP)"),
])
def test_a_run_whose_target_group_matches_no_host_fails_naming_it_and_changes_nothing(
        tmp_path, spare_domain, playbook, groups, extra, message):
    before = tuning(spare_domain)
    variables = dict({"domains": [spare_domain.name()]} if "kubevirt_vms" not in extra else {}, **extra)
    completed = run_playbook(playbook, variables, inventory=inventory(tmp_path, groups))
    assert completed.returncode != 0 and message in completed.stdout, output(completed)[-3000:]
    assert tuning(spare_domain) == before


def test_an_inventory_written_for_the_old_controllers_group_still_runs_the_kubevirt_play_there_with_a_note(
        tmp_path, spare_domain):
    """Stage 1 ran its KubeVirt plays on `controllers`; every stage now
    calls the API from localhost. An inventory whose controllers group holds
    another host still gets its KubeVirt play run there, and is told how to
    keep that once the old default goes. The VM it names does not exist, so
    the run fails after the play ran on that host, and libvirt is untouched."""
    before = tuning(spare_domain)
    groups = {"hypervisors": {"lab-hypervisor": {}}, "controllers": {"old-api-host": {}}}
    completed = run_playbook("throttle.yml", {"kubevirt_vms": ["oc-no-such-vm"], "kubevirt_namespace": "lab",
                                              "cpus": 0.5, "reason": "INC-1"},
                             inventory=inventory(tmp_path, groups))
    text = output(completed)
    assert completed.returncode != 0 and "[old-api-host]" in text, text[-3000:]
    assert "the controllers group as the hosts of -e kubevirt_hosts is deprecated" in " ".join(text.split()), \
        text[-3000:]
    assert "-e kubevirt_hosts=controllers" in " ".join(text.split())
    assert tuning(spare_domain) == before


@pytest.mark.parametrize("variables, message", [
    ({"domain": ["{vm}"], "cpus": 0.5, "reason": "INC-1"}, "domain is not a variable of throttle.yml: did you mean domains?"),
    ({"domains": ["{vm}"], "cpus": 0.5, "reason": "INC-1", "scpoe": "vcpu"},
     "scpoe is not a variable of throttle.yml: did you mean scope?"),
    ({"domains": [], "cpus": 0.5, "reason": "INC-1"}, "domains=[] is out of range: allowed at least one name"),
    ({"domains": ["{vm}"], "cpus": 0.5, "reason": ""}, "reason='' is out of range: allowed a non-empty text"),
    ({"domains": ["{vm}", "{vm}"], "cpus": 0.5, "reason": "INC-1"}, "allowed each name once"),
    ({"domains": ["{vm}"], "cpus": "abc", "reason": "INC-1"},
     "cpus='abc' is out of range: allowed a number of CPUs above 0, such as 2, 0.5 or \\\"500m\\\""),
])
def test_a_misspelt_empty_or_malformed_variable_fails_naming_it_as_typed_and_changes_nothing(
        tmp_path, spare_domain, variables, message):
    before = tuning(spare_domain)
    given = json.loads(json.dumps(variables).replace("{vm}", spare_domain.name()))
    completed = run_playbook("throttle.yml", given,
                             inventory=inventory(tmp_path, {"hypervisors": {"lab-hypervisor": {}}}))
    assert completed.returncode != 0 and message in completed.stdout, output(completed)[-3000:]
    # The user's own name, in one line: not the role's variable, no Python class, no argument spec.
    assert "throttle_cpus" not in completed.stdout and "_AnsibleTaggedStr" not in completed.stdout
    assert "argument_spec" not in completed.stdout
    assert tuning(spare_domain) == before


def test_millicores_cap_a_libvirt_domain_as_they_cap_a_kubevirt_vm(tmp_path, spare_domain):
    """One rule for a number of CPUs on both platforms: "500m" is 0.5 CPU
    on libvirt too (the spare domain is defined, not running: the cap goes
    to its persistent config)."""
    before = tuning(spare_domain)
    completed = run_playbook("throttle.yml", {"domains": [spare_domain.name()], "cpus": "500m", "reason": "INC-1"},
                             inventory=inventory(tmp_path, {"hypervisors": {"lab-hypervisor": {}}}))
    assert completed.returncode == 0, output(completed)[-3000:]
    assert tuning(spare_domain)["global_quota"] == 50000 and tuning(spare_domain)["global_period"] == 100000
    restored = run_playbook("restore.yml", {"domains": [spare_domain.name()]},
                            inventory=inventory(tmp_path, {"hypervisors": {"lab-hypervisor": {}}}))
    assert restored.returncode == 0, output(restored)[-3000:]
    assert tuning(spare_domain) == before
