package salvage

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/majlis-dev/majlis/gitops"
)

// git add stores a file through its attributes and settings (text, eol,
// core.autocrlf, filters such as ident or a clean filter,
// working-tree-encoding), and a checkout writes it back through the
// reverse ones. The two are not each other's inverse: a binary file marked
// text loses its CR bytes, a CRLF file under text=auto comes back LF. A
// reclaim deletes the workspace after its salvage, so the salvage keeps
// the bytes on disk of every file whose checkout would not give them back
// (findConverted), beside the tree, in the meta commit: each as
// convertedPrefix<n>, and convertedList maps the numbers to modes and
// paths ("<mode> <n> <path>", NUL-terminated, as refusedList). The salvage
// tree still holds the content as git stores it, for people reading the
// salvage with git show and git diff. Restore writes the kept bytes over
// what its checkout wrote (restoreConverted).
const (
	convertedPrefix = "majlis/converted/"
	convertedList   = "majlis/converted-files"
)

// conversionSettings are the settings that decide whether git may convert
// a file between the worktree and the object store, beside the
// .gitattributes files of the worktree: read with core.fileMode by one
// `git config` (worktreeSettings).
type conversionSettings struct {
	// autocrlf says core.autocrlf is true or input; crlfOut that a
	// checkout writes CRLF line endings to text files without an eol
	// attribute (core.autocrlf=true, or core.eol=crlf unless
	// core.autocrlf=input).
	autocrlf, crlfOut bool
	// attrSource says attributes may come from somewhere else than the
	// worktree's .gitattributes files and info/attributes: a
	// core.attributesFile, attr.tree, or GIT_ATTR_SOURCE.
	attrSource bool
}

// worktreeSettings asks git, run in the worktree dir, for core.fileMode
// (whether it ignores the executable bit) and the conversion settings, at
// once, from every configuration file git reads there.
func worktreeSettings(ctx context.Context, dir, ceiling string) (fileModeIgnored bool, cs conversionSettings, err error) {
	res, err := gitops.Run(ctx, dir, gitops.Cmd{ReadOnly: true, Ceiling: ceiling, OKCodes: []int{1}},
		"config", "-z", "--get-regexp", `^(core\.(filemode|autocrlf|eol|attributesfile)|attr\.tree)$`)
	if err != nil {
		return false, cs, err
	}
	vals := map[string]string{}
	for _, rec := range strings.Split(strings.TrimSuffix(string(res.Stdout), "\x00"), "\x00") {
		if rec == "" {
			continue
		}
		k, v, ok := strings.Cut(rec, "\n")
		if !ok {
			v = "true" // a key without a value is a true boolean
		}
		vals[strings.ToLower(k)] = v // the last one wins, as in git
	}
	if v, ok := vals["core.filemode"]; ok {
		b, ok := parseBool(v)
		fileModeIgnored = ok && !b
	}
	input := false
	if v, ok := vals["core.autocrlf"]; ok {
		b, isBool := parseBool(v)
		input = strings.EqualFold(v, "input")
		cs.autocrlf = input || !isBool || b
		cs.crlfOut = cs.autocrlf && !input
	}
	if v := vals["core.eol"]; !input && !strings.EqualFold(v, "lf") && !strings.EqualFold(v, "native") && v != "" {
		cs.crlfOut = true // crlf, or a value git refuses: assume the worst
	}
	_, file := vals["core.attributesfile"]
	_, tree := vals["attr.tree"]
	cs.attrSource = file || tree || os.Getenv("GIT_ATTR_SOURCE") != ""
	return fileModeIgnored, cs, nil
}

// parseBool reads a configuration boolean as git does; ok is false for a
// value that is not one.
func parseBool(v string) (b, ok bool) {
	switch strings.ToLower(v) {
	case "true", "yes", "on":
		return true, true
	case "false", "no", "off", "":
		return false, true
	}
	if n, err := strconv.ParseInt(v, 0, 64); err == nil {
		return n != 0, true
	}
	return false, false
}

// isAttributesFile reports whether p names a .gitattributes file.
func isAttributesFile(p string) bool {
	return p == ".gitattributes" || strings.HasSuffix(p, "/.gitattributes")
}

