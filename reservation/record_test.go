package reservation

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/majlis-dev/majlis/internal/procid"
	"golang.org/x/sys/unix"
)

func sampleRecord() *Record {
	t0 := time.Date(2026, 11, 29, 18, 0, 0, 123456789, time.UTC)
	return &Record{
		Format:          Format,
		Resource:        "reclaim.T-14",
		Purpose:         "reclaim",
		Token:           "0123456789abcdef0123456789abcdef",
		Generation:      7,
		AcquiredAt:      t0,
		RenewedAt:       t0.Add(time.Second),
		ExpiresAt:       t0.Add(5 * time.Minute),
		AuthorityDigest: "sha256:deadbeef",
		Metadata:        map[string]string{"binding": "T-14", "request_id": "r-1"},
		Owner: procid.Owner{
			Hostname: "host", MachineID: "3d1219c7c4c5404aaa1f6d2a48adfda4",
			BootID: "034fecf8-5e0b-4c1f-8e45-171e5bfad5db", PIDNamespace: "pid:[4026531836]",
			PID: 4242, StartTime: 987654,
		},
	}
}

func mustEncode(t testing.TB, r *Record) []byte {
	t.Helper()
	b, err := encodeRecord(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// reseal wraps an arbitrary lease object with a correct checksum, so tests
// can reach the checks that come after the checksum.
func reseal(lease string) []byte {
	sum := sha256.Sum256([]byte(lease))
	return []byte(`{"lease":` + lease + `,"sha256":"` + hex.EncodeToString(sum[:]) + `"}` + "\n")
}

// mutateLease decodes the lease object of a valid file into a generic map,
// lets f change it, and reseals it.
func mutateLease(t *testing.T, f func(m map[string]any)) []byte {
	t.Helper()
	var env struct{ Lease map[string]any }
	if err := json.Unmarshal(mustEncode(t, sampleRecord()), &env); err != nil {
		t.Fatal(err)
	}
	f(env.Lease)
	b, err := json.Marshal(env.Lease)
	if err != nil {
		t.Fatal(err)
	}
	return reseal(string(b))
}

func TestRecordRoundTrip(t *testing.T) {
	t.Parallel()
	want := sampleRecord()
	got, err := decodeRecord(mustEncode(t, want))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

func TestDecodeRefusesMalformed(t *testing.T) {
	t.Parallel()
	valid := mustEncode(t, sampleRecord())
	flipped := bytes.Clone(valid)
	flipped[bytes.Index(flipped, []byte(`"generation":7`))+len(`"generation":`)] = '8'
	owner := func(k string) func(m map[string]any) {
		return func(m map[string]any) { delete(m["owner"].(map[string]any), k) }
	}
	cases := map[string]struct {
		data []byte
		want string
	}{
		"empty":             {nil, "empty file"},
		"whitespace":        {[]byte(" \n"), "empty file"},
		"truncated":         {valid[:len(valid)/2], "truncated"},
		"truncated by one":  {valid[:len(valid)-3], "truncated"},
		"not json":          {[]byte("hello"), "truncated"},
		"checksum mismatch": {flipped, "checksum mismatch"},
		"no checksum":       {[]byte(`{"lease":{}}`), "sha256"},
		"lease not object":  {reseal(`"x"`), `missing "lease" object`},
		"trailing data":     {append(bytes.Clone(valid), []byte(`{}`)...), "trailing data"},
		"unknown envelope":  {[]byte(`{"lease":{},"sha256":"x","extra":1}`), "unknown field"},
		"unknown format": {mutateLease(t, func(m map[string]any) { m["format"] = "majlis.lease/2" }),
			"unknown format"},
		"no format":        {mutateLease(t, func(m map[string]any) { delete(m, "format") }), `missing "format"`},
		"unknown field":    {mutateLease(t, func(m map[string]any) { m["color"] = "red" }), "unknown field"},
		"no token":         {mutateLease(t, func(m map[string]any) { delete(m, "token") }), `missing field "token"`},
		"no generation":    {mutateLease(t, func(m map[string]any) { delete(m, "generation") }), `missing field "generation"`},
		"no expiry":        {mutateLease(t, func(m map[string]any) { delete(m, "expires_at") }), `missing field "expires_at"`},
		"no authority":     {mutateLease(t, func(m map[string]any) { delete(m, "authority_digest") }), `missing field "authority_digest"`},
		"no metadata":      {mutateLease(t, func(m map[string]any) { delete(m, "metadata") }), `missing field "metadata"`},
		"no owner":         {mutateLease(t, func(m map[string]any) { delete(m, "owner") }), `missing field "owner"`},
		"owner not object": {mutateLease(t, func(m map[string]any) { m["owner"] = 3 }), `owner`},
		"no owner pid":     {mutateLease(t, owner("pid")), `owner.pid`},
		"no start time":    {mutateLease(t, owner("start_time")), `owner.start_time`},
		"no boot id":       {mutateLease(t, owner("boot_id")), `owner.boot_id`},
		"no machine id":    {mutateLease(t, owner("machine_id")), `owner.machine_id`},
		"no pid ns":        {mutateLease(t, owner("pid_namespace")), `owner.pid_namespace`},
		"no hostname":      {mutateLease(t, owner("hostname")), `owner.hostname`},
		"bad token":        {mutateLease(t, func(m map[string]any) { m["token"] = "XYZ" }), "invalid token"},
		"generation 0":     {mutateLease(t, func(m map[string]any) { m["generation"] = 0 }), "generation 0"},
		"negative gen":     {mutateLease(t, func(m map[string]any) { m["generation"] = -1 }), "lease object"},
		"bad resource":     {mutateLease(t, func(m map[string]any) { m["resource"] = "../x" }), "invalid resource"},
		"empty purpose":    {mutateLease(t, func(m map[string]any) { m["purpose"] = "" }), "empty purpose"},
		"bad time":         {mutateLease(t, func(m map[string]any) { m["expires_at"] = "tomorrow" }), "lease object"},
		"expiry first": {mutateLease(t, func(m map[string]any) { m["expires_at"] = "2020-01-01T00:00:00Z" }),
			"expires_at not after"},
		"zero pid":       {mutateLease(t, func(m map[string]any) { m["owner"].(map[string]any)["pid"] = 0 }), "invalid owner pid"},
		"empty boot id":  {mutateLease(t, func(m map[string]any) { m["owner"].(map[string]any)["boot_id"] = "" }), "incomplete owner"},
		"zero starttime": {mutateLease(t, func(m map[string]any) { m["owner"].(map[string]any)["start_time"] = 0 }), "start_time 0"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r, err := decodeRecord(tc.data)
			if err == nil {
				t.Fatalf("decodeRecord accepted a malformed record: %+v", r)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not mention %q", err, tc.want)
			}
		})
	}
}

// Every operation on a malformed lease refuses with ErrMalformed, names
// the file, and changes nothing.
func TestMalformedLeaseRefusesEverything(t *testing.T) {
	t.Parallel()
	d := openTestDir(t)
	lp := d.leasePath("res")
	garbage := []string{"", "{", `{"lease":{},"sha256":"00"}`, string(mustEncode(t, sampleRecord()))} // last: resource mismatch
	for i, g := range garbage {
		if err := os.WriteFile(lp, []byte(g), 0o600); err != nil {
			t.Fatal(err)
		}
		ops := map[string]func() error{
			"acquire": func() error {
				_, err := d.Acquire(t.Context(), Request{Resource: "res", Purpose: "p", TTL: time.Minute})
				return err
			},
			"inspect": func() error { _, err := d.Inspect("res"); return err },
			"assess":  func() error { _, err := d.Assess("res"); return err },
			"recover": func() error { _, err := d.Recover(t.Context(), "res"); return err },
		}
		for op, f := range ops {
			err := f()
			if !errors.Is(err, ErrMalformed) {
				t.Errorf("garbage %d: %s: got %v, want ErrMalformed", i, op, err)
				continue
			}
			if !strings.Contains(err.Error(), lp) {
				t.Errorf("garbage %d: %s: error does not name the file: %v", i, op, err)
			}
			if b, _ := os.ReadFile(lp); string(b) != g {
				t.Errorf("garbage %d: %s changed the file", i, op)
			}
		}
	}
	// A malformed high-water mark refuses acquisition too.
	os.Remove(lp)
	if err := os.WriteFile(d.genPath("res"), []byte("junk"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := d.Acquire(t.Context(), Request{Resource: "res", Purpose: "p", TTL: time.Minute})
	if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), d.genPath("res")) {
		t.Errorf("acquire with malformed high-water mark: got %v", err)
	}
	if _, err := os.Stat(lp); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("refused acquire left a lease behind")
	}
	assertNoTemps(t, d)
}

// A lease name that is not a regular file (a FIFO, a symbolic link, even
// to a valid record) is malformed: every operation refuses at once, names
// the file and leaves it as it is. Opening a FIFO to read it would block
// until someone writes to it: the operation would hang instead of refusing.
func TestNonRegularLeaseRefusesEverything(t *testing.T) {
	t.Parallel()
	kinds := map[string]func(t *testing.T, d *Dir, lp string){
		"fifo": func(t *testing.T, d *Dir, lp string) {
			if err := unix.Mkfifo(lp, 0o600); err != nil {
				t.Fatal(err)
			}
		},
		"symlink to a fifo": func(t *testing.T, d *Dir, lp string) {
			fifo := filepath.Join(t.TempDir(), "fifo")
			if err := unix.Mkfifo(fifo, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(fifo, lp); err != nil {
				t.Fatal(err)
			}
		},
		"symlink to a record": func(t *testing.T, d *Dir, lp string) {
			r := sampleRecord()
			r.Resource = "res"
			target := filepath.Join(t.TempDir(), "res.lease")
			if err := os.WriteFile(target, mustEncode(t, r), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, lp); err != nil {
				t.Fatal(err)
			}
		},
	}
	for name, mk := range kinds {
		t.Run(name, func(t *testing.T) {
			d := openTestDir(t)
			lp := d.leasePath("res")
			mk(t, d, lp)
			before, err := os.Lstat(lp)
			if err != nil {
				t.Fatal(err)
			}
			ops := map[string]func() error{
				"acquire": func() error {
					_, err := d.Acquire(t.Context(), Request{Resource: "res", Purpose: "p", TTL: time.Minute})
					return err
				},
				"inspect": func() error { _, err := d.Inspect("res"); return err },
				"assess":  func() error { _, err := d.Assess("res"); return err },
				"recover": func() error { _, err := d.Recover(t.Context(), "res"); return err },
			}
			for op, f := range ops {
				err := f()
				if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), lp) {
					t.Errorf("%s: got %v, want ErrMalformed naming %s", op, err, lp)
				}
				after, err := os.Lstat(lp)
				if err != nil || !os.SameFile(before, after) || after.Mode() != before.Mode() {
					t.Errorf("%s changed the lease name: %v", op, err)
				}
			}
		})
	}
}

