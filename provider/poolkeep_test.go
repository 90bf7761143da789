package provider

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestPoolKeepIgnoredPolicy: pool.keep_ignored takes exact relative
// paths only; a glob, "..", an absolute path, git's folder, an .env or an
// empty name refuses with an error naming the path and why, and changes
// nothing (the policy folder's bytes are the same after).
func TestPoolKeepIgnoredPolicy(t *testing.T) {
	t.Parallel()
	_, p := newProvider(t)
	if names, err := p.PoolKeepIgnored(); err != nil || names == nil || len(names) != 0 {
		t.Fatalf("default: %q, %v; want an empty list", names, err)
	}
	v, err := p.SetPolicy(t.Context(), PolicyPoolKeepIgnored, "node_modules,web/node_modules,target")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"node_modules", "web/node_modules", "target"}
	if !reflect.DeepEqual(v.PoolKeepIgnored, want) || v.Sources[PolicyPoolKeepIgnored] != SourceRepository {
		t.Fatalf("view %q (%s), want %q from the repository", v.PoolKeepIgnored, v.Sources[PolicyPoolKeepIgnored], want)
	}
	if names, err := p.PoolKeepIgnored(); err != nil || !reflect.DeepEqual(names, want) {
		t.Fatalf("PoolKeepIgnored = %q, %v", names, err)
	}
	before := policyFiles(t, p)
	for value, why := range map[string]string{
		"node_*":                           "is a pattern",
		"**/node_modules":                  "is a pattern",
		"node_modules/[ab]":                "is a pattern",
		"!keep":                            "is a pattern",
		":(glob)x":                         "is a pattern",
		"../outside":                       "names . or ..",
		"a/../../b":                        "names . or ..",
		"./node_modules":                   "names . or ..",
		"/abs/node_modules":                "is absolute",
		".git":                             "git's own folder",
		".GIT/hooks":                       "git's own folder",
		"sub/.git/objects":                 "git's own folder",
		".env":                             "environment file",
		"config/.env.local":                "environment file",
		"node_modules,":                    "is empty",
		"a//b":                             "empty name",
		"target/":                          "empty name",
		" node_modules":                    "space",
		"node_modules,target,node_modules": "twice",
		"a\nb":                             "control character",
	} {
		_, err := p.SetPolicy(t.Context(), PolicyPoolKeepIgnored, value)
		if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), why) {
			t.Errorf("set %q: %v, want invalid_argument saying %q", value, err, why)
		}
	}
	if after := policyFiles(t, p); !reflect.DeepEqual(before, after) {
		t.Errorf("a refused value changed the policy:\nbefore %q\nafter  %q", before, after)
	}
	if _, err := p.SetPolicy(t.Context(), PolicyPoolKeepIgnored, ""); err != nil {
		t.Fatal(err)
	}
	if names, err := p.PoolKeepIgnored(); err != nil || len(names) != 0 {
		t.Fatalf("after turning it off: %q, %v", names, err)
	}
}

// TestPoolMaxBytesPolicy: pool.max_bytes takes a size; its default is
// 10GiB; anything else refuses and changes nothing.
func TestPoolMaxBytesPolicy(t *testing.T) {
	t.Parallel()
	_, p := newProvider(t)
	if n, text, src, err := p.PoolMaxBytes(); err != nil || n != 10<<30 || text != DefaultPoolMaxBytes || src != SourceDefault {
		t.Fatalf("default: %d %q %s %v", n, text, src, err)
	}
	if _, err := p.SetPolicy(t.Context(), PolicyPoolMaxBytes, "500MB"); err != nil {
		t.Fatal(err)
	}
	before := policyFiles(t, p)
	for _, bad := range []string{"lots", "-1", "5 parsecs", ""} {
		if _, err := p.SetPolicy(t.Context(), PolicyPoolMaxBytes, bad); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("set %q: %v, want invalid_argument", bad, err)
		}
	}
	if after := policyFiles(t, p); !reflect.DeepEqual(before, after) {
		t.Errorf("a refused value changed the policy")
	}
	if n, _, src, err := p.PoolMaxBytes(); err != nil || n != 500e6 || src != SourceRepository {
		t.Fatalf("after set: %d %s %v", n, src, err)
	}
}

// policyFiles returns every policy record's bytes.
func policyFiles(t *testing.T, p *Provider) map[string]string {
	t.Helper()
	out := map[string]string{}
	ents, err := os.ReadDir(p.policyDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		data, err := os.ReadFile(filepath.Join(p.policyDir(), e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = string(data)
	}
	return out
}
