package admission

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/majlis-dev/majlis/gitops"
	"github.com/majlis-dev/majlis/pathid"
)

// DefaultTTL is the lease lifetime when a request names none.
const DefaultTTL = 10 * time.Minute

// Options configure Open.
type Options struct {
	// HostLedger is the host ledger's path (HostLedgerPath gives the
	// conventional one); a relative path is taken from the working
	// directory. Required: admission reads no environment.
	HostLedger string
	// Now is the clock; nil means time.Now. Tests pass a fake one.
	Now func() time.Time
	// BusyTimeout is how long a ledger connection waits for another
	// writer's lock; 0 means DefaultBusyTimeout.
	BusyTimeout time.Duration
	// Guard, when set, is asked about every checkout in which a file or
	// intent lease would be granted, inside the repository ledger's write
	// transaction (after BEGIN IMMEDIATE, before anything is read or
	// written). An error refuses the whole admission, unchanged: the
	// provider refuses a checkout that a reclaim has reserved
	// (ErrReclaiming). Because the guard runs under the ledger's write
	// lock, a reclaim that registers its reservation and then reads the
	// leases under that same lock cannot miss a grant the guard let
	// through (see docs/reclaim.md, "the order between admission and
	// reclaim").
	Guard CheckoutGuard
	// ServesOthers marks a service that acts on other processes' requests
	// (the majlis server). A lease's owner process, or a descendant of it,
	// may otherwise renew or release the lease without its token; a
	// server is often the child of the process that owns the leases, so
	// with ServesOthers the caller's process tree grants nothing and
	// every request needs the lease's token (or force).
	ServesOthers bool
	// Shared, when set, is the ledger that repository intents and cluster
	// singletons are shared through with other clones of the repository
	// (package coordination, on etcd). The Service closes it. Nil: every
	// lease stays on this machine, and cluster:NAME is refused.
	Shared SharedLedger
}

// A CheckoutGuard judges a checkout (its physical top level) in which
// leases are about to be granted. It must not take the ledger's lock, nor
// any lock that is held by someone waiting for it.
type CheckoutGuard func(ctx context.Context, checkout string) error

// A Service admits leases for one registered repository. Open it with the
// repository's state dir; it holds database handles (Close them) but no
// locks between calls, and is safe for concurrent use. The host ledger is
// opened on first use.
type Service struct {
	stateDir string // physical <git-common-dir>/majlis
	repoID   string // physical common dir: the repository's identity here
	repo     *ledger
	hostPath string
	busy     time.Duration
	now      func() time.Time
	guard    CheckoutGuard
	// servesOthers: the caller's process tree is no authority over a
	// lease (Options.ServesOthers).
	servesOthers bool
	shared       SharedLedger

	mu        sync.Mutex
	host      *ledger
	checkouts map[string]cachedCheckout // by physical directory
}

// A cachedCheckout remembers which worktree a directory belongs to, so
// that repeated calls need not run git. It is used only while the
// worktree's .git entry is the same file, unchanged; it names the
// checkout, it never decides a conflict.
type cachedCheckout struct {
	co  Checkout
	git fs.FileInfo // Lstat of <root>/.git when it was resolved
}

// Open opens the admission ledgers of the repository whose state dir is
// stateDir (<git-common-dir>/majlis, created by `majlis init`). A missing
// state dir refuses with ErrNotInitialized: Open never creates it. The
// repository ledger, admission.db, is created in it when absent.
func Open(ctx context.Context, stateDir string, opts Options) (*Service, error) {
	phys, err := pathid.Physical(stateDir)
	if err != nil {
		return nil, &Error{Op: "open", Path: stateDir, Err: err}
	}
	fi, err := os.Stat(phys)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, &Error{Op: "open", Path: stateDir, Err: ErrNotInitialized,
			Reason: "the state folder " + stateDir + " does not exist"}
	case err != nil:
		return nil, &Error{Op: "open", Path: stateDir, Err: err}
	case !fi.IsDir():
		return nil, &Error{Op: "open", Path: stateDir, Err: ErrNotInitialized,
			Reason: stateDir + " is not a folder"}
	}
	if opts.HostLedger == "" {
		return nil, &Error{Op: "open", Err: ErrInvalid, Reason: "no host ledger path given",
			Hint: "pass Options.HostLedger (HostLedgerPath gives the conventional one)"}
	}
	hostPath, err := filepath.Abs(opts.HostLedger)
	if err != nil {
		return nil, &Error{Op: "open", Path: opts.HostLedger, Err: err}
	}
	repo, err := openLedger(ctx, filepath.Join(phys, RepositoryLedgerName), kindRepository, opts.BusyTimeout)
	if err != nil {
		return nil, err
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	return &Service{stateDir: phys, repoID: filepath.Dir(phys), repo: repo, hostPath: hostPath, busy: opts.BusyTimeout, now: now, guard: opts.Guard, servesOthers: opts.ServesOthers, shared: opts.Shared}, nil
}

// Close closes the ledgers.
func (s *Service) Close() error {
	err := s.repo.close()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.host != nil {
		err = errors.Join(err, s.host.close())
		s.host = nil
	}
	if s.shared != nil {
		err = errors.Join(err, s.shared.Close())
	}
	return err
}

// Shared returns the shared ledger the service was opened with, or nil.
func (s *Service) Shared() SharedLedger { return s.shared }