func FuzzDecodeRecord(f *testing.F) {
	valid, _ := encodeRecord(sampleRecord())
	f.Add(valid)
	f.Add([]byte{})
	f.Add([]byte(`{"lease":{},"sha256":""}`))
	f.Add(valid[:len(valid)/2])
	f.Add(reseal(`{"format":"majlis.lease/1"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := decodeRecord(data)
		if err != nil {
			return
		}
		// Accepted: the checksum must really cover the lease bytes.
		var env struct {
			Lease  json.RawMessage `json:"lease"`
			SHA256 string          `json:"sha256"`
		}
		if err := json.Unmarshal(data, &env); err != nil {
			t.Fatalf("accepted a record whose envelope does not parse: %v", err)
		}
		sum := sha256.Sum256(env.Lease)
		if hex.EncodeToString(sum[:]) != env.SHA256 {
			t.Fatalf("accepted a record whose digest does not match")
		}
		if err := validate(r); err != nil {
			t.Fatalf("accepted an invalid record: %v", err)
		}
		// And what we accept, we can write back and read again identically.
		again, err := decodeRecord(mustEncode(t, r))
		if err != nil {
			t.Fatalf("re-encoded record refused: %v", err)
		}
		if diff := cmp.Diff(r, again); diff != "" {
			t.Fatalf("re-encoding changed the record:\n%s", diff)
		}
	})
}

func assertNoTemps(t *testing.T, d *Dir) {
	t.Helper()
	matches, _ := filepath.Glob(filepath.Join(d.path, ".*"+tmpSuffix))
	if len(matches) > 0 {
		t.Errorf("temporary files left behind: %v", matches)
	}
}
