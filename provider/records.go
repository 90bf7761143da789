package provider

import (
	"bytes"
	"errors"
	"os"

	"github.com/majlis-dev/majlis/internal/durable"
)

// Provider records are sealed records (durable.Seal, docs/leases.md):
// {"<kind>": BODY, "sha256": HEX}, HEX the SHA-256 of BODY's exact bytes,
// BODY carrying a "format" field. Readers verify the checksum, the format,
// every field and nothing extra, and refuse anything else as malformed.

func seal(kind string, v any) ([]byte, string, error) { return durable.Seal(kind, v) }

// unseal verifies and decodes a record of kind, then checks its values.
func unseal(data []byte, kind, wantFormat string, v interface{ check() error }) (string, error) {
	digest, _, err := durable.Unseal(data, kind, wantFormat, v)
	if err != nil {
		return "", err
	}
	if err := v.check(); err != nil {
		return "", err
	}
	return digest, nil
}

// readRecord reads and unseals the record at path. A missing file is
// reported as os.ErrNotExist (unwrapped by errors.Is); anything unreadable
// or invalid becomes an *Error wrapping ErrMalformed that names the file.
func readRecord(path, kind, format string, v interface{ check() error }) (string, error) {
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

// readRecordKeyed is readRecord, also returning the file's identity as
// the claims index records it, taken from the open file before it is read.
// A file whose identity cannot be taken gets a zero key, which no file
// ever matches.
func readRecordKeyed(path, kind, format string, v interface{ check() error }) (string, statKey, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", statKey{}, err
		}
		return "", statKey{}, &Error{Op: "read", Path: path, Err: err}
	}
	defer f.Close()
	var key statKey
	size := 512
	if fi, err := f.Stat(); err == nil {
		key, _ = keyOf(fi)
		size = int(fi.Size()) + 1
	}
	buf := bytes.NewBuffer(make([]byte, 0, size))
	if _, err := buf.ReadFrom(f); err != nil {
		return "", statKey{}, &Error{Op: "read", Path: path, Err: err}
	}
	digest, err := unseal(buf.Bytes(), kind, format, v)
	if err != nil {
		return "", statKey{}, &Error{Op: "read", Path: path, Reason: err.Error(), Err: ErrMalformed}
	}
	return digest, key, nil
}
