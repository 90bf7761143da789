package gitops

import (
	"fmt"
	"strings"
)

// Raw diffs: git's raw diff format, parsed strictly.

// A RawChange is one entry of git's raw diff format (diff-tree,
// diff-files, diff-index with -z).
type RawChange struct {
	SrcMode, DstMode Mode
	SrcID, DstID     string
	// Status is the change letter: A, C, D, M, R, T, U or X. Copies and
	// renames (with a score) only appear when detection is on.
	Status byte
	Score  string // the digits after R or C
	Path   string
	// SrcPath is the source path of a copy or rename.
	SrcPath string
}

// ParseRawDiff parses `git diff-* -z` raw output:
// ":<srcmode> <dstmode> <srcid> <dstid> <status>[score]\0<path>\0", with a
// second path after renames and copies.
func ParseRawDiff(out []byte) ([]RawChange, error) {
	var changes []RawChange
	for len(out) > 0 {
		meta, rest, ok := cutNUL(out)
		if !ok || len(meta) < 2 || meta[0] != ':' {
			return nil, Unexpected("git diff", "record %q", meta)
		}
		f := strings.Split(meta[1:], " ")
		if len(f) != 5 || f[4] == "" {
			return nil, Unexpected("git diff", "record %q", meta)
		}
		var c RawChange
		var err error
		if c.SrcMode, err = ParseMode(f[0]); err != nil {
			return nil, err
		}
		if c.DstMode, err = ParseMode(f[1]); err != nil {
			return nil, err
		}
		if c.SrcID, err = parseID(f[2]); err != nil {
			return nil, err
		}
		if c.DstID, err = parseID(f[3]); err != nil {
			return nil, err
		}
		c.Status, c.Score = f[4][0], f[4][1:]
		twoPaths := false
		switch c.Status {
		case 'R', 'C':
			if _, err := parseScore(f[4]); err != nil {
				return nil, err
			}
			twoPaths = true
		case 'A', 'D', 'M', 'T', 'U', 'X':
			if c.Score != "" {
				return nil, Unexpected("git diff", "status %q", f[4])
			}
		default:
			return nil, Unexpected("git diff", "status %q", f[4])
		}
		path, rest, ok := cutNUL(rest)
		if !ok || path == "" {
			return nil, Unexpected("git diff", "record %q without a path", meta)
		}
		c.Path = path
		if twoPaths {
			dst, r2, ok := cutNUL(rest)
			if !ok || dst == "" {
				return nil, Unexpected("git diff", "record %q without its second path", meta)
			}
			c.SrcPath, c.Path, rest = path, dst, r2
		}
		changes = append(changes, c)
		out = rest
	}
	return changes, nil
}

// appendRawChange renders c as git does; the inverse of ParseRawDiff.
func appendRawChange(b []byte, c RawChange) []byte {
	b = fmt.Appendf(b, ":%s %s %s %s %c%s", c.SrcMode, c.DstMode, c.SrcID, c.DstID, c.Status, c.Score)
	b = append(b, 0)
	if c.SrcPath != "" {
		b = append(append(b, c.SrcPath...), 0)
	}
	return append(append(b, c.Path...), 0)
}
