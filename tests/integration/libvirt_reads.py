"""What libvirt_cputune_info reports of a lab domain (cap, throttle record,
tuning, class, policy state), read in-process through the collection's own
reader (module_utils/libvirt/reader.describe_domains, the code the module
runs) without a usage sample: for tests that poll a domain while guests
compete for the two cores, where an ansible-playbook per poll would be
contention of its own."""

import time

from ansible_collections.overcommit.control.plugins.module_utils.libvirt import domain_xml
from ansible_collections.overcommit.control.plugins.module_utils.libvirt.client import LibvirtClient
from ansible_collections.overcommit.control.plugins.module_utils.libvirt.reader import describe_domains


def cputune_info(uri, name):
    """libvirt_cputune_info's entry for domain `name` (sample_seconds 0)."""
    client = LibvirtClient(uri)
    try:
        return describe_domains(client, [name], [], domain_xml.CLASS_NAMESPACE, 0, time.sleep)[0]
    finally:
        client.close()
