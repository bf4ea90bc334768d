// Test workload only: the lab node's container images run this binary.
module overcommit.test/spinner

go 1.25.0
