package admission

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/majlis-dev/majlis/wire"
)

// A Scope is the kind of resource a lease covers (wire.Scope).
type Scope = wire.Scope

// Scopes (see wire).
const (
	ScopeFile    = wire.ScopeFile
	ScopeIntent  = wire.ScopeIntent
	ScopeHost    = wire.ScopeHost
	ScopeCluster = wire.ScopeCluster
)

// maxName is the longest holder, host name or request id accepted, in bytes.
const maxName = 200

// subtreeSuffix marks an intent that covers a whole subtree.
const subtreeSuffix = "/**"

// A Resource is a parsed resource argument, before its path (for file and
// intent scopes) is made canonical against a checkout.
type Resource struct {
	Scope Scope
	// Raw is what follows "scope:" as the caller wrote it: a path for
	// file, a path or path + "/**" for intent, a name for host.
	Raw string
}

// ParseResource parses "file:PATH", "intent:PATH", "intent:PATH/**",
// "intent:**" (the whole checkout) or "host:NAME". It checks syntax only:
// paths are made canonical (and checked for safety) against a checkout at
// admission. Errors wrap ErrInvalid.
func ParseResource(s string) (Resource, error) {
	scope, raw, ok := strings.Cut(s, ":")
	if !ok {
		return Resource{}, invalidResource(s, "want file:PATH, intent:PATH[/**] or host:NAME")
	}
	r := Resource{Scope: Scope(scope), Raw: raw}
	switch r.Scope {
	case ScopeFile:
		if err := checkPathSyntax(raw); err != "" {
			return Resource{}, invalidResource(s, err)
		}
	case ScopeIntent:
		lit, _ := r.intentParts()
		if raw == "**" {
			break
		}
		if err := checkPathSyntax(lit); err != "" {
			return Resource{}, invalidResource(s, err)
		}
		if strings.ContainsAny(lit, "*?[") {
			return Resource{}, invalidResource(s, "an intent is a literal path or a literal path followed by /** (no other *, ? or [)")
		}
	case ScopeHost, ScopeCluster:
		if !validHostName(raw) {
			return Resource{}, invalidResource(s, fmt.Sprintf("a %s name is 1 to %d printable ASCII characters without spaces", scope, maxName))
		}
	default:
		return Resource{}, invalidResource(s, fmt.Sprintf("unknown scope %q (want file, intent, host or cluster)", scope))
	}
	return r, nil
}

func invalidResource(s, reason string) error {
	return &Error{Op: "parse", Resource: s, Err: ErrInvalid, Reason: reason,
		Hint: "write file:PATH, intent:PATH, intent:DIR/** or host:NAME (for example host:port:3000)"}
}

// String returns the resource as ParseResource reads it.
func (r Resource) String() string { return string(r.Scope) + ":" + r.Raw }

// intentParts splits an intent into its literal path and whether it covers
// the subtree below that path. "**" is the subtree of the checkout root,
// whose literal part is "" (the root).
// Literal returns the path a file or intent resource names (for DIR/**,
// DIR; "" for the whole checkout, intent:**), and "" for a host resource.
func (r Resource) Literal() string {
	switch r.Scope {
	case ScopeFile:
		return r.Raw
	case ScopeIntent:
		lit, _ := r.intentParts()
		return lit
	}
	return ""
}

func (r Resource) intentParts() (literal string, subtree bool) {
	if r.Raw == "**" {
		return "", true
	}
	if lit, ok := strings.CutSuffix(r.Raw, subtreeSuffix); ok {
		return lit, true
	}
	return r.Raw, false
}

// checkPathSyntax returns why p cannot be a resource path, or "".
func checkPathSyntax(p string) string {
	switch {
	case p == "":
		return "empty path"
	case !utf8.ValidString(p):
		return "the path is not valid UTF-8"
	}
	for _, c := range p {
		if c < 0x20 || c == 0x7f {
			return "the path contains a control character"
		}
	}
	return ""
}

func validHostName(s string) bool {
	if len(s) == 0 || len(s) > maxName {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' {
			return false
		}
	}
	return true
}

// validName reports whether s can be a holder or request id: 1 to maxName
// bytes of printable UTF-8 (spaces allowed, not at either end).
func validName(s string) bool {
	if len(s) == 0 || len(s) > maxName || !utf8.ValidString(s) || strings.TrimSpace(s) != s {
		return false
	}
	for _, c := range s {
		if !unicode.IsPrint(c) {
			return false
		}
	}
	return true
}

// canonicalResource renders a canonical key as the resource string stored
// with a lease.
func canonicalResource(scope Scope, key string, subtree bool) string {
	switch {
	case scope == ScopeHost || scope == ScopeCluster:
		return string(scope) + ":" + key
	case subtree && key == "":
		return string(scope) + ":**"
	case subtree:
		return string(scope) + ":" + key + subtreeSuffix
	case key == "":
		return string(scope) + ":."
	}
	return string(scope) + ":" + key
}

// under reports whether key lies at or below root (both canonical keys;
// "" is the checkout root and contains everything).
func under(key, root string) bool {
	return root == "" || key == root || strings.HasPrefix(key, root+"/")
}

// overlaps reports whether two path patterns name a common file: literals
// when equal, a literal and a subtree when the literal lies in it, two
// subtrees when one contains the other.
func overlaps(a string, aSub bool, b string, bSub bool) bool {
	switch {
	case !aSub && !bSub:
		return a == b
	case aSub && !bSub:
		return under(b, a)
	case !aSub && bSub:
		return under(a, b)
	}
	return under(a, b) || under(b, a)
}
