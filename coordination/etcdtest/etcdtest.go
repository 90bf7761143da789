// Package etcdtest runs an embedded single-node etcd for tests: in a
// temporary folder, on loopback ports chosen free, with tick and election
// timeouts low enough for leases of one second. Tests share one server per
// test binary (Shared) and keep apart by key prefix (Prefix).
package etcdtest

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// A Server is a running embedded etcd.
type Server struct {
	e        *embed.Etcd
	dir      string
	Endpoint string // its client URL
}

var (
	sharedOnce sync.Once
	shared     *Server
	sharedErr  error
)

// Shared returns the test binary's one server, starting it on first use.
// Call Stop on it from TestMain after m.Run.
func Shared(tb testing.TB) *Server {
	tb.Helper()
	sharedOnce.Do(func() { shared, sharedErr = Start("") })
	if sharedErr != nil {
		tb.Fatal(sharedErr)
	}
	return shared
}

// StopShared stops the shared server, if it was started.
func StopShared() {
	if shared != nil {
		shared.Stop()
	}
}

// Start starts a server whose data lives in dir (a new temporary folder
// when empty). It does not fsync its log: tests need no durability
// across a crash of the machine, and a loaded machine's fsyncs would
// only slow them.
func Start(dir string) (*Server, error) { return start(dir, false) }

// StartDurable starts a server that fsyncs its log as a real member
// does: benchmarks compare with it.
func StartDurable(dir string) (*Server, error) { return start(dir, true) }

func start(dir string, fsync bool) (*Server, error) {
	own := dir == ""
	if own {
		d, err := os.MkdirTemp("", "majlis-etcd-")
		if err != nil {
			return nil, err
		}
		dir = d
	}
	var lastErr error
	for try := 0; try < 5; try++ {
		s, err := startOnce(dir, fsync)
		if err == nil {
			if own {
				s.dir = dir
			}
			return s, nil
		}
		lastErr = err
	}
	if own {
		os.RemoveAll(dir)
	}
	return nil, lastErr
}

func startOnce(dir string, fsync bool) (*Server, error) {
	ports, err := freePorts(2)
	if err != nil {
		return nil, err
	}
	cfg := embed.NewConfig()
	cfg.Name = "majlis-test"
	cfg.Dir = filepath.Join(dir, "data")
	cfg.TickMs, cfg.ElectionMs = 10, 100 // etcd's minimum lease TTL: 1 s
	cfg.LogLevel = "error"
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	cfg.UnsafeNoFsync = !fsync
	client := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", ports[0])}
	peer := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", ports[1])}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
	cfg.InitialCluster = cfg.Name + "=" + peer.String()
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, err
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return nil, err
	case <-time.After(60 * time.Second):
		e.Close()
		return nil, fmt.Errorf("etcdtest: the embedded etcd did not become ready")
	}
	return &Server{e: e, Endpoint: client.String()}, nil
}

// Stop stops the server and removes a folder Start made.
func (s *Server) Stop() {
	s.e.Close()
	if s.dir != "" {
		os.RemoveAll(s.dir)
	}
}

// freePorts returns n loopback ports that were free a moment ago.
func freePorts(n int) ([]int, error) {
	var out []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		out = append(out, l.Addr().(*net.TCPAddr).Port)
	}
	return out, nil
}

// Prefix returns a key prefix of the test's own, so that tests sharing a
// server never see each other's keys.
func Prefix(tb testing.TB) string {
	return "/t/" + strings.NewReplacer("/", "_", " ", "_").Replace(tb.Name()) + "/"
}
