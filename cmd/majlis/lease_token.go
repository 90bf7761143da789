package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/majlis-dev/majlis/admission"
	"github.com/spf13/pflag"
)

// tokenFlag is --token-file, shared by the commands that take a lease
// token; without it, MAJLIS_LEASE_TOKEN is read.
type tokenFlag struct{ file string }

func (t *tokenFlag) register(f *pflag.FlagSet) {
	f.StringVar(&t.file, "token-file", "", "file holding the lease token (default: $"+admission.TokenEnv+")")
}

// token returns the lease token the caller supplied, or "".
func (t *tokenFlag) token() (string, error) {
	if t.file == "" {
		return os.Getenv(admission.TokenEnv), nil
	}
	b, err := os.ReadFile(t.file)
	if err != nil {
		return "", &usageError{fmt.Errorf("--token-file: %w", err)}
	}
	return strings.TrimRight(string(b), "\r\n"), nil
}
