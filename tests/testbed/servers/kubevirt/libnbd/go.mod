// Test server only: stands in for libnbd's Go bindings, which the Go module
// proxy does not serve. KubeVirt's virt-launcher links them only for the
// changed-block map of incremental backups, which the lab never asks for.
module libguestfs.org/libnbd

go 1.24.0
