package durable

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Sealed records are the on-disk layout of lease files and of every other
// majlis record (docs/leases.md); see the package documentation.

// Seal renders v (a struct with a Format field) as a sealed record of
// kind, and returns its digest ("sha256:" + HEX).
func Seal(kind string, v any) (data []byte, digest string, err error) {
	body, err := json.Marshal(v)
	if err != nil {
		return nil, "", err
	}
	sum := sha256.Sum256(body)
	h := hex.EncodeToString(sum[:])
	var b bytes.Buffer
	b.Grow(len(body) + len(kind) + 84)
	fmt.Fprintf(&b, "{%q:", kind)
	b.Write(body)
	b.WriteString(`,"sha256":"`)
	b.WriteString(h)
	b.WriteString("\"}\n")
	return b.Bytes(), "sha256:" + h, nil
}

// Unseal verifies a sealed record of kind — complete, checksum matching,
// format equal to wantFormat, no unknown fields, nothing trailing — and
// decodes its body into v; validating the values is the caller's. It
// returns the record's digest and the body's exact bytes. The error
// describes the first problem; callers wrap it with the file's name.
func Unseal(data []byte, kind, wantFormat string, v any) (digest string, body []byte, err error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return "", nil, errors.New("empty file")
	}
	if digest, body, ok := unsealFast(data, kind, wantFormat, v); ok {
		return digest, body, nil
	}
	var env map[string]json.RawMessage
	if err := strictUnmarshal(data, &env, false); err != nil {
		return "", nil, fmt.Errorf("not a complete record (truncated or corrupt): %v", err)
	}
	body, ok := env[kind]
	if !ok || len(body) == 0 || body[0] != '{' {
		return "", nil, fmt.Errorf("missing %q object", kind)
	}
	if len(env) != 2 {
		return "", nil, fmt.Errorf("unknown field in the envelope (want only %q and \"sha256\")", kind)
	}
	var sum string
	if err := json.Unmarshal(env["sha256"], &sum); err != nil || !isLowerHex(sum, 64) {
		return "", nil, errors.New(`missing or invalid "sha256"`)
	}
	got := sha256.Sum256(body)
	if hex.EncodeToString(got[:]) != sum {
		return "", nil, errors.New("checksum mismatch: the record was altered or partly written")
	}
	var head struct {
		Format *string `json:"format"`
	}
	if err := json.Unmarshal(body, &head); err != nil || head.Format == nil {
		return "", nil, errors.New(`missing "format"`)
	}
	if *head.Format != wantFormat {
		return "", nil, fmt.Errorf("unknown format %q (this majlis reads %q)", *head.Format, wantFormat)
	}
	if err := strictUnmarshal(body, v, true); err != nil {
		return "", nil, fmt.Errorf("%s object: %v", kind, err)
	}
	return "sha256:" + sum, body, nil
}

// strictUnmarshal decodes exactly one JSON value with nothing after it,
// and with strict, no unknown fields.
func strictUnmarshal(data []byte, v any, strict bool) error {
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

// unsealFast reads the exact layout Seal writes, with one JSON decoding
// pass instead of three: {"<kind>":BODY,"sha256":"<hex>"}\n with BODY
// starting {"format":"<wantFormat>". Anything else (or any doubt) reports
// !ok, and the general path decides, with its precise error messages.
func unsealFast(data []byte, kind, wantFormat string, v any) (string, []byte, bool) {
	prefix := `{"` + kind + `":`
	const suffixLen = len(`,"sha256":"`) + 64 + len("\"}\n")
	if len(data) < len(prefix)+suffixLen || !bytes.HasPrefix(data, []byte(prefix)) {
		return "", nil, false
	}
	tail := data[len(data)-suffixLen:]
	sum := string(tail[len(`,"sha256":"`) : len(`,"sha256":"`)+64])
	if !bytes.HasPrefix(tail, []byte(`,"sha256":"`)) || !bytes.HasSuffix(tail, []byte("\"}\n")) || !isLowerHex(sum, 64) {
		return "", nil, false
	}
	body := data[len(prefix) : len(data)-suffixLen]
	if !bytes.HasPrefix(body, []byte(`{"format":"`+wantFormat+`"`)) {
		return "", nil, false
	}
	got := sha256.Sum256(body)
	if hex.EncodeToString(got[:]) != sum {
		return "", nil, false
	}
	if strictUnmarshal(body, v, true) != nil {
		return "", nil, false
	}
	return "sha256:" + sum, body, true
}

// isLowerHex reports whether s is exactly n lower-case hex digits.
func isLowerHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
