//go:build !linux

package provider

import "path/filepath"

// A keyReader reads the keys of the folders and records under the claims
// folder; elsewhere than on Linux there are none (keyOf), so the index
// is never used.
type keyReader struct{ root string }

func openKeyReader(root string) *keyReader { return &keyReader{root: root} }

func (k *keyReader) key(rel string) (statKey, error) { return lstatKey(filepath.Join(k.root, rel)) }

func (k *keyReader) close() {}
