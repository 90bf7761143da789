package server

import (
	"net"
	"net/http"
	"strings"
)

// The guards. Every route, liveness and readiness included, answers only
// a loopback peer that addresses this server by its own host name: a web
// page whose host name was rebound to 127.0.0.1 (DNS rebinding) must not
// read even the liveness answer, whose HMAC of a nonce it chose would be
// an oracle for the token. Every route but liveness, readiness and the
// unknown-route refusal's own check needs the bearer token besides.

// hostGuard admits a request only from loopback, with the Host header
// 127.0.0.1:PORT or localhost:PORT of this server's port.
func (s *srv) hostGuard(h http.Handler) http.Handler {
	_, port, _ := net.SplitHostPort(s.addr)
	hosts := map[string]bool{"127.0.0.1:" + port: true, "localhost:" + port: true}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, err := net.SplitHostPort(r.RemoteAddr)
		if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
			writeJSON(w, http.StatusForbidden, errorBody("not_loopback", "requests are accepted from this machine's loopback only"))
			return
		}
		if !hosts[r.Host] {
			writeJSON(w, http.StatusForbidden, errorBody("bad_host", "the Host header must be 127.0.0.1:"+port+" or localhost:"+port))
			return
		}
		h.ServeHTTP(w, r)
	})
}

// guard admits a request only with the bearer token (after hostGuard).
func (s *srv) guard(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !equal(bearerCredentials(r.Header.Get("Authorization")), s.token) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="majlis"`)
			writeJSON(w, http.StatusUnauthorized, errorBody("unauthorized", "a bearer token (the server lease's token) is required"))
			return
		}
		h.ServeHTTP(w, r)
	})
}

// bearerCredentials returns the credentials of an Authorization header of the
// Bearer scheme, or "". The scheme is case-insensitive (RFC 7235,
// section 2.1) and followed by one or more spaces.
func bearerCredentials(a string) string {
	scheme, cred, ok := strings.Cut(a, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.Trim(cred, " ")
}
