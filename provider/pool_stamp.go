package provider

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/majlis-dev/majlis/internal/durable"
)

// A pooled worktree's stamp: the fast path of the check before a
// hand-out. Right after git made the pooled worktree, majlis records the
// identity, size, modification and change times of every file and folder
// in it, of git's index of it, and its HEAD. Any write into the worktree
// (a file added, changed, removed or renamed, an ignored file, a folder)
// changes the change time of the file or of its folder, which no process
// can set back; a change of HEAD or of the index changes those files. So
// while everything still matches the stamp, nothing but what git wrote
// when it made the worktree is there, and the worktree is as clean as git
// left it: no git status is needed. Anything that does not match (or no
// stamp) sends the check to git status, untracked and ignored files
// included (checkPooled). The stamp grants nothing by itself: the claim,
// git's entry, its pin and lock, and the folder's identity are checked
// first, every time.

const formatPoolStamp = "majlis.pool-stamp/1"

type poolStamp struct {
	Format      string `json:"format"`
	Binding     string `json:"binding"`
	ClaimDigest string `json:"claim_digest"`
	Head        string `json:"head"`  // the HEAD file's content
	Index       string `json:"index"` // git's index file: dev:ino:size:mtime:ctime
	Tree        string `json:"tree"`  // SHA-256 of every entry's path, mode and identity
	Entries     int    `json:"entries"`
	// Kept lists pool.keep_ignored's paths the stamp was taken with (one
	// a line): a stamp holds only under the same policy.
	Kept string `json:"kept,omitempty"`
	// linked lists the files inside kept paths that have another name
	// (NUL-separated; not recorded: a stamp that holds has the same).
	linked string
}

func (s *poolStamp) check() error {
	if s.Binding == "" || s.ClaimDigest == "" || s.Head == "" || s.Index == "" || len(s.Tree) != 64 {
		return errors.New("incomplete pool stamp")
	}
	return nil
}

func (p *Provider) poolStampPath(binding string) string {
	return filepath.Join(p.stateDir, "pool", binding+".stamp")
}

// stampOf computes the stamp of the pooled worktree of rec, whose git
// entry is entry, under pool.keep_ignored's paths kept.
func stampOf(rec *claimRecord, entry string, kept []string) (*poolStamp, error) {
	return stampAt(rec, entry, rec.Claim.Path, kept)
}

// stampAt is stampOf of the folder at dir.
func stampAt(rec *claimRecord, entry, dir string, kept []string) (*poolStamp, error) {
	head, err := os.ReadFile(filepath.Join(entry, "HEAD"))
	if err != nil {
		return nil, err
	}
	index, err := fileKey(filepath.Join(entry, "index"))
	if err != nil {
		return nil, err
	}
	tree, n, linked, err := treeStamp(dir, kept)
	if err != nil {
		return nil, err
	}
	return &poolStamp{Format: formatPoolStamp, Binding: rec.Claim.Binding, ClaimDigest: rec.Digest,
		Head: strings.TrimSpace(string(head)), Index: index, Tree: tree, Entries: n,
		Kept: strings.Join(kept, "\n"), linked: strings.Join(linked, "\x00")}, nil
}

func fileKey(path string) (string, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return "", err
	}
	k, ok := keyOf(fi)
	if !ok {
		return "", errors.New("no file identity on this system")
	}
	return fmt.Sprintf("%d:%d:%d:%d:%d", k.Dev, k.Ino, k.Size, k.Mtime, k.Ctime), nil
}

// writePoolStamp records the stamp of a pooled worktree just made. A
// stamp that cannot be written only costs its hand-out a git status.
func (p *Provider) writePoolStamp(s *poolStamp) {
	data, _, err := seal("pool-stamp", s)
	if err != nil {
		return
	}
	path := p.poolStampPath(s.Binding)
	if durable.MkdirAll(filepath.Dir(path), 0o755) == nil {
		_ = durable.Replace(filepath.Dir(path), filepath.Base(path), data)
	}
}

// errHardLinked names a file of a pooled worktree that has another name
// (treeStamp).
type errHardLinked struct{ path string }

func (e *errHardLinked) Error() string { return e.path + " has another name (a hard link)" }

// stampHolds reports whether got, the stamp of the pooled worktree of rec
// just taken, matches the one recorded when it was made (see above).
func (p *Provider) stampHolds(rec *claimRecord, got *poolStamp) bool {
	var want poolStamp
	if _, err := readRecord(p.poolStampPath(rec.Claim.Binding), "pool-stamp", formatPoolStamp, &want); err != nil {
		return false
	}
	if want.Binding != rec.Claim.Binding || want.ClaimDigest != rec.Digest || want.Head != rec.Claim.Base {
		return false
	}
	g := *got
	g.linked = ""
	return g == want
}

// linkedFiles lists the files inside kept paths with another name.
func (s *poolStamp) linkedFiles() []string {
	if s == nil || s.linked == "" {
		return nil
	}
	return strings.Split(s.linked, "\x00")
}

// dropPoolStamp removes the stamp of a pooled worktree that is gone or
// handed out.
func (p *Provider) dropPoolStamp(binding string) {
	_ = os.Remove(p.poolStampPath(binding))
	_ = os.Remove(p.poolSettingsPath(binding))
}
