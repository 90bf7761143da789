package pathid

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestStatAndLstat(t *testing.T) {
	t.Parallel()
	dir := tempDir(t)
	layout(t, dir, "file", "other", "sub/", "link -> file", "dirlink -> sub")
	p := func(s string) string { return filepath.Join(dir, s) }
	if err := os.Link(p("file"), p("hardlink")); err != nil {
		t.Fatal(err)
	}
	id := func(f func(string) (FileID, error), path string) FileID {
		t.Helper()
		got, err := f(path)
		checkErr(t, err)
		if got.IsZero() {
			t.Fatalf("identity of %s is zero", path)
		}
		return got
	}
	file := id(Stat, p("file"))
	tests := []struct {
		name string
		a, b FileID
		want bool
	}{
		{"Stat follows a symlink", id(Stat, p("link")), file, true},
		{"Lstat does not", id(Lstat, p("link")), file, false},
		{"Lstat of a plain file", id(Lstat, p("file")), file, true},
		{"a hard link is the same file", id(Stat, p("hardlink")), file, true},
		{"another file differs", id(Stat, p("other")), file, false},
		{"directory through a symlink", id(Stat, p("dirlink")), id(Stat, p("sub")), true},
		{"directory spelled differently", id(Stat, p("sub/../sub/")), id(Lstat, p("sub")), true},
		{"the zero FileID equals nothing", FileID{}, FileID{}, false},
		{"not even with a device", FileID{Dev: 1}, FileID{Dev: 1}, false},
	}
	for _, tt := range tests {
		if got := tt.a.Equal(tt.b); got != tt.want {
			t.Errorf("%s: %v.Equal(%v) = %v, want %v", tt.name, tt.a, tt.b, got, tt.want)
		}
	}

	_, err := Stat(p("missing"))
	checkErr(t, err, fs.ErrNotExist)
	_, err = Stat(p("link-to-nowhere"))
	checkErr(t, err, fs.ErrNotExist)
	_, err = Lstat("")
	checkErr(t, err, ErrInvalidPath)
}

// fakeInfo is a FileInfo that did not come from the operating system.
type fakeInfo struct{}

func (fakeInfo) Name() string       { return "fake" }
func (fakeInfo) Size() int64        { return 0 }
func (fakeInfo) Mode() fs.FileMode  { return 0 }
func (fakeInfo) ModTime() time.Time { return time.Time{} }
func (fakeInfo) IsDir() bool        { return false }
func (fakeInfo) Sys() any           { return nil }

func TestFileIDOf(t *testing.T) {
	t.Parallel()
	dir := tempDir(t)
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := FileIDOf(fi)
	checkErr(t, err)
	want, err := Stat(dir)
	checkErr(t, err)
	if !got.Equal(want) {
		t.Errorf("FileIDOf = %v, Stat = %v", got, want)
	}

	_, err = FileIDOf(fakeInfo{})
	checkErr(t, err, ErrNoIdentity)
}

func TestLinkCount(t *testing.T) {
	t.Parallel()
	dir := tempDir(t)
	layout(t, dir, "single", "linked", "sub/", "symlink -> linked")
	if err := os.Link(filepath.Join(dir, "linked"), filepath.Join(dir, "sub/alias")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path    string
		want    uint64
		wantErr []error
	}{
		{path: "single", want: 1},
		{path: "linked", want: 2},
		{path: "sub/alias", want: 2},
		{path: "sub", wantErr: []error{ErrNotRegular}},
		{path: "symlink", wantErr: []error{ErrNotRegular}}, // a final symlink is not followed
		{path: "missing", wantErr: []error{fs.ErrNotExist}},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			got, err := LinkCount(filepath.Join(dir, tt.path))
			checkErr(t, err, tt.wantErr...)
			if got != tt.want {
				t.Errorf("LinkCount(%s) = %d, want %d", tt.path, got, tt.want)
			}
		})
	}
}

func TestCaseInsensitive(t *testing.T) {
	t.Parallel()
	dir := tempDir(t)
	got, err := CaseInsensitive(dir)
	checkErr(t, err)

	// The direct check the probe must agree with.
	layout(t, dir, "Direct")
	direct, err := Stat(filepath.Join(dir, "Direct"))
	checkErr(t, err)
	swapped, err := Stat(filepath.Join(dir, "dIRECT"))
	want := err == nil && swapped.Equal(direct)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("CaseInsensitive(%s) = %v, but a direct check says %v", dir, got, want)
	}
	if fsType := fileSystemType(t, dir); fsType == "ext4" && got {
		t.Errorf("CaseInsensitive(%s) = true on ext4 without casefolding", dir)
	}

	// The probe cleans up after itself.
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.Contains(strings.ToLower(e.Name()), "caseprobe") {
			t.Errorf("the probe left %s behind", e.Name())
		}
	}

	_, err = CaseInsensitive(filepath.Join(dir, "missing"))
	checkErr(t, err, fs.ErrNotExist)
}

func TestSwapCase(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{".pathid-CaseProbe-123": ".PATHID-cASEpROBE-123", "é-Ab": "é-aB", "": ""} {
		if got := swapCase(in); got != want {
			t.Errorf("swapCase(%q) = %q, want %q", in, got, want)
		}
	}
}
