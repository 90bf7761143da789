package salvage

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/majlis-dev/majlis/gitops"
)

// Version is the salvage layout Snapshot writes. Version 1 (before
// it) is a commit whose tree is the worktree and whose only parent is
// HEAD.
const Version = 2

// A Layout says what a salvage commit's parents are. The commit's
// tree is the worktree's state (as `git add -A --sparse` would stage it,
// hidden edits included). Its parents, in this order:
//
//  1. HEAD (absent when HEAD was an unborn branch);
//  2. the index commit: the index's tree, with HEAD as its parent, as git
//     stash makes it (conflicted paths at their "ours" stage, intent-to-add
//     entries left out; the meta commit keeps the whole index);
//  3. a stand-in for git stash's untracked-files commit, with an empty
//     tree: the untracked files are in the salvage tree itself, so that
//     `git stash apply --index` restores nothing twice;
//  4. the meta commit (absent when there is nothing for it to keep beyond
//     what HEAD and the index commit say), without parents, whose tree holds the files of the
//     worktree's own git directory that a removal deletes: index (the raw
//     index file), HEAD, ORIG_HEAD, MERGE_HEAD and the other operation
//     heads, rebase-merge/, rebase-apply/, sequencer/, the BISECT_* files,
//     refs/worktree/, refs/bisect/, refs/rewritten/, logs/HEAD and those
//     refs' reflogs, config.worktree and info/sparse-checkout; plus
//     conflicts/<stage>/<path> for each conflicted index entry,
//     resolve-undo/<stage>/<path> for each stage of a conflict resolved
//     since (the index's resolve-undo extension),
//     majlis/skip-worktree-present listing the skip-worktree files that
//     were on disk, and the worktree's files kept beside the tree:
//     majlis/refused/ (names git refuses, refused.go), majlis/converted/
//     (bytes a checkout would not give back, converted.go),
//     majlis/unpopulated/ (submodule folders not checked out) and
//     majlis/private-modes;
//  5. and on: every commit only the worktree held (Pins), each named in
//     the message with where it was found.
//
// The commit message ends with trailers that say the same:
//
//	Majlis-Salvage: 2
//	Majlis-Head: <id> | unborn
//	Majlis-Branch: refs/heads/<name> | detached
//	Majlis-Parent: <id> head | index | untracked | meta | pin <source>
//
// so the parents' positions follow from the trailers: 1 is HEAD unless
// unborn, and a meta commit comes before the pins when there is one.
//
// ParseCommit reads them back, and refuses a commit whose trailers
// and parents disagree.
type Layout struct {
	Version int
	// Binding is what the Majlis-Binding trailer names, "" without one.
	Binding string
	// Head is HEAD's commit, "" when unborn; Branch the ref HEAD named,
	// "" when detached.
	Head, Branch string
	// Index, Untracked and Meta are parents 2, 3 and 4 (version 2).
	Index, Untracked, Meta string
	Pins                   []gitops.Pin
}

// Parents returns the salvage commit's parents in order.
func (l Layout) Parents() []string {
	var p []string
	if l.Head != "" {
		p = append(p, l.Head)
	}
	if l.Version < 2 {
		return p
	}
	p = append(p, l.Index, l.Untracked)
	if l.Meta != "" {
		p = append(p, l.Meta)
	}
	for _, pin := range l.Pins {
		p = append(p, pin.Commit)
	}
	return p
}

