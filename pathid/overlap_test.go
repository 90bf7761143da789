package pathid

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func overlapLayout(t testing.TB) string {
	root := tempDir(t)
	layout(t, root,
		"ws/inner/",
		"wsx/",
		"other/",
		"alias -> ws",
		"aliasinner -> ws/inner",
		"absalias -> "+filepath.Join(root, "ws"),
		"ws/dangling -> nowhere",
		"dangling -> nowhere",
	)
	return root
}

func TestCompare(t *testing.T) {
	t.Parallel()
	root := overlapLayout(t)
	ws := filepath.Join(root, "ws")
	p := func(s string) string { return filepath.Join(root, s) }
	tests := []struct {
		name    string
		a, b    string
		want    Overlap
		wantErr []error
	}{
		{name: "equal", a: p("ws"), b: p("ws"),
			want: Overlap{Relation: Equal, Form: FormLexical, A: ws, B: ws}},
		{name: "bind-free alias", a: p("ws/../ws/inner/..//"), b: root + "//ws/",
			want: Overlap{Relation: Equal, Form: FormLexical, A: ws, B: ws}},
		{name: "nested", a: p("ws"), b: p("ws/inner"),
			want: Overlap{Relation: AContainsB, Form: FormLexical, A: ws, B: ws + "/inner"}},
		{name: "nested reversed", a: p("ws/inner/new"), b: p("ws"),
			want: Overlap{Relation: BContainsA, Form: FormLexical, A: ws + "/inner/new", B: ws}},
		{name: "prefix is not containment", a: p("ws"), b: p("wsx"),
			want: Overlap{Relation: Disjoint, A: ws, B: p("wsx")}},
		{name: "siblings", a: p("ws/inner"), b: p("other"),
			want: Overlap{Relation: Disjoint, A: ws + "/inner", B: p("other")}},
		{name: "absent siblings", a: p("ws/new"), b: p("other/new"),
			want: Overlap{Relation: Disjoint, A: ws + "/new", B: p("other/new")}},
		{name: "only physically equal", a: p("alias"), b: p("ws"),
			want: Overlap{Relation: Equal, Form: FormPhysical, A: ws, B: ws}},
		{name: "only physically equal, absolute link", a: p("absalias/"), b: p("alias"),
			want: Overlap{Relation: Equal, Form: FormPhysical, A: ws, B: ws}},
		{name: "only physically contained", a: p("alias/inner"), b: p("ws"),
			want: Overlap{Relation: BContainsA, Form: FormPhysical, A: ws + "/inner", B: ws}},
		{name: "only physically containing", a: p("ws"), b: p("aliasinner"),
			want: Overlap{Relation: AContainsB, Form: FormPhysical, A: ws, B: ws + "/inner"}},
		{name: "absent child of symlinked ancestor", a: p("alias/new/child"), b: p("ws/new"),
			want: Overlap{Relation: BContainsA, Form: FormPhysical, A: ws + "/new/child", B: ws + "/new"}},
		{name: "absent on both sides", a: p("alias/new"), b: p("ws/new"),
			want: Overlap{Relation: Equal, Form: FormPhysical, A: ws + "/new", B: ws + "/new"}},
		// The lexical forms already overlap, so the dangling symlink
		// inside never needs resolving.
		{name: "lexical overlap decides first", a: p("ws"), b: p("ws/dangling"),
			want: Overlap{Relation: AContainsB, Form: FormLexical, A: ws, B: ws + "/dangling"}},
		{name: "unresolvable", a: p("dangling/x"), b: p("ws"),
			want:    Overlap{Relation: Unknown, A: p("dangling/x"), B: ws},
			wantErr: []error{ErrDanglingSymlink}},
		{name: "invalid", a: "", b: p("ws"),
			want:    Overlap{Relation: Unknown, A: "", B: p("ws")},
			wantErr: []error{ErrInvalidPath}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Compare(tt.a, tt.b)
			checkErr(t, err, tt.wantErr...)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Compare(%q, %q) mismatch (-want +got):\n%s", tt.a, tt.b, diff)
			}
			overlaps, err := Overlaps(tt.a, tt.b)
			checkErr(t, err, tt.wantErr...)
			if want := tt.want.Relation != Disjoint; overlaps != want {
				t.Errorf("Overlaps(%q, %q) = %v, want %v", tt.a, tt.b, overlaps, want)
			}
		})
	}
}

