package provider

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/majlis-dev/majlis/admission"
	"github.com/majlis-dev/majlis/gitops"
	"github.com/majlis-dev/majlis/internal/durable"
	"github.com/majlis-dev/majlis/internal/registration"
	"github.com/majlis-dev/majlis/pathid"
	"github.com/majlis-dev/majlis/reservation"
	"github.com/majlis-dev/majlis/wire"
)

// A Provider acts on one registered repository. Open it from any worktree
// of the repository; it is cheap, holds no locks between calls, and is
// safe for concurrent use. What it was opened on does not change: read it
// with Repository, StateDir and Worktree.
type Provider struct {
	repo     gitops.Repo  // the worktree it was opened from, and the repository
	reg      Registration // the repository's registration
	stateDir string       // <git-common-dir>/majlis

	leases *reservation.Dir
	now    func() time.Time
	ttl    time.Duration // of reclaim reservations
	host   string        // the host ledger's path; "" for admission's default
	log    *slog.Logger
	// servesOthers: Options.ServesOthers, passed to admission.
	servesOthers bool
	// coordination and etcdEndpoints: Options.Coordination and
	// Options.EtcdEndpoints.
	coordination  func(ctx context.Context, c admission.SharedConfig) (admission.SharedLedger, error)
	etcdEndpoints string
	// hook, set only by tests of this package, runs at every reclaim
	// failpoint (inject).
	hook func(ctx context.Context, point string)
	// main is the main worktree ("" for a bare repository); mainErr
	// is errMainUnknown when it cannot be located (gitdirs.go).
	main    string
	mainErr error

	admMu sync.Mutex
	adm   *admission.Service // opened on first use (liveness.go)

	// records owns the bindings' durable records (records.go).
	records *bindingRecords

	progressFn func(Progress) // progress.go
	// gitProgress receives git's progress meter during checkouts
	// (progress.go).
	gitProgress io.Writer
}

// Repository is what init reports (wire.Repository).
type Repository = wire.Repository

// InitOptions configure Init.
type InitOptions struct {
	// WorkspaceRoot is where workspaces go by default. Empty: the folder
	// <parent of the main worktree>/<repository folder name>.workspaces.
	WorkspaceRoot string
}

// Init registers the repository containing dir: it writes
// <git-common-dir>/majlis/repository.json once. Running it again returns the
// existing registration; asking for another workspace root refuses.
func Init(ctx context.Context, dir string, opts InitOptions) (*Repository, error) {
	repo, err := discover(ctx, "init", dir)
	if err != nil {
		return nil, err
	}
	state := filepath.Join(repo.CommonDir, "majlis")
	if existing, err := readRegistration(state); err == nil {
		if existing.MainWorktree != "" {
			repo.MainWorktree = existing.MainWorktree
		}
	} else if !errors.Is(err, ErrNotInitialized) {
		return nil, err
	} else if repo.MainWorktree, err = locateMain(ctx, "init", repo, nil); errors.Is(err, errMainUnknown) {
		return nil, &Error{Op: "init", Path: repo.CommonDir, Err: ErrInvalidArgument,
			Reason: "the repository's git directory lives apart from its main worktree, which git cannot locate from " + repo.Toplevel,
			Hint:   "initialize it from inside the main worktree", Details: map[string]any{"argument": "main_worktree"}}
	} else if err != nil {
		return nil, err
	}
	root := opts.WorkspaceRoot
	if root != "" {
		if root, err = pathid.Lexical(root); err != nil {
			return nil, &Error{Op: "init", Path: opts.WorkspaceRoot, Err: ErrInvalidArgument, Reason: err.Error()}
		}
	} else {
		if repo.MainWorktree == "" {
			return nil, &Error{Op: "init", Path: repo.CommonDir, Err: ErrInvalidArgument,
				Reason: "the main worktree cannot be located", Hint: "name the workspace root", Details: map[string]any{"argument": "workspace_root"}}
		}
		root = filepath.Join(filepath.Dir(repo.MainWorktree), filepath.Base(repo.MainWorktree)+".workspaces")
	}
	if err := os.MkdirAll(state, 0o755); err != nil {
		return nil, &Error{Op: "init", Path: state, Err: err}
	}
	reg := Registration{Format: formatRepository, ID: newID(), CommonDir: repo.CommonDir,
		WorkspaceRoot: root, CreatedAt: time.Now().UTC(), MainWorktree: repo.MainWorktree}
	data, _, err := seal("repository", &reg)
	if err != nil {
		return nil, err
	}
	err = durable.Publish(state, "repository.json", data)
	if err == nil {
		if err := createJournal(state); err != nil {
			return nil, &Error{Op: "init", Path: filepath.Join(state, journalName), Err: err}
		}
	}
	if errors.Is(err, durable.ErrExists) {
		existing, err := readRegistration(state)
		if err != nil {
			return nil, err
		}
		if opts.WorkspaceRoot != "" && existing.WorkspaceRoot != root {
			return nil, &Error{Op: "init", Path: filepath.Join(state, "repository.json"), Err: ErrAlreadyInit,
				Reason: "registered with workspace root " + existing.WorkspaceRoot + ", not " + root,
				Hint:   "keep the registered workspace root, or give each workspace its path"}
		}
		reg = *existing
	} else if err != nil {
		return nil, err
	}
	return &Repository{ID: reg.ID, CommonDir: reg.CommonDir, StateDir: state, WorkspaceRoot: reg.WorkspaceRoot}, nil
}