// Message returns message followed by the layout's trailers (joined to
// message's own trailers, when its last paragraph is made of them).
func (l Layout) Message(message string) string {
	var b strings.Builder
	b.WriteString(strings.TrimRight(message, "\n"))
	last := message
	if i := strings.LastIndex(strings.TrimRight(message, "\n"), "\n\n"); i >= 0 {
		last = message[i+2:]
	}
	if !allTrailers(last) {
		b.WriteString("\n")
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "Majlis-Salvage: %d\n", l.Version)
	if l.Head == "" {
		b.WriteString("Majlis-Head: unborn\n")
	} else {
		fmt.Fprintf(&b, "Majlis-Head: %s\n", l.Head)
	}
	if l.Branch == "" {
		b.WriteString("Majlis-Branch: detached\n")
	} else {
		fmt.Fprintf(&b, "Majlis-Branch: %s\n", l.Branch)
	}
	if l.Head != "" {
		fmt.Fprintf(&b, "Majlis-Parent: %s head\n", l.Head)
	}
	fmt.Fprintf(&b, "Majlis-Parent: %s index\n", l.Index)
	fmt.Fprintf(&b, "Majlis-Parent: %s untracked\n", l.Untracked)
	if l.Meta != "" {
		fmt.Fprintf(&b, "Majlis-Parent: %s meta\n", l.Meta)
	}
	for _, p := range l.Pins {
		fmt.Fprintf(&b, "Majlis-Parent: %s pin %s\n", p.Commit, oneLine(p.Source))
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func allTrailers(par string) bool {
	lines := strings.Split(strings.TrimRight(par, "\n"), "\n")
	for _, l := range lines {
		k, _, ok := strings.Cut(l, ": ")
		if !ok || k == "" || strings.ContainsAny(k, " \t") {
			return false
		}
	}
	return len(lines) > 0
}

func oneLine(s string) string { return strings.NewReplacer("\n", " ", "\r", " ").Replace(s) }

// ParseCommit reads the layout of a salvage commit from its raw
// content (`git cat-file commit`). A commit without a Majlis-Salvage
// trailer is version 1: its first parent is HEAD. Trailers that disagree
// with the parents, an unknown version, or anything that does not parse
// are errors: restore never guesses.
func ParseCommit(raw []byte) (Layout, error) {
	var l Layout
	parents, msg, err := parseCommitHeader(raw)
	if err != nil {
		return l, err
	}
	trailers := salvageTrailers(msg)
	switch b := trailers["Majlis-Binding"]; len(b) {
	case 0:
	case 1:
		l.Binding = b[0]
	default:
		return l, fmt.Errorf("salvage commit: %d Majlis-Binding trailers", len(b))
	}
	ver := trailers["Majlis-Salvage"]
	if len(ver) == 0 {
		l.Version = 1
		if len(parents) > 1 {
			return l, fmt.Errorf("salvage commit: %d parents and no Majlis-Salvage trailer", len(parents))
		}
		if len(parents) == 1 {
			l.Head = parents[0]
		}
		return l, nil
	}
	if len(ver) != 1 || ver[0] != "2" {
		return l, fmt.Errorf("salvage commit: unknown layout %q", ver)
	}
	l.Version = 2
	if err := l.parseHeadAndBranch(trailers); err != nil {
		return l, err
	}
	return l, l.parseParents(trailers["Majlis-Parent"], parents)
}

// parseCommitHeader checks a raw commit's header (a tree first, then
// only object ids where ids belong) and returns its parents and its
// message.
func parseCommitHeader(raw []byte) (parents []string, msg []byte, err error) {
	hdr, msg, ok := bytes.Cut(raw, []byte("\n\n"))
	if !ok {
		if !bytes.HasSuffix(raw, []byte("\n")) {
			return nil, nil, fmt.Errorf("salvage commit: no header end")
		}
		hdr = bytes.TrimSuffix(raw, []byte("\n"))
	}
	sawTree := false
	for i, line := range strings.Split(string(hdr), "\n") {
		k, v, _ := strings.Cut(line, " ")
		switch {
		case i == 0 && k != "tree", i > 0 && k == "tree":
			return nil, nil, fmt.Errorf("salvage commit: header line %d %q", i+1, line)
		case k == "tree":
			if !gitops.IsObjectID(v) {
				return nil, nil, fmt.Errorf("salvage commit: tree %q", v)
			}
			sawTree = true
		case k == "parent":
			if !gitops.IsObjectID(v) {
				return nil, nil, fmt.Errorf("salvage commit: parent %q", v)
			}
			parents = append(parents, v)
		}
	}
	if !sawTree {
		return nil, nil, fmt.Errorf("salvage commit: no tree")
	}
	return parents, msg, nil
}

// salvageTrailers returns the Majlis- trailers of a commit message (its
// last paragraph), each key's values in order.
func salvageTrailers(msg []byte) map[string][]string {
	trailers := map[string][]string{}
	text := strings.TrimRight(string(msg), "\n")
	if i := strings.LastIndex(text, "\n\n"); i >= 0 {
		text = text[i+2:]
	}
	for _, line := range strings.Split(text, "\n") {
		if k, v, ok := strings.Cut(line, ": "); ok && strings.HasPrefix(k, "Majlis-") {
			trailers[k] = append(trailers[k], v)
		}
	}
	return trailers
}

// parseHeadAndBranch reads a version 2 salvage's Majlis-Head and
// Majlis-Branch trailers, exactly one of each.
func (l *Layout) parseHeadAndBranch(trailers map[string][]string) error {
	one := func(k string) (string, error) {
		v := trailers[k]
		if len(v) != 1 {
			return "", fmt.Errorf("salvage commit: %d %s trailers", len(v), k)
		}
		return v[0], nil
	}
	head, err := one("Majlis-Head")
	if err != nil {
		return err
	}
	if head != "unborn" {
		if !gitops.IsObjectID(head) {
			return fmt.Errorf("salvage commit: Majlis-Head %q", head)
		}
		l.Head = head
	}
	branch, err := one("Majlis-Branch")
	if err != nil {
		return err
	}
	if branch != "detached" {
		if !strings.HasPrefix(branch, "refs/") || CheckRefName(branch) != nil {
			return fmt.Errorf("salvage commit: Majlis-Branch %q", branch)
		}
		l.Branch = branch
	}
	return nil
}

// parseParents matches a version 2 salvage's Majlis-Parent trailers (ps)
// with its parents, in order: HEAD (unless unborn), the index commit,
// the stand-in, the meta commit if any, then the pins.
func (l *Layout) parseParents(ps, parents []string) error {
	if len(ps) != len(parents) {
		return fmt.Errorf("salvage commit: %d Majlis-Parent trailers for %d parents", len(ps), len(parents))
	}
	want := []string{"index", "untracked"}
	if l.Head != "" {
		want = append([]string{"head"}, want...)
	}
	if len(ps) > len(want) && strings.HasSuffix(ps[len(want)], " meta") {
		want = append(want, "meta")
	}
	for i, p := range ps {
		id, role, _ := strings.Cut(p, " ")
		if id != parents[i] {
			return fmt.Errorf("salvage commit: Majlis-Parent %d names %q, parent %d is %s", i+1, id, i+1, parents[i])
		}
		if i < len(want) {
			if role != want[i] {
				return fmt.Errorf("salvage commit: parent %d is %q, want %q", i+1, role, want[i])
			}
			switch role {
			case "head":
				if id != l.Head {
					return fmt.Errorf("salvage commit: parent 1 %s is not Majlis-Head %s", id, l.Head)
				}
			case "index":
				l.Index = id
			case "untracked":
				l.Untracked = id
			case "meta":
				l.Meta = id
			}
			continue
		}
		src, ok := strings.CutPrefix(role, "pin ")
		if !ok || src == "" {
			return fmt.Errorf("salvage commit: parent %d is %q, want a pin", i+1, role)
		}
		l.Pins = append(l.Pins, gitops.Pin{Commit: id, Source: src})
	}
	if len(ps) < len(want) {
		return fmt.Errorf("salvage commit: %d parents, want at least %d", len(ps), len(want))
	}
	return nil
}

// CheckRefName reports why name is not a valid full ref name, or nil. It
// follows git-check-ref-format(1) for the cases that matter to paths.
func CheckRefName(name string) error {
	if name == "" || strings.HasSuffix(name, "/") || strings.HasSuffix(name, ".") || strings.HasPrefix(name, "/") {
		return fmt.Errorf("ref name %q", name)
	}
	for _, part := range strings.Split(name, "/") {
		if part == "" || strings.HasPrefix(part, ".") || strings.HasSuffix(part, ".lock") {
			return fmt.Errorf("ref name %q", name)
		}
	}
	if strings.Contains(name, "..") || strings.Contains(name, "@{") ||
		strings.ContainsAny(name, " ~^:?*[\\\x7f") || strings.IndexFunc(name, func(r rune) bool { return r < 0x20 }) >= 0 {
		return fmt.Errorf("ref name %q", name)
	}
	return nil
}

// placeholderEnv and placeholderMessage make the stand-in for git stash's
// untracked-files commit the same commit every time.
var (
	placeholderEnv = []string{
		"GIT_AUTHOR_NAME=majlis salvage", "GIT_AUTHOR_EMAIL=majlis@localhost", "GIT_AUTHOR_DATE=@0 +0000",
		"GIT_COMMITTER_NAME=majlis salvage", "GIT_COMMITTER_EMAIL=majlis@localhost", "GIT_COMMITTER_DATE=@0 +0000",
	}
	placeholderMessage = "majlis salvage: no untracked-files commit (the untracked files are in the salvage tree)"
)

// placeholderID is the id of the stand-in commit for ids of n hex digits
// (40: SHA-1, 64: SHA-256), as commit-tree makes it with placeholderEnv.
func placeholderID(n int) string {
	body := fmt.Sprintf("tree %s\nauthor majlis salvage <majlis@localhost> 0 +0000\ncommitter majlis salvage <majlis@localhost> 0 +0000\n\n%s\n",
		emptyTree(n), placeholderMessage)
	return objectHash("commit", []byte(body), n/2)
}

// indexMessage is the index commit's message.
const indexMessage = "majlis salvage: the index"

// indexCommitID is the id of the index commit of tree on parent, as
// commit-tree makes it with placeholderEnv.
func indexCommitID(tree, parent string) string {
	body := fmt.Sprintf("tree %s\nparent %s\nauthor majlis salvage <majlis@localhost> 0 +0000\ncommitter majlis salvage <majlis@localhost> 0 +0000\n\n%s\n",
		tree, parent, indexMessage)
	return objectHash("commit", []byte(body), len(tree)/2)
}

// objectStored reports whether the object id is stored loose in the
// repository at commonDir. A packed object is not looked for: the caller
// then makes it again, which git does without harm.
func objectStored(commonDir, id string) bool {
	_, err := os.Stat(filepath.Join(commonDir, "objects", id[:2], id[2:]))
	return err == nil
}

// needsMeta reports whether the worktree holds anything that only the
// meta commit keeps: per-worktree refs, an interrupted operation, an index
// whose tree is not all of it (conflicts, intent-to-add entries, flagged
// entries, a split index), any kept file beside HEAD, the index and HEAD's
// reflog (ORIG_HEAD unless at HEAD, per-worktree config, sparse
// patterns), or reflog
// entries naming commits that must be pinned. HEAD's reflog alone does not
// make one: its commits are pinned, its record of moves is not kept. Without it, HEAD and
// the index commit say everything, and the salvage has no meta parent.
func (s *Survey) needsMeta() bool {
	if len(s.Refs) > 0 || s.Operation != "" || s.Conflicted > 0 || s.IntentToAdd > 0 || len(s.flagged) > 0 || s.askGit || len(s.resolveUndo) > 0 ||
		len(s.unpopulated) > 0 || len(s.private) > 0 || len(s.refused) > 0 || len(s.converted) > 0 {
		return true
	}
	for _, f := range s.files {
		switch f {
		case "HEAD", "index", "logs/HEAD":
		case "ORIG_HEAD":
			// git worktree add leaves ORIG_HEAD at HEAD in every new
			// worktree; at HEAD it says nothing HEAD does not.
			if b, err := os.ReadFile(filepath.Join(s.gitDir, f)); err != nil || strings.TrimSpace(string(b)) != s.Head {
				return true
			}
		default:
			return true // config.worktree, sparse patterns, a split index...
		}
	}
	for _, p := range s.Pins {
		if p.Source != "HEAD" {
			return true
		}
	}
	return false
}

// indexTree returns the tree of the index (a private copy of it at
// index): `git write-tree`, which leaves out intent-to-add entries. A
// conflicted index has no tree of its own; its conflicted paths are put at
// their "ours" stage (stage 2), or left out where there is none.
func (s *Survey) indexTree(ctx context.Context, dir, ceiling, index string) (string, error) {
	return s.indexTreeIn(ctx, dir, gitops.Cmd{Ceiling: ceiling}, index)
}

// metaTree stores the kept git-directory files, the conflict stages and
// the list of present skip-worktree files as a tree, through the private
// index at index, and returns it. git hashes the files itself
// (update-index --add with the git directory as its work tree).
func (s *Survey) metaTree(ctx context.Context, index string) (string, error) {
	// Safe for binary files: no end-of-line or filter conversion.
	o := gitops.Cmd{IndexFile: index, LiteralPathspecs: true}
	base := []string{"--git-dir=" + s.commonDir, "--work-tree=" + s.gitDir, "-c", "core.autocrlf=false",
		"-c", "core.safecrlf=false", "-c", "core.fileMode=false"}
	if len(s.files) > 0 {
		o.Stdin = []byte(strings.Join(s.files, "\x00") + "\x00")
		if _, err := gitops.Run(ctx, s.gitDir, o, append(base, "update-index", "--add", "-z", "--stdin")...); err != nil {
			return "", err
		}
	}
	var in bytes.Buffer
	for _, e := range s.stages {
		fmt.Fprintf(&in, "%s %s 0\tconflicts/%d/%s\x00", e.Mode, e.ID, e.Stage, e.Path)
	}
	for _, e := range s.resolveUndo {
		if e.Mode != gitops.ModeGitlink {
			fmt.Fprintf(&in, "%s %s 0\tresolve-undo/%d/%s\x00", e.Mode, e.ID, e.Stage, e.Path)
		}
	}
	if len(s.present) > 0 {
		// a blob listing them, NUL-terminated
		id, err := s.writeBlob(ctx, []byte(strings.Join(s.present, "\x00")+"\x00"))
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&in, "%s %s 0\tmajlis/skip-worktree-present\x00", gitops.ModeFile, id)
	}
	if len(s.unpopulated) > 0 {
		lines, err := s.unpopulatedEntries(ctx, s.dir)
		if err != nil {
			return "", err
		}
		in.WriteString(lines)
	}
	line, err := s.privateEntry(ctx)
	if err != nil {
		return "", err
	}
	in.WriteString(line)
	if line, err = s.refusedEntries(ctx); err != nil {
		return "", err
	}
	in.WriteString(line)
	if line, err = s.convertedEntries(ctx); err != nil {
		return "", err
	}
	in.WriteString(line)
	if in.Len() > 0 {
		o.Stdin = in.Bytes()
		if _, err := gitops.Run(ctx, s.gitDir, o, append(base, "update-index", "-z", "--index-info")...); err != nil {
			return "", err
		}
	}
	o.Stdin = nil
	res, err := gitops.Run(ctx, s.gitDir, o, "--git-dir="+s.commonDir, "write-tree")
	if err != nil {
		return "", err
	}
	id := strings.TrimSuffix(string(res.Stdout), "\n")
	if !gitops.IsObjectID(id) {
		return "", gitops.Unexpected("git write-tree", "%q is not an object id", id)
	}
	return id, nil
}

// writeBlob stores content as a blob and returns its id.
func (s *Survey) writeBlob(ctx context.Context, content []byte) (string, error) {
	res, err := gitops.Run(ctx, s.commonDir, gitops.Cmd{Stdin: content}, "hash-object", "-w", "--stdin")
	if err != nil {
		return "", err
	}
	id := strings.TrimSpace(string(res.Stdout))
	if !gitops.IsObjectID(id) {
		return "", gitops.Unexpected("git hash-object", "%q is not an object id", id)
	}
	return id, nil
}

// Read reads the layout of the salvage commit rev in the repository
// containing dir.
func Read(ctx context.Context, dir, rev string) (string, Layout, error) {
	id, err := gitops.ResolveCommitWith(ctx, dir, gitops.Cmd{}, rev)
	if err != nil {
		return "", Layout{}, err
	}
	res, err := gitops.Run(ctx, dir, gitops.Cmd{ReadOnly: true}, "cat-file", "commit", id)
	if err != nil {
		return "", Layout{}, err
	}
	l, err := ParseCommit(res.Stdout)
	if err != nil {
		return "", l, fmt.Errorf("salvage: %s (%s): %w", rev, id, err)
	}
	return id, l, nil
}
