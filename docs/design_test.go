// Package docs holds the project's documentation; its one test keeps the
// map of packages in design.md true.
package docs

import (
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// TestDesignMapsEveryPackage: the "Packages" block of design.md names
// every package of the module (a package of internal/ or scripts/ may be
// named in the internal/... or scripts/... entry by its last element), and
// every package it names exists.
func TestDesignMapsEveryPackage(t *testing.T) {
	data, err := os.ReadFile("design.md")
	if err != nil {
		t.Fatal(err)
	}
	block, err := packagesBlock(string(data))
	if err != nil {
		t.Fatal(err)
	}
	pkgs, err := modulePackages("..")
	if err != nil {
		t.Fatal(err)
	}
	exists := map[string]bool{}
	for _, p := range pkgs {
		exists[p] = true
	}
	groups := map[string]string{} // "internal/" -> the internal/... entry's text
	for _, entry := range block {
		name := entry[0]
		switch {
		case strings.HasSuffix(name, "/..."):
			groups[strings.TrimSuffix(name, "...")] = entry[1]
		case !exists[name]:
			t.Errorf("design.md names package %s, which does not exist", name)
		}
	}
	text := ""
	for _, entry := range block {
		text += " " + entry[0] + " " + entry[1] + " "
	}
	for _, p := range pkgs {
		if named(text, p) {
			continue
		}
		if dir, base := path.Split(p); groups[dir] != "" && named(groups[dir], base) {
			continue
		}
		t.Errorf("design.md's Packages block does not name package %s", p)
	}
	// Every package a group entry (internal/..., scripts/...) names exists.
	for dir, text := range groups {
		for _, m := range regexp.MustCompile(`(?:^|, |\), )([a-z]+) \(`).FindAllStringSubmatch(text, -1) {
			if !exists[dir+m[1]] {
				t.Errorf("design.md's %s... entry names %s%s, which does not exist", dir, dir, m[1])
			}
		}
	}
}

// named reports whether text names the package path p as a whole word.
func named(text, p string) bool {
	return regexp.MustCompile(`(^|[\s(,'])` + regexp.QuoteMeta(p) + `($|[\s),.:;'])`).MatchString(text)
}

// packagesBlock returns the entries of the code block under "##
// Packages": each a name (the first column) and its description (the
// rest, with its continuation lines).
func packagesBlock(doc string) ([][2]string, error) {
	_, after, ok := strings.Cut(doc, "\n## Packages\n")
	if !ok {
		return nil, os.ErrNotExist
	}
	_, after, ok = strings.Cut(after, "```\n")
	if !ok {
		return nil, os.ErrNotExist
	}
	body, _, ok := strings.Cut(after, "```")
	if !ok {
		return nil, os.ErrNotExist
	}
	var out [][2]string
	for _, line := range strings.Split(body, "\n") {
		switch {
		case strings.TrimSpace(line) == "":
		case line[0] == ' ' && len(out) > 0:
			out[len(out)-1][1] += " " + strings.TrimSpace(line)
		default:
			name, desc, _ := strings.Cut(line, " ")
			out = append(out, [2]string{name, strings.TrimSpace(desc)})
		}
	}
	return out, nil
}

// modulePackages lists the module's packages below root, as paths
// relative to it: folders holding a .go file that is not a test (this
// test-only folder, testdata and hidden folders aside).
func modulePackages(root string) ([]string, error) {
	seen := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (strings.HasPrefix(n, ".") || n == "testdata" || n == "bin") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
			rel, err := filepath.Rel(root, filepath.Dir(path))
			if err != nil {
				return err
			}
			seen[filepath.ToSlash(rel)] = true
		}
		return nil
	})
	var out []string
	for p := range seen {
		out = append(out, p)
	}
	sort.Strings(out)
	return out, err
}
