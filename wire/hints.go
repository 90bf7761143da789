package wire

import (
	"fmt"
	"regexp"
	"strings"
)

// The library's errors say what happened and what can be done in words;
// the command line adds the hint that names its commands and flags, and
// the server (its HTTP API and MCP tools) the one that names its request
// fields and operations. Both come from the code table, chosen and filled
// in by the error's facts.

// text is h's hint on s, or "" when it has none there.
func (h Hint) text(s Surface) string {
	if s == SurfaceCLI {
		return h.Text
	}
	if h.API == NoAPI {
		return ""
	}
	return h.API
}

// HintFor is the hint of code on surface s for an error with details
// (its facts), or "", and whether it adds to the library's hint rather
// than replacing it. Over the server, its operations are still written
// {tool:NAME} (Refusal.In writes them).
func HintFor(s Surface, code string, details map[string]any) (text string, adds bool) {
	return hintOn(s, codeByName[code], details)
}

func hintOn(s Surface, c *Code, details map[string]any) (text string, adds bool) {
	f := hintFacts(details)
	if c != nil {
		for _, h := range c.Hints {
			if h.matches(f) {
				// A row of the command line only: the library's words
				// stand on the server.
				if t := h.text(s); t != "" {
					return fillHint(t, f), h.Adds
				}
				return "", false
			}
		}
	}
	if f["resumable"] != "" {
		if s != SurfaceCLI {
			return "retry with the same request_id: it resumes", false
		}
		return "retry with the same --request-id: it resumes", false
	}
	return "", false
}

// beginHint is the hint of a begin (or an allocate with ports) whose
// workspace was allocated but whose leases were refused.
func beginHint(s Surface, b Begun) string {
	task, requestID, ports := b.BegunTask()
	switch {
	case s != SurfaceCLI && ports:
		return fmt.Sprintf("the workspace is left in place: acquire its ports later ({tool:lease_acquire} with holder %s and resources [\"host:port:auto\"]), "+
			"or take workspace %s back ({tool:workspace_reclaim_preview}, then {tool:workspace_reclaim})", task, task)
	case s != SurfaceCLI:
		return fmt.Sprintf("the workspace is left in place: retry with request_id %s once the conflict is gone (it resumes), "+
			"or take workspace %s back ({tool:workspace_reclaim_preview}, then {tool:workspace_reclaim})", requestID, task)
	case ports:
		return fmt.Sprintf("the workspace is left in place: acquire its ports later ('majlis lease acquire --holder %s host:port:auto'), "+
			"or take the workspace back: 'majlis workspace reclaim %s --preview', then --confirm DIGEST", task, task)
	}
	return fmt.Sprintf("the workspace is left in place: retry with --request-id %s once the conflict is gone (it resumes), "+
		"or take the workspace back: 'majlis workspace reclaim %s --preview', then --confirm DIGEST", requestID, task)
}

// hintFacts are the string facts of details, with the holder, lease and
// policy of the first conflict when the error names none itself.
func hintFacts(details map[string]any) map[string]string {
	f := map[string]string{}
	for k, v := range details {
		switch v := v.(type) {
		case string:
			f[k] = v
		case bool:
			if v {
				f[k] = "true"
			}
		case int, int64, float64:
			f[k] = fmt.Sprint(v)
		}
	}
	if cs, ok := details["conflicts"].([]Conflict); ok && len(cs) > 0 {
		c := cs[0]
		setDefault(f, "holder", c.Lease.Holder)
		setDefault(f, "lease", c.Lease.ID)
		if c.Policy != PolicyHostSingleton && c.Policy != PolicyClusterSingleton {
			setDefault(f, "policy", c.Policy)
		}
		if c.Lease.State == StatePending {
			f["pending"] = "true"
		}
	}
	return f
}

func setDefault(f map[string]string, k, v string) {
	if _, ok := f[k]; !ok && v != "" {
		f[k] = v
	}
}

// matches reports whether every condition of h holds: "key" (a fact that
// is set) or "key=value", separated by spaces.
func (h Hint) matches(f map[string]string) bool {
	for _, cond := range strings.Fields(h.When) {
		k, want, eq := strings.Cut(cond, "=")
		got, ok := f[k]
		if !ok || got == "" || eq && got != want {
			return false
		}
	}
	return true
}

var placeholder = regexp.MustCompile(`\{([a-z_]+)\}`)

// FillHint replaces each {name} of text by the fact of details, or by
// NAME when the error does not have it.
func FillHint(text string, details map[string]any) string {
	return fillHint(text, hintFacts(details))
}

func fillHint(text string, f map[string]string) string {
	return placeholder.ReplaceAllStringFunc(text, func(m string) string {
		k := m[1 : len(m)-1]
		if v := f[k]; v != "" {
			return v
		}
		return strings.ToUpper(k)
	})
}

// Text is h's hint on surface s ("" when it has none there), its
// placeholders unfilled.
func (h Hint) On(s Surface) string { return h.text(s) }
