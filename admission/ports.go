package admission

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"syscall"

	"github.com/majlis-dev/majlis/wire"
)

// AutoPort is the host name that asks admission to pick a free port:
// "host:port:auto" is granted as "host:port:N", N a port of the
// repository's port_range that no live lease holds and that nothing
// listens on.
const AutoPort = "port:auto"

// DefaultPortRange is port_range when the policy does not set it: above
// the usual development ports (3000, 5173, 8080) and below Linux's default
// ephemeral range (32768-60999), so that outgoing connections do not take
// the ports majlis hands out.
const DefaultPortRange = "20000-29999"

// portPrefix is the host-name prefix of a port lease.
const portPrefix = "port:"

// ParsePortRange reads "LO-HI", 1024 <= LO <= HI <= 65535.
func ParsePortRange(s string) (lo, hi int, err error) {
	a, b, ok := strings.Cut(s, "-")
	if ok {
		lo, err = strconv.Atoi(a)
		if err == nil {
			hi, err = strconv.Atoi(b)
		}
	}
	if !ok || err != nil || lo < 1024 || hi > 65535 || lo > hi {
		return 0, 0, fmt.Errorf("port_range %q is not LO-HI: two ports from 1024 to 65535, the first not above the second", s)
	}
	return lo, hi, nil
}

// PortOf returns the port of a host lease key "port:N", or 0.
func PortOf(key string) int {
	n, ok := strings.CutPrefix(key, portPrefix)
	if !ok {
		return 0
	}
	p, err := strconv.Atoi(n)
	if err != nil || p < 1 || p > 65535 || strconv.Itoa(p) != n {
		return 0
	}
	return p
}

// ErrNoFreePort: host:port:auto found no port of the range that is free
// (no live lease, nothing listening).
var ErrNoFreePort = wire.Sentinel("no_free_port", "admission: no free port in the range")

// probePort is how a candidate port is proven free; tests replace it.
var probePort = probeLoopback

// probeLoopback proves port free by binding it on 127.0.0.1 and ::1 (TCP)
// and closing the listeners at once. A port some process listens on, on
// either address or on a wildcard address, fails to bind and is not free.
// When the host has no ::1 (IPv6 disabled: the address cannot be assigned,
// or the family is unsupported), 127.0.0.1 alone decides: nothing can
// listen on ::1 there either. Any other failure on either address counts
// as busy.
func probeLoopback(port int) error {
	l, err := net.Listen("tcp4", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return err
	}
	defer l.Close()
	l6, err := net.Listen("tcp6", net.JoinHostPort("::1", strconv.Itoa(port)))
	if err != nil {
		if ipv6Unavailable(err) {
			return nil
		}
		return err
	}
	return l6.Close()
}

// ipv6Unavailable reports whether a bind on ::1 failed because the host
// has no IPv6 loopback, rather than because the port is taken.
func ipv6Unavailable(err error) bool {
	return errors.Is(err, syscall.EADDRNOTAVAIL) || errors.Is(err, syscall.EAFNOSUPPORT) ||
		errors.Is(err, syscall.EPROTONOSUPPORT)
}

// pickPorts gives every auto target at idx a port, inside the host
// ledger's write transaction c: a port of [lo, hi] that no live host lease
// (active, quarantined or pending, of any holder) names, that no earlier
// target of the request took, and that probePort proves free. The scan
// starts at a random port of the range and wraps, so that tasks spread
// over the range instead of all probing its first ports. Because c holds
// the ledger's write lock until the grant commits, no other admission can
// pick the same port meanwhile.
func (e *evaluation) pickPorts(ctx context.Context, c *sql.Conn, idx []int) error {
	var autos []int
	for _, i := range idx {
		if e.p.targets[i].auto {
			autos = append(autos, i)
		}
	}
	if len(autos) == 0 {
		return nil
	}
	lo, hi, err := ParsePortRange(e.p.portRange)
	if err != nil {
		return &Error{Op: "acquire", Resource: "host:" + AutoPort, Err: ErrMalformed, Reason: err.Error(),
			Hint: "set the policy's port_range again", Details: map[string]any{"policy_key": PolicyPortRange}}
	}
	taken := map[int]bool{}
	for _, i := range idx {
		if t := e.p.targets[i]; !t.auto {
			taken[PortOf(t.key)] = true
		}
	}
	rows, err := c.QueryContext(ctx, `SELECT key FROM leases WHERE scope = 'host' AND key LIKE 'port:%'`+liveClause)
	if err != nil {
		return err
	}
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			rows.Close()
			return err
		}
		taken[PortOf(k)] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	size := hi - lo + 1
	next, tried, busy := rand.IntN(size), 0, 0
	for _, i := range autos {
		port := 0
		for ; tried < size && port == 0; tried++ {
			cand := lo + (next+tried)%size
			if taken[cand] {
				continue
			}
			if probePort(cand) != nil {
				busy++
				continue
			}
			port = cand
		}
		if port == 0 {
			return &Error{Op: "acquire", Resource: "host:" + AutoPort, Err: ErrNoFreePort,
				Reason: fmt.Sprintf("no free port in %d-%d for %d ports: %d held by live leases, %d in use by other programs",
					lo, hi, len(autos), len(taken)-countOutside(taken, lo, hi), busy),
				Hint: "release ports no longer needed, or widen the policy's port_range"}
		}
		taken[port] = true
		t := &e.p.targets[i]
		t.key = portPrefix + strconv.Itoa(port)
		t.resource = canonicalResource(ScopeHost, t.key, false)
	}
	return nil
}

// countOutside counts the ports of taken outside [lo, hi] (including the
// 0 of keys that name no port).
func countOutside(taken map[int]bool, lo, hi int) int {
	n := 0
	for p := range taken {
		if p < lo || p > hi {
			n++
		}
	}
	return n
}
