package provider

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// Provider records share one sealed layout, the one lease files use
// (docs/leases.md): a single JSON object {"<kind>": BODY, "sha256": HEX}
// where HEX is the SHA-256 of BODY's exact bytes. BODY carries a "format"
// field naming kind and version. Readers verify the checksum, the format,
// every field and nothing extra, and refuse anything else as malformed.

// seal renders v (a struct with a Format field) as a record of kind.
func seal(kind string, v any) (data []byte, digest string, err error) {
	body, err := json.Marshal(v)
	if err != nil {
		return nil, "", err
	}
	sum := sha256.Sum256(body)
	h := hex.EncodeToString(sum[:])
	var b bytes.Buffer
	fmt.Fprintf(&b, "{%q:", kind)
	b.Write(body)
	fmt.Fprintf(&b, ",\"sha256\":%q}\n", h)
	return b.Bytes(), "sha256:" + h, nil
}

// unseal verifies and decodes a record of kind into v, whose format must
// be wantFormat. It returns the record's digest.
func unseal(data []byte, kind, wantFormat string, v any) (digest string, err error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return "", errors.New("empty file")
	}
	var env map[string]json.RawMessage
	if err := strictDecode(data, &env, false); err != nil {
		return "", fmt.Errorf("not a complete record (truncated or corrupt): %v", err)
	}
	body, ok := env[kind]
	if !ok || len(env) != 2 {
		return "", fmt.Errorf("not a %s record", kind)
	}
	var sum string
	if err := json.Unmarshal(env["sha256"], &sum); err != nil || !isHex64(sum) {
		return "", errors.New(`missing or invalid "sha256"`)
	}
	got := sha256.Sum256(body)
	if hex.EncodeToString(got[:]) != sum {
		return "", errors.New("checksum mismatch: the record was altered or partly written")
	}
	var head struct {
		Format *string `json:"format"`
	}
	if err := json.Unmarshal(body, &head); err != nil || head.Format == nil {
		return "", errors.New(`missing "format"`)
	}
	if *head.Format != wantFormat {
		return "", fmt.Errorf("unknown format %q (this majlis reads %q)", *head.Format, wantFormat)
	}
	if err := strictDecode(body, v, true); err != nil {
		return "", err
	}
	if c, ok := v.(interface{ check() error }); ok {
		if err := c.check(); err != nil {
			return "", err
		}
	}
	return "sha256:" + sum, nil
}

func strictDecode(data []byte, v any, strict bool) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	if strict {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("trailing data after the JSON object")
	}
	return nil
}

// readRecord reads and unseals the record at path. A missing file is
// reported as os.ErrNotExist (unwrapped by errors.Is); anything unreadable
// or invalid becomes an *Error wrapping ErrMalformed that names the file.
func readRecord(path, kind, format string, v any) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", err
		}
		return "", &Error{Op: "read", Path: path, Err: err}
	}
	digest, err := unseal(data, kind, format, v)
	if err != nil {
		return "", &Error{Op: "read", Path: path, Reason: err.Error(), Err: ErrMalformed}
	}
	return digest, nil
}

func isHex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
