package pathid

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestLexicalFrom(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, base, path string
		want             string
		wantErr          error
	}{
		{name: "parent traversal", base: "/base", path: "a/../b", want: "/base/b"},
		{name: "trailing slashes", base: "/base", path: "a/b//", want: "/base/a/b"},
		{name: "double slashes", base: "/base", path: "a//b", want: "/base/a/b"},
		{name: "dot components", base: "/base", path: "./a/./b/.", want: "/base/a/b"},
		{name: "dot", base: "/base", path: ".", want: "/base"},
		{name: "above the base", base: "/base/x", path: "../../y", want: "/y"},
		{name: "above the root", base: "/", path: "../../..", want: "/"},
		{name: "absolute ignores base", base: "/base", path: "//x/../y/", want: "/y"},
		{name: "messy base", base: "/base//x/../", path: "a", want: "/base/a"},
		{name: "empty path", base: "/base", path: "", wantErr: ErrInvalidPath},
		{name: "NUL byte", base: "/base", path: "a\x00b", wantErr: ErrInvalidPath},
		{name: "relative base", base: "base", path: "a", wantErr: ErrInvalidPath},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := LexicalFrom(tt.base, tt.path)
			if tt.wantErr != nil {
				checkErr(t, err, tt.wantErr)
				return
			}
			checkErr(t, err)
			if got != tt.want {
				t.Errorf("LexicalFrom(%q, %q) = %q, want %q", tt.base, tt.path, got, tt.want)
			}
		})
	}
}

func TestLexicalUsesWorkingDirectory(t *testing.T) {
	dir := tempDir(t)
	t.Chdir(dir)
	for _, tt := range []struct{ path, want string }{
		{"x", filepath.Join(dir, "x")},
		{"x/../y/", filepath.Join(dir, "y")},
		{".", dir},
		{"/abs//p/", "/abs/p"},
	} {
		got, err := Lexical(tt.path)
		checkErr(t, err)
		if got != tt.want {
			t.Errorf("Lexical(%q) = %q, want %q", tt.path, got, tt.want)
		}
	}
	if _, err := Lexical(""); err == nil {
		t.Error(`Lexical("") succeeded, want ErrInvalidPath`)
	}
}

func TestRelate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		a, b string
		want Relation
	}{
		{"/a/b", "/a/b", Equal},
		{"/a/b/", "/a//b", Equal},
		{"/a/x/../b", "/a/b", Equal},
		{"/a/b", "/a/b/c", AContainsB},
		{"/a/b/c/d", "/a/b", BContainsA},
		{"/a/b", "/a/bc", Disjoint}, // a prefix, not a containment
		{"/a/bc", "/a/b", Disjoint},
		{"/a/b", "/a/b.d", Disjoint},
		{"/a/b", "/a/c", Disjoint},
		{"/", "/a", AContainsB},
		{"/", "/", Equal},
		{"/a", "/", BContainsA},
		{"a", "a/b", AContainsB},
		{"a/b", "ab", Disjoint},
		{".", "a", AContainsB},
		{"", "a", AContainsB}, // "" cleans to "."
		{".", "..", BContainsA},
		{"..", "../x", AContainsB},
		{"..", "../..", BContainsA},
		{"../..", "../x", AContainsB},
		{"..", "..x", AContainsB}, // "..x" is a name in the working directory
		{"../a", "../a/b", AContainsB},
		{"../a", "../b", Disjoint},
		{"../a", "../../b", Unknown}, // depends on the name of the working directory's parent
		{"../../b", "../a", Unknown},
		{"a", "/a", Unknown},
		{"/a", "a", Unknown},
	}
	for _, tt := range tests {
		t.Run(tt.a+" vs "+tt.b, func(t *testing.T) {
			if got := Relate(tt.a, tt.b); got != tt.want {
				t.Errorf("Relate(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.want)
			}
			wantContains := tt.want == Equal || tt.want == AContainsB
			if got := Contains(tt.a, tt.b); got != wantContains {
				t.Errorf("Contains(%q, %q) = %v, want %v", tt.a, tt.b, got, wantContains)
			}
		})
	}
}

