package images

import (
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// LayoutPrefix marks a store that is an OCI image layout on disk, as
// config (snapshots.store) and the session spec (contract.Snapshot.Store)
// write it: "oci:/abs/dir".
const LayoutPrefix = "oci:"

// OpenStore opens a store named as config and the spec name it: "oci:" and
// an absolute directory (created if missing), or a registry repository
// prefix. opts apply to a registry store only (tests pass a transport).
func OpenStore(store string, opts ...remote.Option) (Store, error) {
	if dir, ok := strings.CutPrefix(store, LayoutPrefix); ok {
		s, err := NewLayoutStore(dir)
		if err != nil {
			return nil, fmt.Errorf("opening snapshot store %s: %w", store, err)
		}
		return s, nil
	}
	s, err := NewRegistryStore(store, opts...)
	if err != nil {
		return nil, fmt.Errorf("opening snapshot store %s: %w", store, err)
	}
	return s, nil
}