// StateDir returns the physical state dir the service was opened on.
func (s *Service) StateDir() string { return s.stateDir }

// RepositoryLedger returns the repository ledger's path.
func (s *Service) RepositoryLedger() string { return s.repo.path }

// HostLedger returns the host ledger's path (which may not exist yet).
func (s *Service) HostLedger() string { return s.hostPath }

func (s *Service) nanos() int64 { return s.now().UnixNano() }

// ledgerNow is the time a ledger is judged by (states, expiries, event
// times): the clock, but never earlier than the last event the ledger
// recorded. A clock stepped back (NTP, a restored virtual machine) must not
// turn an expiry the ledger has already acted on back into an active lease:
// expiry takes permission away, and only a release, a resolve or a dead
// owner gives it back. Inside a transaction, q is its connection.
func (s *Service) ledgerNow(ctx context.Context, q rowQuerier) (int64, error) {
	now := s.nanos()
	rows, err := q.QueryContext(ctx, `SELECT at FROM events ORDER BY seq DESC LIMIT 1`)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	if rows.Next() {
		var last int64
		if err := rows.Scan(&last); err != nil {
			return 0, err
		}
		now = max(now, last)
	}
	return now, rows.Err()
}

// hostLedger returns the host ledger, opening it on first use. With create
// false, an absent host ledger is not created: (nil, nil) is returned.
func (s *Service) hostLedger(ctx context.Context, create bool) (*ledger, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.host != nil {
		return s.host, nil
	}
	if !create {
		if _, err := os.Stat(s.hostPath); errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
	}
	if err := os.MkdirAll(filepath.Dir(s.hostPath), 0o700); err != nil {
		return nil, &Error{Op: "open", Path: filepath.Dir(s.hostPath), Err: err}
	}
	l, err := openLedger(ctx, s.hostPath, kindHost, s.busy)
	if err != nil {
		return nil, err
	}
	s.host = l
	return l, nil
}

// checkout finds the worktree containing dir (default: cwd, then the
// working directory), checks that it belongs to this repository, and opens
// it for path canonicalization.
func (s *Service) checkout(ctx context.Context, op, dir, cwd string) (Checkout, error) {
	if dir == "" {
		dir = cwd
	}
	if dir == "" {
		dir = "."
	}
	phys, err := pathid.Physical(dir)
	if err != nil {
		return Checkout{}, &Error{Op: op, Path: dir, Err: ErrInvalid, Reason: "cannot resolve the checkout: " + err.Error(),
			Hint: "run it inside a worktree of the repository", Details: map[string]any{"argument": "repository"}}
	}
	if co, ok := s.cachedCheckout(phys); ok {
		return co, nil
	}
	repo, err := gitops.Discover(ctx, phys)
	if err != nil {
		return Checkout{}, &Error{Op: op, Path: dir, Err: ErrInvalid, Reason: "not inside a git worktree: " + err.Error(),
			Hint: "run it inside a worktree of the repository", Details: map[string]any{"argument": "repository"}}
	}
	common, err := pathid.Physical(repo.CommonDir)
	if err != nil {
		return Checkout{}, &Error{Op: op, Path: repo.CommonDir, Err: err}
	}
	if filepath.Join(common, "majlis") != s.stateDir {
		return Checkout{}, &Error{Op: op, Path: dir, Err: ErrInvalid,
			Reason: fmt.Sprintf("the worktree %s belongs to the repository %s, not %s", repo.Toplevel, common, s.repoID),
			Hint:   "open the admission service of that repository"}
	}
	gitFI, gitErr := os.Lstat(filepath.Join(repo.Toplevel, ".git"))
	co, err := OpenCheckout(repo.Toplevel)
	if err != nil {
		var ae *Error
		if errors.As(err, &ae) {
			return Checkout{}, err
		}
		return Checkout{}, &Error{Op: op, Path: repo.Toplevel, Err: ErrUnsafePath,
			Reason: "cannot verify path identity in the checkout: " + err.Error()}
	}
	if gitErr == nil {
		s.mu.Lock()
		if s.checkouts == nil {
			s.checkouts = map[string]cachedCheckout{}
		}
		s.checkouts[phys] = cachedCheckout{co: co, git: gitFI}
		s.mu.Unlock()
	}
	return co, nil
}

// cachedCheckout returns the checkout that the physical directory dir was
// found in, while that checkout's .git entry is the same, unchanged file
// and no other .git lies between them.
func (s *Service) cachedCheckout(dir string) (Checkout, bool) {
	s.mu.Lock()
	c, ok := s.checkouts[dir]
	s.mu.Unlock()
	if !ok {
		return Checkout{}, false
	}
	fi, err := os.Lstat(filepath.Join(c.co.Root, ".git"))
	if err != nil || !os.SameFile(fi, c.git) || !fi.ModTime().Equal(c.git.ModTime()) || fi.Size() != c.git.Size() {
		return Checkout{}, false
	}
	// Git would still stop at the same top level: no .git appeared in
	// between (a nested repository).
	for d := dir; d != c.co.Root; d = filepath.Dir(d) {
		if _, err := os.Lstat(filepath.Join(d, ".git")); !errors.Is(err, fs.ErrNotExist) || d == filepath.Dir(d) {
			return Checkout{}, false
		}
	}
	return c.co, true
}
