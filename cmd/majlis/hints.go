package main

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/majlis-dev/majlis/admission"
	"github.com/majlis-dev/majlis/provider"
)

// The library's errors say what happened and what can be done in words;
// the command line adds the hint that names its commands and flags, and
// the server (its HTTP API and MCP tools) the one that names its request
// fields and operations. Both come from the one code table, chosen and
// filled in by the error's facts.

// A surface is where a failure is shown: it decides the words of a hint.
type surface int

const (
	surfaceCLI surface = iota // the command line: commands and flags
	surfaceAPI                // the server: request fields and {tool:NAME} operations
)

// text is h's hint on s, or "" when it has none there.
func (h hint) text(s surface) string {
	if s == surfaceAPI {
		if h.API == noAPI {
			return ""
		}
		return h.API
	}
	return h.Text
}

// cliHint is the command-line hint of code for an error with details, or
// "", and whether it adds to the library's hint rather than replacing it.
func cliHint(code string, details map[string]any) (text string, adds bool) {
	return hintOn(surfaceCLI, code, details)
}

// hintOn is the hint of code on surface s for an error with details.
func hintOn(s surface, code string, details map[string]any) (text string, adds bool) {
	f := hintFacts(details)
	if c := codeByName[code]; c != nil {
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
		if s == surfaceAPI {
			return "retry with the same request_id: it resumes", false
		}
		return "retry with the same --request-id: it resumes", false
	}
	return "", false
}

// beginHint is the hint of a begin (or an allocate with ports) whose
// workspace was allocated but whose leases were refused.
func beginHint(s surface, be *provider.BeginError) string {
	switch {
	case s == surfaceAPI && be.Ports:
		return fmt.Sprintf("the workspace is left in place: acquire its ports later ({tool:lease_acquire} with holder %s and resources [\"host:port:auto\"]), "+
			"or take workspace %s back ({tool:workspace_reclaim_preview}, then {tool:workspace_reclaim})", be.Task, be.Task)
	case s == surfaceAPI:
		return fmt.Sprintf("the workspace is left in place: retry with request_id %s once the conflict is gone (it resumes), "+
			"or take workspace %s back ({tool:workspace_reclaim_preview}, then {tool:workspace_reclaim})", be.RequestID, be.Task)
	case be.Ports:
		return fmt.Sprintf("the workspace is left in place: acquire its ports later ('majlis lease acquire --holder %s host:port:auto'), "+
			"or take the workspace back with 'majlis workspace reclaim %s'", be.Task, be.Task)
	}
	return fmt.Sprintf("the workspace is left in place: retry with --request-id %s once the conflict is gone (it resumes), "+
		"or take the workspace back with 'majlis workspace reclaim %s'", be.RequestID, be.Task)
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
	if cs, ok := details["conflicts"].([]admission.Conflict); ok && len(cs) > 0 {
		c := cs[0]
		setDefault(f, "holder", c.Lease.Holder)
		setDefault(f, "lease", c.Lease.ID)
		if c.Policy != admission.PolicyHostSingleton && c.Policy != admission.PolicyClusterSingleton {
			setDefault(f, "policy", c.Policy)
		}
		if c.Lease.State == admission.StatePending {
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
func (h hint) matches(f map[string]string) bool {
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

// fillHint replaces each {name} of text by the fact, or by NAME when the
// error does not have it.
func fillHint(text string, f map[string]string) string {
	return placeholder.ReplaceAllStringFunc(text, func(m string) string {
		k := m[1 : len(m)-1]
		if v := f[k]; v != "" {
			return v
		}
		return strings.ToUpper(k)
	})
}
