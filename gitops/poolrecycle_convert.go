package gitops

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
)

// A recycled worktree's fresh index has no stat data, so CleanToBase's
// refresh compares every file's content with the base's blob through
// git's conversions (text, eol, ident, filters, core.autocrlf): a file the
// task wrote with CRLF line endings, or with LF where git writes CRLF,
// compares equal and would be kept with the task's bytes, not those a
// fresh checkout writes. forgetConverted finds such files after the
// refresh and drops their stat data, so that read-tree writes them again.
//
// A file is written again when its checkout is not a plain copy of the
// blob (CRLF written out, ident, a filter, an encoding), or when git
// converts it only on the way in (text, eol=lf, core.autocrlf=input) and
// its size is not the blob's: that conversion only removes carriage
// returns, so a file of the blob's size that compares equal is the blob.

// A baseFile is a regular file of the base's tree.
type baseFile struct {
	mode, id, path string
	size           int64
}

// forgetConverted drops the index's stat data of every file of the
// worktree's index whose worktree bytes may differ from a fresh
// checkout although the refresh called them unchanged.
func forgetConverted(ctx context.Context, abs string, o Cmd) error {
	files, err := indexFiles(ctx, abs, o)
	if err != nil || len(files) == 0 {
		return err
	}
	cfg, err := conversionConfig(ctx, abs, o)
	if err != nil {
		return err
	}
	attrs, err := fileAttrs(ctx, abs, o, files)
	if err != nil {
		return err
	}
	var stale, sized []baseFile
	for _, f := range files {
		switch cfg.conversion(attrs[f.path]) {
		case convOut:
			stale = append(stale, f)
		case convIn:
			sized = append(sized, f)
		}
	}
	if err := blobSizes(ctx, abs, o, sized); err != nil {
		return err
	}
	for _, f := range sized {
		if !sizeIs(abs, f) {
			stale = append(stale, f)
		}
	}
	if len(stale) == 0 {
		return nil
	}
	var in bytes.Buffer
	for _, f := range stale {
		fmt.Fprintf(&in, "%s %s\t%s\x00", f.mode, f.id, f.path)
	}
	w := o
	w.Stdin = in.Bytes()
	_, err = Run(ctx, abs, w, "update-index", "-z", "--index-info")
	return err
}

// indexFiles lists the regular files of the worktree's index (commit's
// tree: FreshEntry read it).
func indexFiles(ctx context.Context, abs string, o Cmd) ([]baseFile, error) {
	ro := o
	ro.ReadOnly = true
	res, err := Run(ctx, abs, ro, "ls-files", "-s", "-z")
	if err != nil {
		return nil, err
	}
	var files []baseFile
	for _, rec := range bytes.Split(res.Stdout, []byte{0}) {
		head, name, ok := strings.Cut(string(rec), "\t")
		if !ok {
			continue
		}
		f := strings.Fields(head) // mode id stage
		if len(f) == 3 && (f[0] == "100644" || f[0] == "100755") {
			files = append(files, baseFile{mode: f[0], id: f[1], path: name})
		}
	}
	return files, nil
}

// blobSizes fills in the blob size of each of files.
func blobSizes(ctx context.Context, abs string, o Cmd, files []baseFile) error {
	if len(files) == 0 {
		return nil
	}
	var in bytes.Buffer
	for _, f := range files {
		in.WriteString(f.id + "\n")
	}
	ro := o
	ro.ReadOnly = true
	ro.Stdin = in.Bytes()
	res, err := Run(ctx, abs, ro, "cat-file", "--batch-check=%(objectname) %(objectsize)")
	if err != nil {
		return err
	}
	sizes := map[string]int64{}
	for _, line := range strings.Split(string(res.Stdout), "\n") {
		id, size, _ := strings.Cut(line, " ")
		if n, err := strconv.ParseInt(size, 10, 64); err == nil {
			sizes[id] = n
		}
	}
	for i := range files {
		n, ok := sizes[files[i].id]
		if !ok {
			return fmt.Errorf("gitops: the size of %s (blob %s) is unknown", files[i].path, files[i].id)
		}
		files[i].size = n
	}
	return nil
}

