// Package registration is the record that registers a repository with
// majlis, <git-common-dir>/majlis/repository.json: its format, its
// checks, and finding it from a worktree without running git (Find), for
// the programs that must not compile the engine (package serverctl, and
// through it the client).
package registration

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/majlis-dev/majlis/internal/durable"
)

// The record: its kind, format and file name in the state folder.
const (
	Kind     = "repository"
	Format   = "majlis.repository/1"
	FileName = "repository.json"
)

// A Registration registers a repository: written once by 'majlis init'.
type Registration struct {
	Format        string    `json:"format"`
	ID            string    `json:"id"`
	CommonDir     string    `json:"common_dir"`
	WorkspaceRoot string    `json:"workspace_root"`
	CreatedAt     time.Time `json:"created_at"`
	// MainWorktree is the main worktree's top level, recorded at init
	// (git cannot say where it is when the git directory lives apart);
	// empty for a bare repository, and in registrations made before
	// majlis recorded it.
	MainWorktree string `json:"main_worktree,omitempty"`
}

// Check validates a decoded registration's values.
func (r *Registration) Check() error {
	if r.ID == "" || r.CommonDir == "" || r.WorkspaceRoot == "" || r.CreatedAt.IsZero() {
		return errors.New("incomplete registration")
	}
	if !filepath.IsAbs(r.CommonDir) || !filepath.IsAbs(r.WorkspaceRoot) || (r.MainWorktree != "" && !filepath.IsAbs(r.MainWorktree)) {
		return errors.New("paths must be absolute")
	}
	return nil
}

// Decode unseals a registration record and checks it; the error says
// what is wrong with it (callers name the file).
func Decode(data []byte) (*Registration, error) {
	var r Registration
	if _, _, err := durable.Unseal(data, Kind, Format, &r); err != nil {
		return nil, err
	}
	if err := r.Check(); err != nil {
		return nil, fmt.Errorf("%s object: %w", Kind, err)
	}
	return &r, nil
}
