package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/majlis-dev/majlis/admission"
	"github.com/majlis-dev/majlis/internal/durable"
	"github.com/spf13/pflag"
)

// A task's lease token: one secret for all of its commands (begin, lease
// acquire, renew, release, end), kept by the orchestrator. It is taken,
// in this order, from --token-file F, from $MAJLIS_LEASE_TOKEN, or from
// the task's file in $MAJLIS_TOKEN_DIR (DIR/<holder>.token). A command
// that grants leases (begin, lease acquire, allocate --ports) creates
// the file it names when it does not exist yet: a new token, mode 0600,
// in a folder only its owner can enter (a refused grant keeps it: a retry
// presents the same token). end removes the task's file in
// MAJLIS_TOKEN_DIR once the task's leases are released. With none of
// the three, a grant generates a token and prints it once.

// TokenDirEnv names the folder of per-task token files.
const TokenDirEnv = "MAJLIS_TOKEN_DIR"

// tokenFlag is --token-file, shared by the commands that take a lease
// token.
type tokenFlag struct{ file string }

func (t *tokenFlag) register(f *pflag.FlagSet) {
	f.StringVar(&t.file, "token-file", "", "file holding the task's lease token; a grant creates it (mode 0600) when missing "+
		"(default: $"+admission.TokenEnv+", else $"+TokenDirEnv+"/TASK.token)")
}

// A heldToken is the token a command presents, and the file it came from
// ("" for the environment, or none).
type heldToken struct {
	token   string
	file    string
	created bool // the command created the file: it holds a new token
	fromDir bool // the file is the task's in MAJLIS_TOKEN_DIR
}

// forHolder returns the lease token the caller supplied for holder;
// grant says the command grants leases, and so may create the file.
func (t *tokenFlag) forHolder(holder string, grant bool) (heldToken, error) {
	if t.file != "" {
		return tokenFile(t.file, "--token-file", grant, false)
	}
	if tok := os.Getenv(admission.TokenEnv); tok != "" {
		return heldToken{token: tok}, nil
	}
	dir := os.Getenv(TokenDirEnv)
	if dir == "" || holder == "" {
		return heldToken{}, nil
	}
	if !filepath.IsAbs(dir) {
		return heldToken{}, &usageError{fmt.Errorf("$%s must be an absolute path, not %q", TokenDirEnv, dir)}
	}
	path := filepath.Join(dir, tokenFileName(holder))
	if _, err := os.Lstat(path); !grant && errors.Is(err, fs.ErrNotExist) {
		return heldToken{}, nil // the holder has no token there
	}
	return tokenFile(path, "$"+TokenDirEnv, grant, true)
}

// token is forHolder for a command that names no holder: the file or the
// environment only.
func (t *tokenFlag) token() (string, error) {
	h, err := t.forHolder("", false)
	return h.token, err
}

// plainHolder is a holder name that can be a file name as it is.
var plainHolder = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$`)

// tokenFileName is the name of holder's file in MAJLIS_TOKEN_DIR: the
// name itself, or (for names a file cannot carry) a digest of it.
func tokenFileName(holder string) string {
	if plainHolder.MatchString(holder) && !strings.HasSuffix(holder, ".tmp") {
		return holder + ".token"
	}
	sum := sha256.Sum256([]byte(holder))
	return "holder-" + hex.EncodeToString(sum[:12]) + ".token"
}

// tokenFile reads the token in path; when it does not exist and grant is
// set, it creates it holding a new token (0600; its folder 0700 when
// made). what names the source in errors.
func tokenFile(path, what string, grant, fromDir bool) (heldToken, error) {
	b, err := os.ReadFile(path)
	if err == nil {
		tok := strings.TrimRight(string(b), "\r\n")
		if tok == "" {
			return heldToken{}, &usageError{fmt.Errorf("%s: %s is empty: remove it to have a new token made, or write the task's token into it", what, path)}
		}
		return heldToken{token: tok, file: path, fromDir: fromDir}, nil
	}
	if !errors.Is(err, fs.ErrNotExist) || !grant {
		return heldToken{}, &usageError{fmt.Errorf("%s: %w", what, err)}
	}
	dir, name := filepath.Split(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return heldToken{}, &usageError{fmt.Errorf("%s: %w", what, err)}
	}
	tok := admission.NewToken()
	// Published whole and never over another file: two commands racing
	// to make it keep the first one's token (durable.ErrExists).
	if err := durable.Publish(dir, name, []byte(tok+"\n"), durable.Perm(0o600)); err != nil {
		if errors.Is(err, durable.ErrExists) {
			return tokenFile(path, what, false, fromDir)
		}
		return heldToken{}, &usageError{fmt.Errorf("%s: %w", what, err)}
	}
	return heldToken{token: tok, file: path, created: true, fromDir: fromDir}, nil
}

// done removes the task's file in MAJLIS_TOKEN_DIR once its leases are
// released (end): nothing is left to present it for.
func (h heldToken) done() {
	if h.fromDir && h.file != "" {
		os.Remove(h.file)
	}
}

// holderToken is forHolder for a command that grants nothing: it
// creates no file (a holder with no file in MAJLIS_TOKEN_DIR presents no
// token).
func (t *tokenFlag) holderToken(holder string) (string, error) {
	h, err := t.forHolder(holder, false)
	return h.token, err
}
