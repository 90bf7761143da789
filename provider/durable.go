package provider

import (
	"errors"
	"os"
	"path/filepath"
)

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// mkdirDurable makes dir and any missing parents, fsyncing the folder that
// gained each new entry, so that a record published inside it (which
// fsyncs only dir itself) survives a power loss with the folder that holds
// it.
func mkdirDurable(dir string) error {
	if _, err := os.Lstat(dir); err == nil {
		return nil
	}
	parent := filepath.Dir(dir)
	if parent != dir {
		if err := mkdirDurable(parent); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	return syncDir(parent)
}
