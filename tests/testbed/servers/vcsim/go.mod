// Test server only: govmomi's vSphere simulator for the lab.
module overcommit.test/vcsim

go 1.25.0

require github.com/vmware/govmomi v0.52.0

require github.com/google/uuid v1.6.0 // indirect