func TestCompareRelativePaths(t *testing.T) {
	root := overlapLayout(t)
	t.Chdir(filepath.Join(root, "ws"))
	got, err := Compare("inner", "../alias")
	checkErr(t, err)
	want := Overlap{Relation: BContainsA, Form: FormPhysical, A: filepath.Join(root, "ws/inner"), B: filepath.Join(root, "ws")}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Compare mismatch (-want +got):\n%s", diff)
	}
}

// A bind mount makes one directory reachable under two names that no
// symlink connects. Tests cannot always mount, so the walk's lstat is
// faked here (and a real bind mount is tried in the Linux-only test).
func TestCompareByIdentity(t *testing.T) {
	t.Parallel()
	root := overlapLayout(t)
	mnt, src := filepath.Join(root, "wsx"), filepath.Join(root, "other")
	srcInfo, err := os.Lstat(src)
	if err != nil {
		t.Fatal(err)
	}
	resolveFaked := func(p string) Resolved {
		t.Helper()
		w := newWalker("resolve", p)
		w.track = true
		w.lstat = func(p string) (fs.FileInfo, error) {
			if p == mnt { // as if src were bind-mounted at mnt
				return srcInfo, nil
			}
			return os.Lstat(p)
		}
		r, err := w.walk("/", segment{rest: p})
		checkErr(t, err)
		return Resolved{Lexical: filepath.Clean(p), Physical: r.path, Existing: r.existing, ids: r.ids}
	}
	tests := []struct {
		name string
		a, b string
		want Overlap
	}{
		{name: "same directory", a: mnt, b: src,
			want: Overlap{Relation: Equal, Form: FormIdentity, A: mnt, B: src, AliasA: mnt, AliasB: src}},
		{name: "nested through the mount", a: src, b: mnt + "/new/child",
			want: Overlap{Relation: AContainsB, Form: FormIdentity, A: src, B: mnt + "/new/child", AliasA: src, AliasB: mnt}},
		{name: "absent on both sides", a: mnt + "/new/child", b: src + "/new",
			want: Overlap{Relation: BContainsA, Form: FormIdentity, A: mnt + "/new/child", B: src + "/new", AliasA: mnt, AliasB: src}},
		{name: "different children", a: mnt + "/x", b: src + "/y",
			want: Overlap{Relation: Disjoint, A: mnt + "/x", B: src + "/y"}},
		{name: "unrelated", a: filepath.Join(root, "ws"), b: src,
			want: Overlap{Relation: Disjoint, A: filepath.Join(root, "ws"), B: src}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := resolveFaked(tt.a).Compare(resolveFaked(tt.b))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Compare(%q, %q) mismatch (-want +got):\n%s", tt.a, tt.b, diff)
			}
		})
	}
}

