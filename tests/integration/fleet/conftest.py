"""The tests on the lab's hypervisor VMs (`tests/testbed/lab up fleet`):
Debian 12 hosts with cgroup v2, reached over SSH as users reach their
hypervisors. scripts/test brings the fleet up for these tests alone, after
the others, and takes it down after them; fleet_hosts.py reads them."""
