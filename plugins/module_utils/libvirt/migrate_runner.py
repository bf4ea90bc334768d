# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""libvirt_migrate's runner: judges every domain's move against the target
as it is (domain/migration.py) before moving any, then moves the ones it
may, one at a time, each under its lock, and reads each on the target
afterwards: the collection's records and the CPU tuning must arrive as they
left."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from ansible_collections.overcommit.control.plugins.module_utils.common import fleet
from ansible_collections.overcommit.control.plugins.module_utils.domain.migration import records_of, refusal
from ansible_collections.overcommit.control.plugins.module_utils.libvirt import domain_xml, plan
from ansible_collections.overcommit.control.plugins.module_utils.libvirt.client import ERR_NO_DOMAIN
from ansible_collections.overcommit.control.plugins.module_utils.libvirt.client import LibvirtClient, LibvirtClientError
from ansible_collections.overcommit.control.plugins.module_utils.libvirt.domain_xml import CONFIG, LIVE
from ansible_collections.overcommit.control.plugins.module_utils.libvirt.lock import DomainLocks
from ansible_collections.overcommit.control.plugins.module_utils.libvirt.reader import describe_domains, lookup


def connect_target(uri):
    try:
        return LibvirtClient(uri)
    except LibvirtClientError as exc:
        raise LibvirtClientError("cannot connect to the target %s: %s" % (uri, exc), exc.code)


def carried(client, domain, persistent):
    """What a move must carry exactly: the collection's metadata and the CPU
    tuning, of the running definition and (for a persistent domain) the
    stored one."""
    what = {"live records": domain_xml.collection_metadata(client.definition(domain, LIVE)),
            "live tuning": plan.pick(client.scheduler_parameters(domain, LIVE))}
    if persistent:
        what.update({"stored records": domain_xml.collection_metadata(client.definition(domain, CONFIG)),
                     "stored tuning": plan.pick(client.scheduler_parameters(domain, CONFIG))})
    return what


class DomainMigrateRunner(object):
    """One task: many domains of this host (client) to one target
    (target_client)."""

    def __init__(self, client, request, target_client):
        self.client = client
        self.target_client = target_client
        self.request = request
        self.locks = DomainLocks(request.get("lock_dir") or "")

    def run(self):
        namespace = self.request["class_namespace"]
        self.source = self.client.hostname()
        self.same_host = self.client.host_uuid() == self.target_client.host_uuid()
        self.target = {"name": self.request.get("target_name") or self.target_client.hostname(),
                       "cpus": self.target_client.host_cpu_count(),
                       "vms": describe_domains(self.target_client, [], None, namespace, 0, time.sleep)}
        # Every move is judged before any is made, each counting the ones
        # judged before it as already on the target.
        judged = fleet.each(self.request["domains"], self.one)
        return [self.move(result) if "_domain" in result else result for result in judged]

    def one(self, name, result):
        """Judges one domain's move into `result`; a refusal is its own. A
        domain not here that runs on the target has moved already."""
        try:
            domain = self.client.lookup(name)
        except LibvirtClientError as exc:
            if exc.code == ERR_NO_DOMAIN and any(vm["name"] == name and vm.get("active") for vm in self.target["vms"]):
                result.update(changed=False, already=True, source=self.source, target=self.target["name"],
                              msg="already on %s, not on %s: nothing to move" % (self.target["name"], self.source))
                return
            domain = lookup(self.client, name, self.request["missing"])
        info = describe_domains(self.client, [name], None, self.request["class_namespace"], 0, time.sleep)[0]
        if info.get("failed"):
            raise LibvirtClientError(info["msg"])
        result.update(source=self.source, target=self.target["name"], records=records_of(info),
                      persistent=info["persistent"])
        why = ("%s is the host it runs on (%s reaches this host)" % (self.target["name"], self.request["target_uri"])
               if self.same_host else refusal(info, self.source, self.target, self.request["floor_fraction"],
                                              self.request["max_vcpu_ratio"]))
        if why:
            result.update(changed=False, failed=True, refused=True, msg=why)
            return
        self.target["vms"].append(info)
        result["_domain"] = domain

    def move(self, result):
        """Moves one domain judged movable, under its lock, and reads it on the
        target; the result says what moved and what did not arrive."""
        domain = result.pop("_domain")
        name = result["name"]
        if self.request["check_mode"]:
            return dict(result, changed=True)
        try:
            with self.locks.hold(self.client.uuid(domain), name):
                before = carried(self.client, domain, result["persistent"])
                self.client.migrate(domain, self.request["target_uri"], self.request["tunnelled"])
        except LibvirtClientError as exc:
            return dict(result, changed=False, failed=True, msg="not moved (it still runs on %s): %s" % (
                self.source, exc))
        try:
            after = carried(self.target_client, self.target_client.lookup(name), result["persistent"])
        except LibvirtClientError as exc:
            return dict(result, changed=True, failed=True, msg="moved to %s, but it cannot be read there: %s" % (
                self.target["name"], exc))
        lost = [part for part in sorted(before) if before[part] != after.get(part)]
        if lost:
            return dict(result, changed=True, failed=True, lost=lost, msg="moved to %s, but its %s did not arrive "
                        "as they left" % (self.target["name"], " and ".join(lost)))
        return dict(result, changed=True)
