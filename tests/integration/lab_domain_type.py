"""The domain type the lab's guests run as, as `tests/testbed/lab up libvirt`
decided it (kvm where /dev/kvm works, qemu's TCG otherwise): guests a test
defines and starts itself run the same way as the lab's."""

import os

from lab_logs import LAB_HOME


def lab_domain_type():
    try:
        with open(os.path.join(LAB_HOME, "state", "libvirt-domain-type")) as handle:
            return handle.read().strip() or "qemu"
    except OSError:
        return "qemu"