// Open opens the registered repository containing dir (any of its
// worktrees, or a folder inside one; "" is the working directory). It
// refuses a repository that 'majlis init' (Init) has not registered
// (ErrNotInitialized) and options it does not accept
// (ErrInvalidArgument). Close the provider when done.
func Open(ctx context.Context, dir string, opts Options) (*Provider, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	repo, err := discover(ctx, "open", dir)
	if err != nil {
		return nil, err
	}
	state := filepath.Join(repo.CommonDir, "majlis")
	reg, err := readRegistration(state)
	if err != nil {
		return nil, err
	}
	if reg.CommonDir != repo.CommonDir {
		return nil, &Error{Op: "open", Path: filepath.Join(state, "repository.json"), Err: ErrIdentity,
			Reason: "registered for " + reg.CommonDir + " but found in " + repo.CommonDir,
			Hint:   "the repository was moved or copied; register the copy with a fresh state folder"}
	}
	main, mainErr := locateMain(ctx, "open", repo, reg)
	if mainErr != nil && !errors.Is(mainErr, errMainUnknown) {
		return nil, mainErr
	}
	leases, err := reservation.Open(filepath.Join(state, "leases"))
	if err != nil {
		return nil, err
	}
	return &Provider{repo: repo, reg: *reg, stateDir: state, leases: leases, main: main, mainErr: mainErr,
		records: newBindingRecords(state, opts.Clock), now: opts.Clock, ttl: opts.ReservationTTL, host: opts.HostLedger, log: opts.Logger, servesOthers: opts.ServesOthers,
		coordination: opts.Coordination, etcdEndpoints: opts.EtcdEndpoints}, nil
}

// Close releases the provider's handles.
func (p *Provider) Close() error {
	err := p.leases.Close()
	p.admMu.Lock()
	defer p.admMu.Unlock()
	if p.adm != nil {
		if aerr := p.adm.Close(); err == nil {
			err = aerr
		}
		p.adm = nil
	}
	return err
}

// Repository reports the registration.
func (p *Provider) Repository() *Repository {
	return &Repository{ID: p.reg.ID, CommonDir: p.reg.CommonDir, StateDir: p.stateDir, WorkspaceRoot: p.reg.WorkspaceRoot}
}

// StateDir returns the repository's state folder, <git-common-dir>/majlis.
func (p *Provider) StateDir() string { return p.stateDir }

// Worktree returns the top level of the worktree the provider was opened
// from.
func (p *Provider) Worktree() string { return p.repo.Toplevel }

func readRegistration(state string) (*Registration, error) {
	path := filepath.Join(state, registration.FileName)
	var reg Registration
	if _, err := readRecord(path, registration.Kind, formatRepository, &registrationRecord{&reg}); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, &Error{Op: "open", Path: filepath.Dir(state), Err: ErrNotInitialized}
		}
		var pe *Error
		if errors.As(err, &pe) && errors.Is(err, ErrMalformed) {
			pe.Hint = "the repository's registration is damaged, so every majlis command refuses until it is restored from a backup"
			if pe.Details == nil {
				pe.Details = map[string]any{}
			}
			pe.Details["damaged"] = "registration"
		}
		return nil, err
	}
	return &reg, nil
}

func discover(ctx context.Context, op, dir string) (gitops.Repo, error) {
	if dir == "" {
		dir = "."
	}
	repo, err := gitops.Discover(ctx, dir)
	if err != nil {
		if errors.Is(err, gitops.ErrNotAWorkTree) {
			// A bare repository, or a directory inside a git directory:
			// majlis acts from a worktree, and every workspace is a
			// linked worktree of the repository.
			return repo, &Error{Op: op, Path: dir, Err: ErrInvalidArgument,
				Reason: dir + " is a bare repository or lies inside a git directory, not in a worktree",
				Hint: "add a worktree to it ('git -C " + dir + " worktree add PATH') and run majlis there; " +
					"a bare repository has no main worktree, so its workspace root must be named",
				Details: map[string]any{"argument": "bare_repository"}}
		}
		if errors.Is(err, gitops.ErrNotARepository) || errors.Is(err, os.ErrNotExist) {
			return repo, &Error{Op: op, Path: dir, Err: ErrNotRepository, Reason: err.Error()}
		}
		return repo, err
	}
	return repo, nil
}

func newID() string {
	var b [16]byte
	if _, err := crand.Read(b[:]); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b[:])
}