// convConfig is what the worktree's config says about line endings.
type convConfig struct {
	autocrlf string // "false", "true" or "input"
	crlfEOL  bool   // core.eol=crlf
}

// conversionConfig reads core.autocrlf and core.eol as git sees them in
// the worktree. A value it cannot read is taken as the one that converts
// most (autocrlf true): a file is then written again, never kept.
func conversionConfig(ctx context.Context, abs string, o Cmd) (convConfig, error) {
	ro := o
	ro.ReadOnly = true
	ro.OKCodes = []int{1}
	res, err := Run(ctx, abs, ro, "config", "-z", "--get-regexp", `^core\.(autocrlf|eol)$`)
	if err != nil {
		return convConfig{}, err
	}
	c := convConfig{autocrlf: "false"}
	for _, rec := range bytes.Split(res.Stdout, []byte{0}) {
		key, val, _ := strings.Cut(string(rec), "\n")
		val = strings.ToLower(val)
		switch key {
		case "core.autocrlf":
			switch val {
			case "false", "no", "off", "0":
				c.autocrlf = "false"
			case "input":
				c.autocrlf = "input"
			default:
				c.autocrlf = "true"
			}
		case "core.eol":
			c.crlfEOL = val != "lf" && val != "native"
		}
	}
	return c, nil
}

// fileAttrs reads ConversionAttributes of every file.
func fileAttrs(ctx context.Context, abs string, o Cmd, files []baseFile) (map[string]map[string]string, error) {
	paths := make([]string, len(files))
	for i, f := range files {
		paths[i] = f.path
	}
	ro := o
	ro.ReadOnly = true
	return CheckAttrs(ctx, abs, ro, paths, ConversionAttributes)
}

// How git converts a file between its blob and the worktree.
const (
	convNone = iota // never: git's comparison is byte for byte
	convIn          // only on the way in (carriage returns dropped): the checkout is the blob
	convOut         // on the way out too: the checkout is not the blob
)

// conversion says how git converts a file with the attributes a (`git
// check-attr` values) under c. The legacy crlf attribute stands for text
// when text is unspecified, as in git: crlf is text, -crlf is -text,
// crlf=input is text with LF endings.
func (c convConfig) conversion(a map[string]string) int {
	get := func(k string) string {
		if v := a[k]; v != "unspecified" {
			return v
		}
		return ""
	}
	if v := get("filter"); v != "" && v != "unset" || get("ident") == "set" || get("working-tree-encoding") != "" {
		return convOut
	}
	text, eol := get("text"), get("eol")
	if text == "" {
		switch get("crlf") {
		case "":
		case "unset":
			text = "unset"
		case "input":
			text = "set"
			if eol == "" {
				eol = "lf"
			}
		default:
			text = "set"
		}
	}
	switch {
	case text == "unset":
		return convNone
	case text == "" && eol == "" && c.autocrlf == "false":
		return convNone
	case eol == "crlf", eol == "" && (c.autocrlf == "true" || text != "" && c.crlfEOL):
		return convOut
	}
	return convIn
}

// sizeIs reports whether the worktree's file at f.path is a regular file
// of f's blob size. A path under a symbolic link or another non-folder is
// not looked at (reported true): git's refresh does not refresh it, so
// read-tree writes it anyway.
func sizeIs(top string, f baseFile) bool {
	if dir := path.Dir(f.path); dir != "." && !linkFree(top, dir) {
		return true
	}
	fi, err := os.Lstat(filepath.Join(top, filepath.FromSlash(f.path)))
	if err != nil || !fi.Mode().IsRegular() {
		return true
	}
	return fi.Size() == f.size
}
