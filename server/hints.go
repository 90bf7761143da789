package server

import (
	"regexp"
	"strings"
)

// A refusal's hint says what to do next in the caller's words. The
// classifier (the command line's code table) writes the server's hints
// with request fields in snake_case and each operation as {tool:NAME};
// the server writes that operation as the MCP tool's name to an agent and
// as the HTTP route to an API client, so neither sees the other's
// vocabulary, nor the command line's flags.

// A Surface is the way a caller reaches the server's operations.
type Surface int

const (
	SurfaceHTTP Surface = iota // the routes under /api/v1/
	SurfaceMCP                 // the MCP tools, at /mcp and over 'majlis mcp'
)

// toolRoutes maps each operation, by its MCP tool's name, to its HTTP
// route. Every tool has a route; TestToolsHaveRoutes checks both ways.
var toolRoutes = map[string]string{
	"begin_task":                "POST /api/v1/begin",
	"end_task":                  "POST /api/v1/end",
	"workspace_allocate":        "POST /api/v1/workspaces",
	"workspace_list":            "GET /api/v1/workspaces",
	"workspace_show":            "GET /api/v1/workspaces/{binding}",
	"workspace_salvage":         "POST /api/v1/workspaces/{binding}/salvage",
	"workspace_reclaim_preview": "POST /api/v1/workspaces/{binding}/reclaim/preview",
	"workspace_reclaim":         "POST /api/v1/workspaces/{binding}/reclaim",
	"workspace_restore":         "POST /api/v1/workspaces/{binding}/restore",
	"workspace_recover":         "POST /api/v1/workspaces/{binding}/recover",
	"lease_acquire":             "POST /api/v1/leases/acquire",
	"lease_renew":               "POST /api/v1/leases/renew",
	"lease_release":             "POST /api/v1/leases/release",
	"lease_list":                "GET /api/v1/leases",
	"lease_resolve":             "POST /api/v1/leases/{id}/resolve",
	"check_edits":               "POST /api/v1/check",
	"heartbeat":                 "POST /api/v1/heartbeat",
}

// ToolRoute is the HTTP route of the operation that the MCP tool named
// tool carries out, such as "GET /api/v1/leases" for lease_list; "" when
// there is no such tool.
func ToolRoute(tool string) string { return toolRoutes[tool] }

// toolRef is an operation named in a hint.
var toolRef = regexp.MustCompile(`\{tool:([a-z_]+)\}`)

// words writes the operations that text names in the words of surface s:
// the tool's name, or its route with the binding or lease of the refusal's
// details filled in.
func (s Surface) words(text string, details map[string]any) string {
	if !strings.Contains(text, "{tool:") {
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