// mayConvert reports whether git could convert any file of the worktree:
// core.autocrlf is on, or some attributes file exists (a .gitattributes
// in the index, or one newAttributes finds among the files the salvage
// adds, info/attributes, the user's global attributes file, a configured
// one). Only then does a salvage look for converted files: without them
// git stores every file's bytes as they are, and checks them out as they
// were. newAttributes runs last, and only when all else says no.
func (s *Survey) mayConvert(newAttributes func() bool) bool {
	if s.conversion.autocrlf || s.conversion.attrSource || s.attributesInIndex {
		return true
	}
	if _, err := os.Stat(filepath.Join(s.commonDir, "info", "attributes")); err == nil {
		return true
	}
	global := ""
	if x := os.Getenv("XDG_CONFIG_HOME"); x != "" {
		global = filepath.Join(x, "git", "attributes")
	} else if h := os.Getenv("HOME"); h != "" {
		global = filepath.Join(h, ".config", "git", "attributes")
	}
	if global != "" {
		if _, err := os.Stat(global); err == nil {
			return true
		}
	}
	return newAttributes()
}

// changesAddAttributes reports whether a .gitattributes file is among the
// paths changes add or modify.
func changesAddAttributes(changes []gitops.RawChange) bool {
	for _, c := range changes {
		if c.Status != 'D' && isAttributesFile(c.Path) {
			return true
		}
	}
	return false
}

// indexHasAttributes reports whether the index file index holds a
// .gitattributes file (or could not be read).
func indexHasAttributes(index string, hashLen int) bool {
	data, err := os.ReadFile(index)
	if err != nil {
		return true
	}
	found := false
	if err := gitops.ScanIndex(data, hashLen, func(e gitops.IndexEntry) { found = found || isAttributesFile(e.Path) }); err != nil {
		return true
	}
	return found
}

// findConverted lists the files of the private index file index (just
// filled by git add) whose bytes on disk a checkout of their blob would
// not give back (for s.converted). It asks git: `git check-attr` names the
// files under a conversion (with core.autocrlf on, every file not marked
// -text), and checkoutHashes what a checkout of each of them writes,
// compared with the file's bytes.
func (s *Survey) findConverted(ctx context.Context, dir, ceiling, index string) ([]unpopulatedFile, error) {
	var converted []unpopulatedFile
	data, err := os.ReadFile(index)
	if err != nil {
		return nil, err
	}
	entries, err := regularEntries(ctx, dir, ceiling, index, data, s.hashLen)
	if err != nil || len(entries) == 0 {
		return nil, err
	}
	paths := make([]string, len(entries))
	for i, e := range entries {
		paths[i] = e.Path
	}
	o := gitops.Cmd{ReadOnly: true, IndexFile: index, Ceiling: ceiling, LiteralPathspecs: true}
	attrs, err := gitops.CheckAttrs(ctx, dir, o, paths, gitops.ConversionAttributes)
	if err != nil {
		return nil, err
	}
	// The bytes a checkout of each blob writes, through the same
	// attributes and settings, compared with the file's. A file not on
	// disk (outside a sparse cone, or deleted since git add) is not
	// looked at. Where only end-of-line conversion applies, a file without
	// a CR that a checkout writes with LF endings is stored and written
	// back as it is: git is not asked about it.
	var asked []gitops.IndexEntry
	raws := map[string]string{}
	buf := make([]byte, 32<<10)
	for _, e := range entries {
		a := attrs[e.Path]
		if !converts(a, s.conversion.autocrlf) {
			continue
		}
		name := filepath.Join(dir, filepath.FromSlash(e.Path))
		fi, err := os.Lstat(name)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		raw, cr, err := fileHash(name, s.hashLen, buf)
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted since git add, as a concurrent writer may
		}
		if err != nil {
			return nil, err
		}
		if !cr && eolOnly(a) && !writesCRLF(a, s.conversion) {
			continue
		}
		raws[e.Path] = raw
		asked = append(asked, e)
	}
	if len(asked) == 0 {
		return nil, nil
	}
	out, err := s.checkoutHashes(ctx, dir, ceiling, index, asked)
	if err != nil {
		return nil, err
	}
	for _, e := range asked {
		if raw := raws[e.Path]; raw == "" || out[e.Path] != raw {
			converted = append(converted, unpopulatedFile{e.Path, e.Mode})
		}
	}
	return converted, nil
}

// eolOnly reports whether the only conversion the attributes a allow is
// of line endings: no filter, ident or working-tree-encoding.
func eolOnly(a map[string]string) bool {
	for _, k := range []string{"filter", "ident", "working-tree-encoding"} {
		if v := a[k]; v != "" && v != "unspecified" && v != "unset" {
			return false
		}
	}
	return true
}

// writesCRLF reports whether a checkout may write CRLF line endings for a
// file with the attributes a under the settings cs: an eol=crlf
// attribute, or, without an eol attribute, core.autocrlf=true or
// core.eol=crlf.
func writesCRLF(a map[string]string, cs conversionSettings) bool {
	switch a["eol"] {
	case "lf":
		return false
	case "crlf":
		return true
	}
	return a["crlf"] != "input" && cs.crlfOut
}

