"""Baseline for bench/libvirt_cputune.py: the same libvirt calls as
overcommit.control.libvirt_cputune makes (read live and config tuning, record
the previous values in the domain metadata, write the cap; restore them and
drop the record), as a plain libvirt-python script with no Ansible module
machinery and no validation.

usage: libvirt_cputune_plain.py throttle|restore URI CPUS DOMAIN...
"""

import json
import sys
import xml.etree.ElementTree as ET

import libvirt

NAMESPACE = "https://overcommit.control/xmlns/bench-plain/1"
LIVE, CONFIG = libvirt.VIR_DOMAIN_AFFECT_LIVE, libvirt.VIR_DOMAIN_AFFECT_CONFIG
KEYS = ("cpu_shares", "vcpu_period", "vcpu_quota", "global_period", "global_quota", "emulator_period",
        "emulator_quota")


def throttle(domain, cpus):
    live = domain.schedulerParametersFlags(LIVE)
    config = domain.schedulerParametersFlags(CONFIG)
    previous = {"live": dict((k, live[k]) for k in KEYS), "config": dict((k, config[k]) for k in KEYS)}
    record = ET.Element("throttle", previous=json.dumps(previous))
    domain.setMetadata(libvirt.VIR_DOMAIN_METADATA_ELEMENT, ET.tostring(record, encoding="unicode"), "bench",
                       NAMESPACE, LIVE | CONFIG)
    quota = int(cpus * 100000)
    domain.setSchedulerParametersFlags({"global_period": 100000, "global_quota": quota}, LIVE)
    domain.setSchedulerParametersFlags({"global_period": 100000, "global_quota": quota}, CONFIG)


def restore(domain):
    record = ET.fromstring(domain.metadata(libvirt.VIR_DOMAIN_METADATA_ELEMENT, NAMESPACE, LIVE))
    previous = json.loads(record.get("previous"))
    domain.setSchedulerParametersFlags(
        dict((k, previous["live"][k]) for k in ("global_period", "global_quota")), LIVE)
    domain.setSchedulerParametersFlags(
        dict((k, previous["config"][k]) for k in ("global_period", "global_quota")), CONFIG)
    domain.setMetadata(libvirt.VIR_DOMAIN_METADATA_ELEMENT, None, None, NAMESPACE, LIVE | CONFIG)


def main():
    action, uri, cpus, names = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4:]
    libvirt.registerErrorHandler(lambda *args: None, None)
    conn = libvirt.open(uri)
    for name in names:
        domain = conn.lookupByName(name)
        if action == "throttle":
            throttle(domain, cpus)
        else:
            restore(domain)
    conn.close()
    print(json.dumps({"changed": True, "domains": len(names)}))


if __name__ == "__main__":
    main()
