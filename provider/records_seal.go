package provider

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/majlis-dev/majlis/internal/durable"
)

// Provider records are sealed records (durable.Seal, docs/leases.md):
// {"<kind>": BODY, "sha256": HEX}, HEX the SHA-256 of BODY's exact bytes,
// BODY carrying a "format" field. Readers verify the checksum, the format,
// every field and nothing extra, and refuse anything else as malformed.

func seal(kind string, v any) ([]byte, string, error) { return durable.Seal(kind, v) }

// unseal verifies and decodes a record of kind, then checks its values.
func unseal(data []byte, kind, wantFormat string, v interface{ check() error }) (string, error) {
	wantFormat = sealedClaimFormat(data, kind, wantFormat)
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
	data, err := readRegularFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", err
		}
		if errors.Is(err, errNotRegular) {
			return "", &Error{Op: "read", Path: path, Reason: err.Error(), Err: ErrMalformed}
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
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", statKey{}, err
		}
		return "", statKey{}, &Error{Op: "read", Path: path, Err: err}
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", statKey{}, &Error{Op: "read", Path: path, Err: err}
	}
	if !fi.Mode().IsRegular() {
		return "", statKey{}, &Error{Op: "read", Path: path, Reason: fmt.Errorf("%w (%s)", errNotRegular, fi.Mode().Type()).Error(), Err: ErrMalformed}
	}
	key, _ := keyOf(fi)
	size := int(fi.Size()) + 1
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

// errNotRegular is returned by readRegularFile for anything but a regular
// file at the path: majlis writes only regular files into its state folder.
var errNotRegular = errors.New("not a regular file")

// readRegularFile reads the state file path like os.ReadFile, but opens it
// without waiting (a FIFO put in a record's place would make a plain open
// block until someone writes to it) and refuses whatever is not a regular
// file with errNotRegular.
func readRegularFile(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%w (%s)", errNotRegular, fi.Mode().Type())
	}
	return io.ReadAll(f)
}
