"""Throttle records planted in a lab domain's metadata as a hand edit would
leave them (live and persistent definition), removed again afterwards; and
the policy state a closed-loop cycle leaves on the lab's guests, removed
after the test that ran the cycle."""

import contextlib

import libvirt

THROTTLE_NS = "https://overcommit.control/xmlns/throttle/1"
POLICY_NS = "https://overcommit.control/xmlns/policy/1"
KEYS = {THROTTLE_NS: "overcommit", POLICY_NS: "ocpolicy"}


def metadata_flags(domain):
    return libvirt.VIR_DOMAIN_AFFECT_CONFIG | (libvirt.VIR_DOMAIN_AFFECT_LIVE if domain.isActive() else 0)


def element_of(domain, namespace=THROTTLE_NS):
    """The element under `namespace` per definition (live, config), None where absent."""
    out = {}
    targets = [("config", libvirt.VIR_DOMAIN_AFFECT_CONFIG)]
    if domain.isActive():
        targets.append(("live", libvirt.VIR_DOMAIN_AFFECT_LIVE))
    for target, flags in targets:
        try:
            out[target] = domain.metadata(libvirt.VIR_DOMAIN_METADATA_ELEMENT, namespace, flags)
        except libvirt.libvirtError:
            out[target] = None
    return out


@contextlib.contextmanager
def planted(domain, element_xml, namespace=THROTTLE_NS):
    """The domain carries `element_xml` under `namespace` for the block (it
    must carry none before); the element is removed afterwards."""
    assert all(value is None for value in element_of(domain, namespace).values()), element_of(domain, namespace)
    domain.setMetadata(libvirt.VIR_DOMAIN_METADATA_ELEMENT, element_xml, KEYS[namespace], namespace,
                       metadata_flags(domain))
    try:
        yield
    finally:
        domain.setMetadata(libvirt.VIR_DOMAIN_METADATA_ELEMENT, None, None, namespace, metadata_flags(domain))


@contextlib.contextmanager
def policy_states_removed(conn, prefix="oc-lab-"):
    """A cycle records the policy's state on every domain of the host it
    observed (a guest that only waited for a CPU gets its trigger history):
    afterwards the state goes from every lab domain that had none before, so
    that the next test finds the guests as the lab defined them."""
    before = set(domain.name() for domain in conn.listAllDomains() if domain.name().startswith(prefix)
                 and all(value is None for value in element_of(domain, POLICY_NS).values()))
    try:
        yield
    finally:
        for domain in conn.listAllDomains():
            if domain.name() in before and any(value is not None for value in element_of(domain, POLICY_NS).values()):
                domain.setMetadata(libvirt.VIR_DOMAIN_METADATA_ELEMENT, None, None, POLICY_NS, metadata_flags(domain))
