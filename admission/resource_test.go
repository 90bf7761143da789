package admission

import (
	"errors"
	"strings"
	"testing"
)

func TestParseResource(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in      string
		want    Resource
		literal string
		subtree bool
		bad     string // a fragment of the refusal's reason
	}{
		{in: "file:src/a.go", want: Resource{ScopeFile, "src/a.go"}},
		{in: "file:/abs/a.go", want: Resource{ScopeFile, "/abs/a.go"}},
		{in: "file:odd *?[name]", want: Resource{ScopeFile, "odd *?[name]"}},
		{in: "intent:src/auth/**", want: Resource{ScopeIntent, "src/auth/**"}, literal: "src/auth", subtree: true},
		{in: "intent:src/auth", want: Resource{ScopeIntent, "src/auth"}, literal: "src/auth"},
		{in: "intent:**", want: Resource{ScopeIntent, "**"}, literal: "", subtree: true},
		{in: "intent:./**", want: Resource{ScopeIntent, "./**"}, literal: ".", subtree: true},
		{in: "host:port:3000", want: Resource{ScopeHost, "port:3000"}},
		{in: "host:" + strings.Repeat("x", 200), want: Resource{ScopeHost, strings.Repeat("x", 200)}},
		{in: "src/a.go", bad: "want file:PATH"},
		{in: "dir:src", bad: "unknown scope"},
		{in: "file:", bad: "empty path"},
		{in: "file:a\nb", bad: "control character"},
		{in: "file:\xff", bad: "UTF-8"},
		{in: "intent:src/*.go", bad: "literal path"},
		{in: "intent:src/**/x", bad: "literal path"},
		{in: "intent:src/a?", bad: "literal path"},
		{in: "intent:src/[ab]/**", bad: "literal path"},
		{in: "intent:/**", bad: "empty path"},
		{in: "intent:", bad: "empty path"},
		{in: "host:", bad: "host name"},
		{in: "host:port 3000", bad: "host name"},
		{in: "host:pört", bad: "host name"},
		{in: "host:" + strings.Repeat("x", 201), bad: "host name"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseResource(tc.in)
			if tc.bad != "" {
				if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.bad) {
					t.Fatalf("ParseResource(%q) = %v, %v; want ErrInvalid mentioning %q", tc.in, got, err, tc.bad)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ParseResource(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
			}
			if got.String() != tc.in {
				t.Errorf("String() = %q, want %q", got.String(), tc.in)
			}
			if got.Scope == ScopeIntent {
				lit, sub := got.intentParts()
				if lit != tc.literal || sub != tc.subtree {
					t.Errorf("intentParts() = %q, %v; want %q, %v", lit, sub, tc.literal, tc.subtree)
				}
			}
		})
	}
}

func TestOverlaps(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		a    string
		aSub bool
		b    string
		bSub bool
		want bool
	}{
		{"src/a.go", false, "src/a.go", false, true},
		{"src/a.go", false, "src/b.go", false, false},
		{"src", false, "src/a.go", false, false}, // a literal covers itself only
		{"src", true, "src/a.go", false, true},
		{"src", true, "src", false, true},
		{"src", true, "srcx/a.go", false, false}, // components, not prefixes
		{"src", true, "src/auth", true, true},
		{"src/auth", true, "src/api", true, false},
		{"", true, "anything/at/all", false, true}, // the root subtree
		{"", true, "", false, true},
		{"", false, "src", true, false},
	} {
		if got := overlaps(tc.a, tc.aSub, tc.b, tc.bSub); got != tc.want {
			t.Errorf("overlaps(%q,%v, %q,%v) = %v, want %v", tc.a, tc.aSub, tc.b, tc.bSub, got, tc.want)
		}
		if got := overlaps(tc.b, tc.bSub, tc.a, tc.aSub); got != tc.want {
			t.Errorf("overlaps is not symmetric for %q,%v %q,%v", tc.a, tc.aSub, tc.b, tc.bSub)
		}
	}
}

// FuzzParseResource: ParseResource never panics; what it accepts prints
// back as it was written and parses again to the same value; every
// refusal is ErrInvalid.
func FuzzParseResource(f *testing.F) {
	for _, s := range []string{"file:src/a.go", "intent:src/**", "intent:**", "intent:a", "host:port:3000",
		"host:", "file:", "intent:/**", "x:y", "", ":", "intent:a/**/**", "file:\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseResource(s)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("ParseResource(%q): %v is not ErrInvalid", s, err)
			}
			return
		}
		if r.String() != s {
			t.Fatalf("ParseResource(%q).String() = %q", s, r.String())
		}
		again, err := ParseResource(r.String())
		if err != nil || again != r {
			t.Fatalf("reparse of %q = %+v, %v", s, again, err)
		}
		switch r.Scope {
		case ScopeHost:
			if !validHostName(r.Raw) {
				t.Fatalf("accepted host name %q", r.Raw)
			}
		case ScopeIntent:
			lit, _ := r.intentParts()
			if strings.ContainsAny(lit, "*?[") {
				t.Fatalf("accepted intent %q with a wildcard in its literal part %q", s, lit)
			}
		case ScopeFile:
			if r.Raw == "" || strings.ContainsRune(r.Raw, 0) {
				t.Fatalf("accepted file path %q", r.Raw)
			}
		default:
			t.Fatalf("accepted scope %q", r.Scope)
		}
	})
}
