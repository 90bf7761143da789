package provider

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/majlis-dev/majlis/gitops"
	"github.com/majlis-dev/majlis/gitops/salvage"
	"github.com/majlis-dev/majlis/pathid"
	"github.com/majlis-dev/majlis/wire"
)

// SalvagePrefix is where salvage refs live: SalvagePrefix<binding>/<n>.
const SalvagePrefix = "refs/majlis/salvage/"

// SalvageResult is wire.SalvageResult: the result type is defined once, in the wire contract.
type SalvageResult = wire.SalvageResult

// Salvage keeps everything a removal of the workspace would lose, except
// ignored files, as one salvage commit (salvage.Layout) on
// refs/majlis/salvage/<binding>/<n>, without touching the workspace's
// index, HEAD, branch, refs or files. A workspace with nothing to keep
// makes no ref.
func (p *Provider) Salvage(ctx context.Context, binding, message, requestID string) (*SalvageResult, error) {
	rec, err := p.records.Current("salvage", binding)
	if err != nil {
		return nil, err
	}
	args := requestArgs{Op: "salvage", Binding: binding, Message: message}
	if res, done, err := replay[SalvageResult](p.records, requestID, args); done || err != nil {
		return res, err
	}
	if err := p.verifyIdentity("salvage", rec); err != nil {
		return nil, err
	}
	p.progress(Progress{Op: "salvage", Binding: binding, Step: "reading the workspace's changes"})
	st, err := gitops.ReadStatus(ctx, rec.Claim.Path, gitops.StatusOptions{Ignored: true})
	if err != nil {
		return nil, err
	}
	p.progress(Progress{Op: "salvage", Binding: binding, Step: fmt.Sprintf("salvaging %s", nounCount(st.Counts().Total(), "changed file", "changed files"))})
	res, err := p.salvage(ctx, rec, message)
	if err != nil {
		return nil, err
	}
	res.Changes = st.Counts()
	if res.SpecialFiles, res.SpecialPaths, err = salvage.SpecialFiles(rec.Claim.Path, MaxIgnoredPaths); err != nil {
		return nil, err
	}
	if requestID != "" {
		if err := p.records.RecordRequest(requestID, args, res); err != nil {
			return nil, err
		}
	}
	return res, nil
}

func (p *Provider) salvage(ctx context.Context, rec *claimRecord, message string) (*SalvageResult, error) {
	c := rec.Claim
	if message == "" {
		message = "majlis salvage of workspace " + c.Binding
	}
	message += fmt.Sprintf("\n\nMajlis-Binding: %s\nMajlis-Claim: %s\nMajlis-Path: %s\n", c.Binding, rec.Digest, c.Path)
	snap, err := salvage.Snapshot(ctx, c.Path, message)
	if err != nil {
		return nil, err
	}
	res := &SalvageResult{Binding: c.Binding, Clean: snap.Clean,
		DirtySubmodules: nonNil(snap.DirtySubmodules), NestedRepositories: nonNil(snap.NestedRepositories),
		Pins: []gitops.Pin{}, Hidden: []salvage.HiddenFile{}, WorktreeRefs: []string{}, SpecialPaths: []salvage.SpecialFile{},
		UnpopulatedSubmoduleFiles: []string{}}
	if sv := snap.Survey; sv != nil {
		res.Pins = append(res.Pins, sv.Pins...)
		res.Hidden = append(res.Hidden, sv.Hidden...)
		res.Operation = sv.Operation
		res.UnpopulatedSubmoduleFiles = nonNil(sv.Unpopulated)
		for r := range sv.Refs {
			res.WorktreeRefs = append(res.WorktreeRefs, r)
		}
		sort.Strings(res.WorktreeRefs)
	}
	res.Counts.Added, res.Counts.Modified = snap.Files.Added, snap.Files.Modified
	res.Counts.Deleted, res.Counts.TypeChanged = snap.Files.Deleted, snap.Files.TypeChanged
	res.Files = snap.Files.Added + snap.Files.Modified + snap.Files.Deleted + snap.Files.TypeChanged
	if snap.Clean {
		return res, nil
	}
	ref, err := p.storeSalvage(ctx, c.Binding, snap.Commit)
	if err != nil {
		return nil, err
	}
	res.Ref, res.Commit = &ref, &snap.Commit
	res.IndexCommit = &snap.Index
	if snap.Layout.Meta != "" {
		res.MetaCommit = &snap.Layout.Meta
	}
	return res, nil
}

// storeSalvage creates the next free refs/majlis/salvage/<binding>/<n>
// (create-only: an existing salvage ref is never moved).
func (p *Provider) storeSalvage(ctx context.Context, binding, commit string) (string, error) {
	reader, err := gitops.OpenReader(ctx, p.reg.CommonDir)
	if err != nil {
		return "", err
	}
	prefix := SalvagePrefix + binding + "/"
	refs, err := reader.Refs(ctx, prefix)
	if err != nil {
		return "", err
	}
	n := 0
	for _, r := range refs {
		if k, err := strconv.Atoi(strings.TrimPrefix(r.Name, prefix)); err == nil && k > n {
			n = k
		}
	}
	for range 10 {
		n++
		ref := prefix + strconv.Itoa(n)
		err := gitops.UpdateRefCreate(ctx, p.reg.CommonDir, ref, commit)
		if errors.Is(err, gitops.ErrRefExists) {
			continue // a concurrent salvage took that number
		}
		if err != nil {
			return "", err
		}
		return ref, nil
	}
	return "", fmt.Errorf("salvage %s: no free salvage ref after 10 tries", binding)
}

// verifyIdentity checks that the directory at the claimed path is the one
// recorded when the workspace was created: same device and inode, not a
// symlink.
func (p *Provider) verifyIdentity(op string, rec *claimRecord) error {
	c := rec.Claim
	ev := rec.Events[EventCreated]
	id, err := pathid.Lstat(c.Path)
	if errors.Is(err, os.ErrNotExist) {
		return &Error{Op: op, Binding: c.Binding, Path: c.Path, Err: ErrMissing,
			Reason: "nothing exists at the workspace's path"}
	}
	if err != nil {
		return &Error{Op: op, Binding: c.Binding, Path: c.Path, Err: ErrIdentity, Reason: err.Error()}
	}
	if fi, err := os.Lstat(c.Path); err != nil || !fi.IsDir() {
		return &Error{Op: op, Binding: c.Binding, Path: c.Path, Err: ErrIdentity,
			Reason: "the workspace path is no longer a directory (a symlink or file replaced it)",
			Hint:   "majlis will not act on it; inspect the path"}
	}
	if id.Dev != ev.Dev || id.Ino != ev.Ino {
		return &Error{Op: op, Binding: c.Binding, Path: c.Path, Err: ErrIdentity,
			Reason: fmt.Sprintf("the directory was replaced (device/inode %d:%d, recorded %d:%d)", id.Dev, id.Ino, ev.Dev, ev.Ino),
			Hint:   "majlis will not act on it; inspect the path"}
	}
	return nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
