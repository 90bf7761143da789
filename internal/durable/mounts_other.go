//go:build !linux

package durable

import "errors"

// MountsUnder cannot tell here: callers that must know refuse.
func MountsUnder(dir string) ([]string, error) { return nil, errors.ErrUnsupported }
