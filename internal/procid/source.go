package procid

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// A Source says where this host's identity is read from: the files that
// hold its machine id and its boot id. The zero Source reads the system's
// (/etc/machine-id, else /var/lib/dbus/machine-id; the kernel's boot id).
// Another Source makes one machine act as several hosts: tests run two
// hosts of a coordination cluster on one machine, each with a machine id
// of its own.
type Source struct {
	MachineIDFile string // "" means the system's machine id
	BootIDFile    string // "" means the kernel's boot id
}

var source Source

// Use makes s the source of this process's identity. Call it once, before
// any identity is read (Self, Of, Judge); a later call, or one after an
// identity was read, refuses: records already written would name another
// host. Each file must be an absolute path holding one id.
func Use(s Source) error {
	for _, p := range []string{s.MachineIDFile, s.BootIDFile} {
		if p == "" {
			continue
		}
		if err := CheckIDFile(p); err != nil {
			return err
		}
	}
	self.Lock()
	defer self.Unlock()
	if self.o.PID != 0 || source != (Source{}) {
		return errors.New("the identity of this process was read or set already")
	}
	source = s
	return nil
}

// CheckIDFile refuses a file that Use would not take: not an absolute
// path, unreadable, or not holding one id.
func CheckIDFile(p string) error {
	if !filepath.IsAbs(p) {
		return fmt.Errorf("identity file %s is not an absolute path", p)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return fmt.Errorf("identity file %s cannot be read: %w", p, err)
	}
	if !validID(strings.TrimSpace(string(b))) {
		return fmt.Errorf("identity file %s does not hold one id (1 to 128 letters, digits, - or _)", p)
	}
	return nil
}

func validID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	return strings.Trim(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") == ""
}
