# -*- coding: utf-8 -*-
# Copyright: overcommit.control contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The policies the simulator compares, each behind one interface: given
the observations of the interval that ended at `now`, the actions for the
next. Pure: no I/O.

  none         no control: what happens if nobody acts;
  naive        a threshold script: cap the VM using the most CPU to a fixed
               value when the host is over a usage threshold, lift the caps
               when it is under a lower one (blind to classes, as such
               scripts are);
  crane_step   Crane's node QoS ensurance: 2 intervals over a usage
               watermark throttle the low-priority (non-dedicated) VMs,
               busiest first, one step (10 %) a cycle until enough is
               released, with a floor, and disable scheduling on the node;
               2 intervals under it and a 300 s cooldown step them back up;
  overcommit   this collection's policy (domain/policy/), its state kept
               as the runners keep it: on each object, between cycles.

An action is (kind, key, cpus, rule): kind cap/lift for a VM key
("host/vm"), gate/open for a host name."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.overcommit.control.plugins.module_utils.domain import actions as action_table
from ansible_collections.overcommit.control.plugins.module_utils.domain import policy
from ansible_collections.overcommit.control.plugins.module_utils.domain.vm_class import DEDICATED


class NoControl(object):
    name = "none"
    description = "no control"

    def __init__(self, hosts, views):
        pass

    def decide(self, now, hosts, views_by_host):
        return []

    def credits(self, key):
        return None


class NaiveThreshold(object):
    name = "naive"
    description = "cap the busiest VM to 1 CPU over 90 % host usage, lift under 70 %"

    def __init__(self, hosts, views, high=0.90, low=0.70, cap_cpus=1.0):
        self.high, self.low, self.cap_cpus = high, low, cap_cpus

    def decide(self, now, hosts, views_by_host):
        actions = []
        for host in hosts:
            views = views_by_host[host["name"]]
            usage = sum(view["used"] for view in views) / host["cpus"]
            capped = [view for view in views if view["cap"] is not None]
            if usage > self.high and not capped:
                top = max(views, key=lambda view: view["used"])
                if top["vcpus"] > self.cap_cpus:
                    actions.append(("cap", top["key"], self.cap_cpus, "naive"))
            elif usage < self.low:
                actions.extend(("lift", view["key"], None, "naive") for view in capped)
        return actions

    def credits(self, key):
        return None


class CraneStep(object):
    name = "crane_step"
    description = "Crane-style: 2-of-2 over a 90 % watermark, step throttle 10 %/cycle, 300 s cooldown"

    def __init__(self, hosts, views, watermark=0.90, trigger=2, restore=2, step=0.10, min_ratio=0.10,
                 cooldown=300.0):
        self.watermark, self.trigger, self.restore = watermark, trigger, restore
        self.step, self.min_ratio, self.cooldown = step, min_ratio, cooldown
        self.over = dict((host["name"], 0) for host in hosts)
        self.under = dict((host["name"], 0) for host in hosts)
        self.last_throttle = dict((host["name"], -1e18) for host in hosts)
        self.gated = dict((host["name"], False) for host in hosts)

    def decide(self, now, hosts, views_by_host):
        actions = []
        for host in hosts:
            name = host["name"]
            views = views_by_host[name]
            usage = sum(view["used"] for view in views)
            if usage > self.watermark * host["cpus"]:
                self.over[name] += 1
                self.under[name] = 0
            else:
                self.under[name] += 1
                self.over[name] = 0
            if self.over[name] >= self.trigger:
                if not self.gated[name]:
                    actions.append(("gate", name, None, "crane_step"))
                    self.gated[name] = True
                need = usage - self.watermark * host["cpus"]
                for view in sorted(views, key=lambda v: -v["used"]):
                    if need <= 0:
                        break
                    if view["class"] == DEDICATED:
                        continue
                    current = view["cap"] if view["cap"] is not None else view["used"]
                    new = max(self.min_ratio * view["vcpus"], current * (1.0 - self.step))
                    if new < current - 1e-6:
                        actions.append(("cap", view["key"], new, "crane_step"))
                        need -= current - new
                        self.last_throttle[name] = now
            elif self.under[name] >= self.restore and now - self.last_throttle[name] >= self.cooldown:
                capped = [view for view in views if view["cap"] is not None]
                for view in capped:
                    new = view["cap"] * (1.0 + self.step)
                    if new >= view["vcpus"]:
                        actions.append(("lift", view["key"], None, "crane_step"))
                    else:
                        actions.append(("cap", view["key"], new, "crane_step"))
                if not capped and self.gated[name]:
                    actions.append(("open", name, None, "crane_step"))
                    self.gated[name] = False
        return actions

    def credits(self, key):
        return None


class Overcommit(object):
    """The collection's policy. The state it returns for each object is kept
    as the runners keep it (on the object) and handed back next cycle."""
    name = policy.NAME
    description = "this collection's policy (docs/policy.md)"

    def __init__(self, hosts, views, params=None):
        self.params = policy.parameters(params)
        self.hosts = [{"name": host["name"], "cpus": host["cpus"], "avg10": None, "avg60": None, "cpus_used": None,
                       "procs_running": None, "paused": False,
                       "memory_full60": None,
                       "node": {"name": host["name"], "gated": False, "effect": None, "policy": {}}}
                      for host in hosts]
        self.by_name = dict((host["name"], host) for host in self.hosts)
        self.views = views
        self.states = {}
        self.last_plan = None

    def decide(self, now, hosts, views_by_host):
        for host in hosts:
            mine = self.by_name[host["name"]]
            mine["avg10"], mine["avg60"] = host["avg10"], host["avg60"]
        for view in self.views:
            view["state"] = self.states.get(view["key"], {})
        plan = policy.decide(self.hosts, self.views, now, self.params, views=True)
        self.last_plan = plan
        for key, state in plan["state"]["vms"].items():
            if state:
                self.states[key] = state
            else:
                self.states.pop(key, None)
        for name, state in plan["state"]["nodes"].items():
            self.by_name[name]["node"]["policy"] = state or {}
        actions = []
        for action in plan["actions"]:
            # What each action does, from the one action table (domain/actions.py).
            effect = action_table.ACTIONS[action["action"]]["effect"]
            if effect == "cap":
                actions.append(("cap", action["object"], action["cpus"], action["rule"]))
            elif effect == "weight":
                actions.append(("weight", action["object"], action["shares"], action["rule"]))
            elif effect == "lift":
                actions.append(("lift", action["object"], None, action["rule"]))
            elif effect in ("gate", "open"):
                # A move (only in plans with moves opted in, never the policy's own) is not replayed.
                node = self.by_name[action["host"]]["node"]
                node["gated"], node["effect"] = effect == "gate", action.get("effect") if effect == "gate" else None
                actions.append((effect, action["host"], None, action["rule"]))
        return actions

    def credits(self, key):
        return self.states.get(key, {}).get("credits")


CONTROLLERS = {
    "none": NoControl,
    "naive": NaiveThreshold,
    "crane_step": CraneStep,
    "overcommit": Overcommit,
}
ORDER = ("none", "naive", "crane_step", "overcommit")