func TestResolve(t *testing.T) {
	t.Parallel()
	root := overlapLayout(t)
	ws := filepath.Join(root, "ws")
	tests := []struct {
		path    string
		want    Resolved
		exists  bool
		wantErr []error
	}{
		{path: root + "/alias/inner/", want: Resolved{Lexical: root + "/alias/inner", Physical: ws + "/inner", Existing: ws + "/inner"}, exists: true},
		{path: root + "/alias/new/x", want: Resolved{Lexical: root + "/alias/new/x", Physical: ws + "/new/x", Existing: ws}},
		{path: root + "/dangling", wantErr: []error{ErrDanglingSymlink}},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			got, err := Resolve(tt.path)
			checkErr(t, err, tt.wantErr...)
			if diff := cmp.Diff(tt.want, got, cmpopts.IgnoreUnexported(Resolved{})); diff != "" {
				t.Errorf("Resolve mismatch (-want +got):\n%s", diff)
			}
			if got.Exists() != tt.exists {
				t.Errorf("Exists() = %v, want %v", got.Exists(), tt.exists)
			}
			if err != nil {
				return
			}
			// The identities recorded on the way are those of the existing
			// directories, nearest first, up to "/".
			var wantIDs []dirID
			for p := got.Existing; ; p = filepath.Dir(p) {
				id, err := Lstat(p)
				checkErr(t, err)
				wantIDs = append(wantIDs, dirID{p, id})
				if p == "/" {
					break
				}
			}
			if diff := cmp.Diff(wantIDs, got.ids, cmp.AllowUnexported(dirID{})); diff != "" {
				t.Errorf("recorded identities mismatch (-want +got):\n%s", diff)
			}
		})
	}

	// One target compared with many peers, resolved once.
	target, err := Resolve(root + "/alias")
	checkErr(t, err)
	for peer, want := range map[string]Relation{"ws/inner": AContainsB, "wsx": Disjoint, "aliasinner/new": AContainsB, "ws": Equal} {
		p, err := Resolve(filepath.Join(root, peer))
		checkErr(t, err)
		if got := target.Compare(p).Relation; got != want {
			t.Errorf("target.Compare(%s) = %v, want %v", peer, got, want)
		}
	}
	if got := (Resolved{}).Compare(target).Relation; got != Unknown {
		t.Errorf("zero Resolved compares as %v, want unknown", got)
	}
}

func TestOverlapString(t *testing.T) {
	t.Parallel()
	tests := []struct {
		o    Overlap
		want string
	}{
		{Overlap{Relation: Equal, Form: FormLexical, A: "/a", B: "/a"}, "/a and /a are the same path"},
		{Overlap{Relation: AContainsB, Form: FormPhysical, A: "/r", B: "/r/x"}, "/r contains /r/x (with symlinks resolved)"},
		{Overlap{Relation: BContainsA, Form: FormIdentity, A: "/m/x", B: "/s", AliasA: "/m", AliasB: "/s"},
			"/m/x lies inside /s (/m and /s are one file, by device and inode)"},
		{Overlap{Relation: Disjoint, A: "/a", B: "/b"}, "/a and /b do not overlap"},
		{Overlap{A: "/a", B: "/b"}, "whether /a and /b overlap is unknown"},
	}
	for _, tt := range tests {
		if got := tt.o.String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
	}
}

func BenchmarkOverlaps(b *testing.B) {
	root := overlapLayout(b)
	layout(b, root, "ws/a/b/c/d/", "other/a/b/c/d/")
	for _, bb := range []struct{ name, a, b string }{
		{"lexical", "ws", "ws/a/b/c/d"},
		{"physical", "alias/a/b", "ws/a/b/c/d"},
		{"disjoint", "ws/a/b/c/d", "other/a/b/c/d"}, // the worst case: every form is tried
	} {
		a, c := filepath.Join(root, bb.a), filepath.Join(root, bb.b)
		b.Run(bb.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := Overlaps(a, c); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	// The retained-peer check: one target resolved once, each peer
	// resolved and compared with it.
	b.Run("peer-vs-resolved-target", func(b *testing.B) {
		target, err := Resolve(filepath.Join(root, "ws/a/b/c/d"))
		if err != nil {
			b.Fatal(err)
		}
		peer := filepath.Join(root, "other/a/b/c/d")
		for b.Loop() {
			p, err := Resolve(peer)
			if err != nil {
				b.Fatal(err)
			}
			if target.Compare(p).Relation != Disjoint {
				b.Fatal("overlap")
			}
		}
	})
}
