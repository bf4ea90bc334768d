"""Waits for a vSphere task the lab's vcsim runs, for the tests' own set-up
and clean-up. pyVim.task.WaitForTask reads a task that is still running by
its method's name as a managed method (info.name.info.name); vcsim names
methods pyVmomi does not know (an UnknownManagedMethod, which has no
`info`), so on a loaded machine, where a CreateVM_Task was still running
at the first look, the wait itself failed with an AttributeError."""

import time

from pyVmomi import vim


def wait_for_task(task, timeout=120):
    """The task's result once it succeeded; its fault raised if it failed."""
    deadline = time.monotonic() + timeout
    while True:
        info = task.info
        if info.state == vim.TaskInfo.State.success:
            return info.result
        if info.state == vim.TaskInfo.State.error:
            raise info.error
        if time.monotonic() > deadline:
            raise AssertionError("vSphere task %s still %s after %d s" % (info.key, info.state, timeout))
        time.sleep(0.1)
