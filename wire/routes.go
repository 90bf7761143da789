package wire

import (
	"net/url"
	"strings"
)

// The server's routes (docs/MCP.md). Every operation of the API is one
// route and one MCP tool, named alike; the liveness, readiness and
// shutdown routes are the server's own.
const (
	// APIVersion is the version of the routes. A probe that finds a
	// server with another one reports version-mismatch.
	APIVersion = "1"
	// APIPrefix begins every route.
	APIPrefix = "/api/v1"

	LivePath     = APIPrefix + "/live"     // GET, no token: the liveness document (Live)
	ReadyPath    = APIPrefix + "/ready"    // GET, no token: 200 once the server serves API requests
	ShutdownPath = APIPrefix + "/shutdown" // POST, with the token: the server stops and releases its lease
	MCPPath      = "/mcp"                  // the MCP endpoint (streamable HTTP), with the token
)

// A Route is one operation of the API: its MCP tool's name ("" for the
// one operation that has no tool, a workspace's release), its method and
// its path, whose {binding} or {id} the caller fills in.
type Route struct {
	Tool   string
	Method string
	Path   string
}

// The operations.
var (
	RouteBegin          = Route{"begin_task", "POST", APIPrefix + "/begin"}
	RouteEnd            = Route{"end_task", "POST", APIPrefix + "/end"}
	RouteAllocate       = Route{"workspace_allocate", "POST", APIPrefix + "/workspaces"}
	RouteList           = Route{"workspace_list", "GET", APIPrefix + "/workspaces"}
	RouteShow           = Route{"workspace_show", "GET", APIPrefix + "/workspaces/{binding}"}
	RouteSalvage        = Route{"workspace_salvage", "POST", APIPrefix + "/workspaces/{binding}/salvage"}
	RouteRelease        = Route{"", "POST", APIPrefix + "/workspaces/{binding}/release"}
	RouteReclaimPreview = Route{"workspace_reclaim_preview", "POST", APIPrefix + "/workspaces/{binding}/reclaim/preview"}
	RouteReclaim        = Route{"workspace_reclaim", "POST", APIPrefix + "/workspaces/{binding}/reclaim"}
	RouteRestore        = Route{"workspace_restore", "POST", APIPrefix + "/workspaces/{binding}/restore"}
	RouteRecover        = Route{"workspace_recover", "POST", APIPrefix + "/workspaces/{binding}/recover"}
	RouteBulkPreview    = Route{"workspace_reclaim_bulk_preview", "POST", APIPrefix + "/reclaim/preview"}
	RouteBulkReclaim    = Route{"workspace_reclaim_bulk", "POST", APIPrefix + "/reclaim"}
	RouteAcquire        = Route{"lease_acquire", "POST", APIPrefix + "/leases/acquire"}
	RouteRenew          = Route{"lease_renew", "POST", APIPrefix + "/leases/renew"}
	RouteReleaseLeases  = Route{"lease_release", "POST", APIPrefix + "/leases/release"}
	RouteLeases         = Route{"lease_list", "GET", APIPrefix + "/leases"}
	RouteResolve        = Route{"lease_resolve", "POST", APIPrefix + "/leases/{id}/resolve"}
	RouteCheck          = Route{"check_edits", "POST", APIPrefix + "/check"}
	RouteHeartbeat      = Route{"heartbeat", "POST", APIPrefix + "/heartbeat"}
)

// Routes lists the operations.
func Routes() []Route {
	return []Route{RouteBegin, RouteEnd, RouteAllocate, RouteList, RouteShow, RouteSalvage, RouteRelease,
		RouteReclaimPreview, RouteReclaim, RouteRestore, RouteRecover, RouteBulkPreview, RouteBulkReclaim, RouteAcquire, RouteRenew,
		RouteReleaseLeases, RouteLeases, RouteResolve, RouteCheck, RouteHeartbeat}
}

// Pattern is the route as net/http's ServeMux takes it: "METHOD PATH".
func (r Route) Pattern() string { return r.Method + " " + r.Path }

// URL is the route's path with its {name} segments replaced, in order,
// by values (path-escaped).
func (r Route) URL(values ...string) string {
	p := r.Path
	for _, v := range values {
		i := strings.IndexByte(p, '{')
		j := strings.IndexByte(p, '}')
		if i < 0 || j < i {
			break
		}
		p = p[:i] + url.PathEscape(v) + p[j+1:]
	}
	return p
}

// toolRoutes maps each operation, by its MCP tool's name, to its route.
var toolRoutes = func() map[string]string {
	m := map[string]string{}
	for _, r := range Routes() {
		if r.Tool != "" {
			m[r.Tool] = r.Pattern()
		}
	}
	return m
}()

// ToolRoute is the HTTP route of the operation that the MCP tool named
// tool carries out, such as "GET /api/v1/leases" for lease_list; "" when
// there is no such tool.
func ToolRoute(tool string) string { return toolRoutes[tool] }
