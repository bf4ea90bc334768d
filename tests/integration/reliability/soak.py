"""The soak run of the state machines (state_machines.py): COUNT random
sequences per platform against the lab, in batches; a batch that fails is
counted and the run goes on with new sequences. Prints, per platform, how
many sequences ran and how many failed, and exits 1 when any failed.

    python soak.py [COUNT] [PLATFORM...]     (scripts/soak runs it)"""

import importlib.util
import os
import re
import sys
import time
import traceback

from state_machines import MACHINES, REQUESTER, platform_env, run_machine

BATCH = 100
STEPS = 10
# A record by someone else than the machines in a failure's message: another
# writer (a test run of its own on the same lab guest) acted meanwhile.
OTHER_WRITER = re.compile(r"'by': '(?!%s')([^']*)'" % re.escape(REQUESTER))


def soak(platform, count, lab, out=sys.stdout):
    machine = MACHINES[platform]
    ran = failed = 0
    started = time.monotonic()
    with platform_env(platform, lab):
        while ran < count:
            before = machine.sequences
            try:
                run_machine(machine, min(BATCH, count - ran), STEPS, derandomize=False)
            except Exception:  # a failed sequence: reported, and the soak goes on
                failed += 1
                # Hypothesis replays the failing sequence once to report it.
                ran += max(1, machine.sequences - before - 1)
                text = traceback.format_exc(limit=1)
                other = OTHER_WRITER.search(text)
                note = " (the object carried a record by %r: another writer acted meanwhile)" % other.group(1) if other else ""
                out.write("%s: a sequence failed%s:\n%s\n" % (platform, note, text[-3000:]))
            else:
                ran += machine.sequences - before
            elapsed = time.monotonic() - started
            out.write("%s: %d sequences so far, %d failed (%.0f s)\n" % (platform, ran, failed, elapsed))
            out.flush()
    return ran, failed, time.monotonic() - started


def lab_env():
    """The lab's connection details, read as the integration tests read them
    (tests/integration/conftest.py)."""
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "conftest.py")
    spec = importlib.util.spec_from_file_location("integration_conftest", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return dict(module.LAB)


def main(argv):
    count = int(argv[1]) if len(argv) > 1 else 1000
    platforms = argv[2:] or sorted(MACHINES)
    unknown = [p for p in platforms if p not in MACHINES]
    if count < 1 or unknown:
        sys.stderr.write("usage: soak.py [COUNT>=1] [%s...]\n" % "|".join(sorted(MACHINES)))
        return 2
    lab = lab_env()
    totals = [(platform,) + soak(platform, count, lab) for platform in platforms]
    for platform, ran, failed, seconds in totals:
        print("%-10s %5d sequences ran, %d failed, in %.0f s" % (platform, ran, failed, seconds))
    return 1 if any(failed for _platform, _ran, failed, _seconds in totals) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