// checkoutHashes returns the blob ids of the bytes a checkout writes for
// each of entries (paths of the worktree dir, whose attributes come from
// its files and the private index file index), by path. git writes them
// all at once without touching the disk: `git archive`, which converts
// each file as a checkout does, of a tree of entries alone (made through
// a second private index), read as it streams. A file the archive leaves
// out or changes otherwise (export-ignore, export-subst) is then kept, and
// so is every file when a filter fails.
func (s *Survey) checkoutHashes(ctx context.Context, dir, ceiling, index string, entries []gitops.IndexEntry) (map[string]string, error) {
	f, err := os.CreateTemp(s.gitDir, "majlis-snapshot-*.converted.index")
	if err != nil {
		return nil, err
	}
	tmp := f.Name()
	f.Close()
	os.Remove(tmp) // git creates it
	defer func() { os.Remove(tmp); os.Remove(tmp + ".lock") }()
	var in strings.Builder
	for _, e := range entries {
		fmt.Fprintf(&in, "%s %s\t%s\x00", e.Mode, e.ID, e.Path)
	}
	o := gitops.Cmd{IndexFile: tmp, Ceiling: ceiling, Stdin: []byte(in.String())}
	if _, err := gitops.Run(ctx, dir, o, "update-index", "-z", "--index-info"); err != nil {
		return nil, err
	}
	o.Stdin = nil
	res, err := gitops.Run(ctx, dir, o, "write-tree")
	if err != nil {
		return nil, err
	}
	tree := strings.TrimSuffix(string(res.Stdout), "\n")
	if !gitops.IsObjectID(tree) {
		return nil, gitops.Unexpected("git write-tree", "%q is not an object id", tree)
	}
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		_, err := gitops.Run(ctx, dir, gitops.Cmd{ReadOnly: true, IndexFile: index, Ceiling: ceiling, Stdout: pw},
			"archive", "--format=tar", "--worktree-attributes", tree)
		pw.CloseWithError(err)
		done <- err
	}()
	hashes := map[string]string{}
	perr := func() error {
		tr := tar.NewReader(pr)
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return err
			}
			if h.Typeflag != tar.TypeReg {
				continue
			}
			var hh hash.Hash = sha1.New()
			if s.hashLen == 32 {
				hh = sha256.New()
			}
			fmt.Fprintf(hh, "blob %d\x00", h.Size)
			if _, err := io.Copy(hh, tr); err != nil {
				return err
			}
			hashes[h.Name] = hex.EncodeToString(hh.Sum(nil))
		}
	}()
	if perr == nil {
		// the rest of the archive's last record
		_, perr = io.Copy(io.Discard, pr)
	}
	pr.CloseWithError(errors.New("read no further")) // git stops, if it still writes
	gerr := <-done
	var ge *gitops.Error
	switch {
	case gerr != nil && errors.As(gerr, &ge) && ctx.Err() == nil:
		// A filter that failed: every file is kept as it is.
		return map[string]string{}, nil
	case gerr != nil:
		return nil, gerr
	case perr != nil:
		return nil, gitops.Unexpected("git archive", "%v", perr)
	}
	return hashes, nil
}

// converts reports whether git may convert a file with the attributes a
// (`git check-attr` values: set, unset, unspecified or a value), where
// autocrlf says core.autocrlf is on.
func converts(a map[string]string, autocrlf bool) bool {
	given := func(k string) bool { v := a[k]; return v != "" && v != "unspecified" && v != "unset" }
	if given("filter") || given("ident") || given("working-tree-encoding") {
		return true
	}
	if a["text"] == "unset" || a["crlf"] == "unset" {
		return false // binary, or -text: stored as it is
	}
	return given("text") || given("crlf") || given("eol") || autocrlf
}

// fileHash is the blob id of the bytes of the file name, as they are;
// cr says whether they hold a CR. buf is where it reads them. A file whose
// size changed while it was read has no id, and counts as holding a CR.
func fileHash(name string, hashLen int, buf []byte) (id string, cr bool, err error) {
	f, err := os.Open(name)
	if err != nil {
		return "", false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", false, err
	}
	var h hash.Hash = sha1.New()
	if hashLen == 32 {
		h = sha256.New()
	}
	fmt.Fprintf(h, "blob %d\x00", fi.Size())
	var n int64
	for {
		k, err := f.Read(buf)
		if k > 0 {
			h.Write(buf[:k])
			cr = cr || bytes.IndexByte(buf[:k], '\r') >= 0
			n += int64(k)
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return "", false, err
		}
	}
	if n != fi.Size() {
		return "", true, nil // changed while read: its bytes are kept
	}
	return hex.EncodeToString(h.Sum(nil)), cr, nil
}
