// Package libnbd answers every call of KubeVirt's NBD client (incremental
// backup's block map and reads) with ErrNotBuilt: the lab's virt-launcher is
// built without libnbd, and nothing the lab runs uses backups.
package libnbd

import "errors"

// ErrNotBuilt is what every handle operation returns.
var ErrNotBuilt = errors.New("libnbd is not built into the lab's virt-launcher")

// Meta contexts and extent flags, as libnbd defines them.
const (
	CONTEXT_BASE_ALLOCATION   = "base:allocation"
	CONTEXT_QEMU_DIRTY_BITMAP = "qemu:dirty-bitmap:"
	STATE_HOLE                = 1
	STATE_ZERO                = 2
	STATE_DIRTY               = 1
)

// LibnbdExtent is one extent of a block status reply.
type LibnbdExtent struct {
	Length uint64
	Flags  uint64
}

// Extent64Callback receives the extents of a block status reply.
type Extent64Callback func(metacontext string, offset uint64, entries []LibnbdExtent, nbdErr *int) int

// BlockStatus64Optargs and PreadOptargs are the calls' optional arguments.
type BlockStatus64Optargs struct{}
type PreadOptargs struct{}

// Libnbd is a handle that never connects.
type Libnbd struct{}

// Create fails: there is no libnbd to make a handle with.
func Create() (*Libnbd, error) { return nil, ErrNotBuilt }

func (*Libnbd) Close()                                    {}
func (*Libnbd) AddMetaContext(string) error               { return ErrNotBuilt }
func (*Libnbd) CanMetaContext(string) (bool, error)       { return false, ErrNotBuilt }
func (*Libnbd) GetSize() (uint64, error)                  { return 0, ErrNotBuilt }
func (*Libnbd) SetExportName(string) error                { return ErrNotBuilt }
func (*Libnbd) ConnectUnix(string) error                  { return ErrNotBuilt }
func (*Libnbd) Pread([]byte, uint64, *PreadOptargs) error { return ErrNotBuilt }
func (*Libnbd) BlockStatus64(uint64, uint64, Extent64Callback, *BlockStatus64Optargs) error {
	return ErrNotBuilt
}