func TestRelationOverlapping(t *testing.T) {
	t.Parallel()
	for r, want := range map[Relation]bool{Unknown: true, Disjoint: false, Equal: true, AContainsB: true, BContainsA: true} {
		if got := r.Overlapping(); got != want {
			t.Errorf("%v.Overlapping() = %v, want %v", r, got, want)
		}
	}
	var zero Relation
	if zero != Unknown {
		t.Errorf("zero Relation is %v, want unknown: a forgotten result must not read as disjoint", zero)
	}
}

// components splits a cleaned absolute path into its names: the oracle for
// component-wise containment, written independently of Relate.
func components(p string) []string {
	var cs []string
	for c := range strings.SplitSeq(p, "/") {
		if c != "" && c != "." {
			cs = append(cs, c)
		}
	}
	// Resolve ".." lexically, the way Clean does, so the oracle does not
	// depend on Clean.
	var out []string
	for _, c := range cs {
		if c == ".." {
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
			continue
		}
		out = append(out, c)
	}
	return out
}

// oracle relates two absolute paths by their components.
func oracle(a, b string) Relation {
	ca, cb := components(a), components(b)
	switch {
	case slices.Equal(ca, cb):
		return Equal
	case len(ca) < len(cb) && slices.Equal(ca, cb[:len(ca)]):
		return AContainsB
	case len(cb) < len(ca) && slices.Equal(cb, ca[:len(cb)]):
		return BContainsA
	}
	return Disjoint
}

var mirror = map[Relation]Relation{Unknown: Unknown, Disjoint: Disjoint, Equal: Equal, AContainsB: BContainsA, BContainsA: AContainsB}

func FuzzRelate(f *testing.F) {
	for _, s := range [][3]string{
		{"/a/b", "/a/bc", "/a/b/c"},
		{"/a/../b/", "//b", "/b/c/.."},
		{"..", "../..", "../x"},
		{"a", "/a", "."},
		{"", "./a/", "a/b"},
		{"/", "/x", "/x/y"},
	} {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, a, b, c string) {
		r := Relate(a, b)

		// Reflexive.
		if got := Relate(a, a); got != Equal {
			t.Fatalf("Relate(%q, %q) = %v, want equal", a, a, got)
		}
		// Antisymmetric unless equal: swapping the arguments mirrors the
		// answer, so both cannot contain each other without being equal.
		if got := Relate(b, a); got != mirror[r] {
			t.Fatalf("Relate(%q, %q) = %v but Relate(%q, %q) = %v", a, b, r, b, a, got)
		}
		// Cleaning is idempotent and does not change the answer.
		if got := Relate(filepath.Clean(a), filepath.Clean(b)); got != r {
			t.Fatalf("Relate of cleaned %q, %q = %v, want %v", a, b, got, r)
		}
		if got := Contains(a, b); got != (r == Equal || r == AContainsB) {
			t.Fatalf("Contains(%q, %q) = %v, inconsistent with Relate = %v", a, b, got, r)
		}

		// Component-wise: for absolute paths, the answer is the oracle's.
		if filepath.IsAbs(a) && filepath.IsAbs(b) {
			if want := oracle(a, b); r != want {
				t.Fatalf("Relate(%q, %q) = %v, want %v (component-wise)", a, b, r, want)
			}
			// A name that merely extends the last one is a sibling.
			if ca := filepath.Clean(a); ca != "/" {
				if got := Relate(ca, ca+"x"); got != Disjoint {
					t.Fatalf("Relate(%q, %q) = %v, want disjoint", ca, ca+"x", got)
				}
			}
		}
		// Relative paths: a definite answer must hold wherever the working
		// directory is.
		if !filepath.IsAbs(a) && !filepath.IsAbs(b) && r != Unknown {
			for _, wd := range []string{"/w1/w2/w3/w4/w5/w6/w7/w8", "/v/v/v/v/v/v/v/v/v/v/v/v"} {
				if strings.Count(a, "..")+strings.Count(b, "..") > 8 {
					break // the oracle's working directory would not be deep enough
				}
				if want := oracle(wd+"/"+a, wd+"/"+b); r != want {
					t.Fatalf("Relate(%q, %q) = %v, but from %s it is %v", a, b, r, wd, want)
				}
			}
		}
		// Transitive.
		if r == AContainsB && Relate(b, c) == AContainsB {
			if got := Relate(a, c); got != AContainsB {
				t.Fatalf("%q contains %q contains %q, but Relate(%q, %q) = %v", a, b, c, a, c, got)
			}
		}
	})
}
