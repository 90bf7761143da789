package durable

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

type testRecord struct {
	Format string            `json:"format"`
	Name   string            `json:"name"`
	N      int               `json:"n"`
	Meta   map[string]string `json:"meta"`
}

func sample() *testRecord {
	return &testRecord{Format: "majlis.test/1", Name: "a \"quoted\" name", N: 7, Meta: map[string]string{"k": "v"}}
}

// The layout is on disk: it must never change.
func TestSealLayout(t *testing.T) {
	t.Parallel()
	data, digest, err := Seal("test", sample())
	if err != nil {
		t.Fatal(err)
	}
	body := `{"format":"majlis.test/1","name":"a \"quoted\" name","n":7,"meta":{"k":"v"}}`
	sum := sha256.Sum256([]byte(body))
	want := `{"test":` + body + `,"sha256":"` + hex.EncodeToString(sum[:]) + `"}` + "\n"
	if string(data) != want {
		t.Errorf("sealed:\n%s\nwant:\n%s", data, want)
	}
	if digest != "sha256:"+hex.EncodeToString(sum[:]) {
		t.Errorf("digest %s", digest)
	}
	var got testRecord
	d2, b, err := Unseal(data, "test", "majlis.test/1", &got)
	if err != nil {
		t.Fatal(err)
	}
	if d2 != digest || string(b) != body {
		t.Errorf("unseal: digest %s body %s", d2, b)
	}
	if diff := cmp.Diff(*sample(), got); diff != "" {
		t.Error(diff)
	}
	// The general path (not Seal's exact layout) reads it too.
	spaced := strings.Replace(want, `{"test":`, `{ "test" : `, 1)
	if _, _, err := Unseal([]byte(spaced), "test", "majlis.test/1", &got); err != nil {
		t.Errorf("general path: %v", err)
	}
}

func TestUnsealRefuses(t *testing.T) {
	t.Parallel()
	valid, _, _ := Seal("test", sample())
	reseal := func(body string) []byte {
		sum := sha256.Sum256([]byte(body))
		return []byte(`{"test":` + body + `,"sha256":"` + hex.EncodeToString(sum[:]) + `"}` + "\n")
	}
	cases := map[string]struct {
		data []byte
		want string
	}{
		"empty":         {nil, "empty file"},
		"truncated":     {valid[:len(valid)/2], "not a complete record"},
		"altered":       {[]byte(strings.Replace(string(valid), `"n":7`, `"n":8`, 1)), "checksum mismatch"},
		"other kind":    {[]byte(strings.Replace(string(valid), `{"test":`, `{"lease":`, 1)), `missing "test" object`},
		"extra field":   {[]byte(strings.Replace(string(valid), `{"test":`, `{"x":1,"test":`, 1)), "unknown field in the envelope"},
		"no sum":        {[]byte(`{"test":{"format":"majlis.test/1"},"sha256":"xyz"}`), `invalid "sha256"`},
		"no format":     {reseal(`{"name":"a"}`), `missing "format"`},
		"other format":  {reseal(`{"format":"majlis.test/2"}`), `unknown format "majlis.test/2"`},
		"unknown field": {reseal(`{"format":"majlis.test/1","zzz":1}`), "unknown field"},
		"trailing":      {append(append([]byte{}, valid...), "{}"...), "trailing data"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			var r testRecord
			_, _, err := Unseal(c.data, "test", "majlis.test/1", &r)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want an error containing %q", err, c.want)
			}
		})
	}
}

// The fast path of Unseal accepts only what the general path accepts, and
// decodes it identically.
func FuzzUnsealFastAgreesWithGeneral(f *testing.F) {
	valid, _, _ := Seal("test", sample())
	f.Add(valid)
	f.Add(valid[:len(valid)-2])
	f.Add(append([]byte(`{"test":{"format":"majlis.test/1"},"x":1`), valid[len(valid)-79:]...))
	f.Fuzz(func(t *testing.T, data []byte) {
		var fast testRecord
		fd, _, ok := unsealFast(data, "test", "majlis.test/1", &fast)
		if !ok {
			return
		}
		var general testRecord
		env := map[string]json.RawMessage{}
		if err := json.Unmarshal(data, &env); err != nil || len(env) != 2 {
			t.Fatalf("fast path accepted what the general path refuses: %q", data)
		}
		if err := strictUnmarshal(env["test"], &general, true); err != nil {
			t.Fatalf("fast path accepted a body the general path refuses: %v", err)
		}
		if diff := cmp.Diff(general, fast); diff != "" || fd == "" {
			t.Fatalf("fast and general paths disagree:\n%s", diff)
		}
	})
}

// Unseal never panics, and what it accepts seals back to a record it
// accepts with the same body.
func FuzzUnseal(f *testing.F) {
	valid, _, _ := Seal("test", sample())
	f.Add(valid)
	f.Add([]byte(`{"test":{},"sha256":""}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var r testRecord
		_, _, err := Unseal(data, "test", "majlis.test/1", &r)
		if err != nil {
			return
		}
		again, _, err := Seal("test", &r)
		if err != nil {
			t.Fatal(err)
		}
		var r2 testRecord
		if _, _, err := Unseal(again, "test", "majlis.test/1", &r2); err != nil {
			t.Fatalf("a resealed accepted record is refused: %v", err)
		}
		if diff := cmp.Diff(r, r2); diff != "" {
			t.Fatal(diff)
		}
	})
}
