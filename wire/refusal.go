package wire

import (
	"regexp"
	"strings"
)

// A Refusal is a failed call as a script sees it: the command line's
// error object ({"code", "message", "details"}) and the exit status the
// command line would have given (docs/cli.md: 1 failure, 2 usage, 3
// refused for safety, 4 held, 5 not found). The server's API and MCP
// tools answer with it.
type Refusal struct {
	Code     string         `json:"code"`
	Message  string         `json:"message"`
	Details  map[string]any `json:"details"`
	ExitCode ExitCode       `json:"exit_code"`
}

// Hint is what the refusal says to do next, when it says.
func (r Refusal) Hint() string {
	h, _ := r.Details["hint"].(string)
	return h
}

// A Surface is the way a caller reaches majlis: it decides the words of a
// hint. The server's hints name request fields in snake_case, never a
// flag, and each operation as {tool:NAME}, which it writes as that tool's
// name over MCP and as its route over HTTP, so that neither caller sees
// the other's vocabulary, nor the command line's flags.
type Surface int

const (
	SurfaceHTTP Surface = iota // the routes under /api/v1/
	SurfaceMCP                 // the MCP tools, at /mcp and over 'majlis mcp'
	SurfaceCLI                 // the command line: commands and flags
)

// toolRef is an operation named in a hint.
var toolRef = regexp.MustCompile(`\{tool:([a-z_]+)\}`)

// words writes the operations that text names in the words of surface s:
// the tool's name, or its route with the binding or lease of the refusal's
// details filled in.
func (s Surface) words(text string, details map[string]any) string {
	if s == SurfaceCLI || !strings.Contains(text, "{tool:") {
		return text
	}
	return toolRef.ReplaceAllStringFunc(text, func(m string) string {
		name := m[len("{tool:") : len(m)-1]
		route, ok := toolRoutes[name]
		if s == SurfaceMCP || !ok {
			return name
		}
		for placeholder, fact := range map[string]string{"{binding}": "binding", "{id}": "lease"} {
			if v, _ := details[fact].(string); v != "" {
				route = strings.ReplaceAll(route, placeholder, v)
			}
		}
		return route
	})
}

// In is r as surface s shows it: the operations its message and hint
// name ({tool:NAME}) written as s names them.
func (r Refusal) In(s Surface) Refusal {
	r.Message = s.words(r.Message, r.Details)
	if h, ok := r.Details["hint"].(string); ok {
		d := make(map[string]any, len(r.Details))
		for k, v := range r.Details {
			d[k] = v
		}
		d["hint"] = s.words(h, r.Details)
		r.Details = d
	}
	return r
}
