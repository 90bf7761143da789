//go:build !linux

package openers

func scanAll() ([]proc, error) { return nil, errUnsupported }

const supported = false
