package githook

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/majlis-dev/majlis/admission"
	"github.com/majlis-dev/majlis/fixtures"
)

// hookRepo makes a repository with a fake majlis executable (outside it)
// that records its arguments and exits with the status in the file
// <dir>/status (0 when absent).
func hookRepo(t *testing.T) (repo *fixtures.Repo, majlis, calls string) {
	t.Helper()
	repo = fixtures.NewRepo(t)
	bin := t.TempDir()
	calls = filepath.Join(bin, "calls")
	majlis = filepath.Join(bin, "majlis it's")
	script := "#!/bin/sh\necho \"$*\" >> '" + calls + "'\n" +
		"[ -f '" + bin + "/status' ] && exit $(cat '" + bin + "/status')\nexit 0\n"
	if err := os.WriteFile(majlis, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return repo, majlis, calls
}

func readOr(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// commit commits a new file with the hooks enabled and reports git's error.
func commit(repo *fixtures.Repo, name string) error {
	repo.WriteFile(name, name+"\n")
	repo.Git("add", name)
	_, err := repo.TryGit("commit", "--quiet", "-m", name)
	return err
}

func TestInstall(t *testing.T) {
	repo, majlis, calls := hookRepo(t)
	hooks := filepath.Join(repo.CommonDir(), "hooks")
	hook := filepath.Join(hooks, HookName)
	os.RemoveAll(hooks) // installing creates the folder

	res, err := Install(t.Context(), Options{Dir: repo.Dir, Majlis: majlis})
	if err != nil {
		t.Fatal(err)
	}
	if res.Path != hook || res.HooksDir != hooks || res.Majlis != majlis || !res.Changed || res.Backup != "" {
		t.Errorf("first install: %+v", res)
	}
	if fi, err := os.Stat(hook); err != nil || fi.Mode().Perm() != 0o755 {
		t.Fatalf("hook: %v, %v; want mode 0755", fi, err)
	}

	// The hook runs majlis check --if-holder; its failure refuses the commit.
	if err := commit(repo, "a.txt"); err != nil {
		t.Fatalf("commit with the hook: %v", err)
	}
	if got := readOr(t, calls); got != "check --if-holder\n" {
		t.Errorf("majlis called with %q, want \"check --if-holder\"", got)
	}
	os.WriteFile(filepath.Join(filepath.Dir(majlis), "status"), []byte("3"), 0o644)
	if err := commit(repo, "b.txt"); err == nil {
		t.Errorf("a commit went through although majlis check exited 3")
	}
	os.Remove(filepath.Join(filepath.Dir(majlis), "status"))

	// Again: idempotent.
	before := readOr(t, hook)
	res, err = Install(t.Context(), Options{Dir: repo.Dir, Majlis: majlis})
	if err != nil || res.Changed {
		t.Fatalf("second install: %+v, %v; want unchanged", res, err)
	}
	if readOr(t, hook) != before {
		t.Errorf("an identical install rewrote the hook")
	}

	// Another executable: majlis's own hook is replaced.
	res, err = Install(t.Context(), Options{Dir: repo.Dir, Majlis: "/nonexistent/majlis"})
	if err != nil || !res.Changed {
		t.Fatalf("install with another executable: %+v, %v", res, err)
	}
	if !strings.Contains(readOr(t, hook), "majlis='/nonexistent/majlis'") {
		t.Errorf("the new executable is not recorded:\n%s", readOr(t, hook))
	}
	// That executable is gone: the hook falls back to majlis on PATH.
	t.Setenv("PATH", filepath.Dir(majlis)+string(os.PathListSeparator)+os.Getenv("PATH"))
	os.Rename(majlis, filepath.Join(filepath.Dir(majlis), "majlis"))
	os.Remove(calls)
	if err := commit(repo, "c.txt"); err != nil {
		t.Fatalf("commit with majlis on PATH: %v", err)
	}
	if got := readOr(t, calls); got != "check --if-holder\n" {
		t.Errorf("majlis on PATH called with %q", got)
	}
}

func TestInstallHookNeverOverwritesAnotherHook(t *testing.T) {
	for _, tc := range []struct {
		name   string
		setup  func(t *testing.T, hook, majlis string)
		checks int // how often majlis check runs per commit
	}{
		{"someone else's hook", func(t *testing.T, hook, _ string) {
			os.WriteFile(hook, []byte("#!/bin/sh\necho other >> \"$(dirname \"$0\")/other-ran\"\n"), 0o755)
		}, 1},
		{"majlis's hook, edited", func(t *testing.T, hook, majlis string) {
			// Edited before its exec line: as a backup, it must not run itself.
			b := strings.Replace(string(hookScript(majlis)), "exec ", "echo other >> \"$(dirname \"$0\")/other-ran\"\nexec ", 1)
			os.WriteFile(hook, []byte(b), 0o755)
		}, 2},
		{"a symbolic link", func(t *testing.T, hook, _ string) {
			target := filepath.Join(filepath.Dir(hook), "shared-hook")
			os.WriteFile(target, []byte("#!/bin/sh\necho other >> \"$(dirname \"$0\")/other-ran\"\n"), 0o755)
			if err := os.Symlink("shared-hook", hook); err != nil {
				t.Fatal(err)
			}
		}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo, majlis, calls := hookRepo(t)
			hooks := filepath.Join(repo.CommonDir(), "hooks")
			hook := filepath.Join(hooks, HookName)
			backup := filepath.Join(hooks, HookBackupName)
			os.MkdirAll(hooks, 0o755)
			tc.setup(t, hook, majlis)
			fi0, _ := os.Lstat(hook)
			content := readOr(t, hook)

			_, err := Install(t.Context(), Options{Dir: repo.Dir, Majlis: majlis})
			if !errors.Is(err, admission.ErrHookExists) {
				t.Fatalf("install over another hook: %v, want admission.ErrHookExists", err)
			}
			if fi, _ := os.Lstat(hook); !os.SameFile(fi0, fi) || readOr(t, hook) != content {
				t.Fatalf("the refusal changed the hook")
			}

			// --force keeps it as the backup, which runs first.
			res, err := Install(t.Context(), Options{Dir: repo.Dir, Majlis: majlis, Force: true})
			if err != nil || res.Backup != backup || !res.Changed {
				t.Fatalf("forced install: %+v, %v", res, err)
			}
			if fi, _ := os.Lstat(backup); !os.SameFile(fi0, fi) || readOr(t, backup) != content {
				t.Errorf("the backup is not the hook that was there")
			}
			if err := commit(repo, "a.txt"); err != nil {
				t.Fatalf("commit: %v", err)
			}
			if readOr(t, filepath.Join(hooks, "other-ran")) != "other\n" || readOr(t, calls) != strings.Repeat("check --if-holder\n", tc.checks) {
				t.Errorf("both hooks should have run once (majlis check %d times): other %q, majlis %q", tc.checks,
					readOr(t, filepath.Join(hooks, "other-ran")), readOr(t, calls))
			}

			// A backup is never overwritten.
			os.Remove(hook)
			os.WriteFile(hook, []byte("#!/bin/sh\nexit 0\n"), 0o755)
			_, err = Install(t.Context(), Options{Dir: repo.Dir, Majlis: majlis, Force: true})
			if !errors.Is(err, admission.ErrHookExists) {
				t.Fatalf("forced install with a backup present: %v, want admission.ErrHookExists", err)
			}
			if readOr(t, hook) != "#!/bin/sh\nexit 0\n" || readOr(t, backup) != content {
				t.Errorf("the refusal changed the hook or its backup")
			}
		})
	}
}

func TestInstallHookFollowsHooksPath(t *testing.T) {
	repo, majlis, _ := hookRepo(t)
	linked := repo.NewWorktree("linked")
	repo.Config("core.hooksPath", ".githooks")
	res, err := Install(t.Context(), Options{Dir: linked.Dir, Majlis: majlis})
	if err != nil {
		t.Fatal(err)
	}
	if want := linked.Path(".githooks/pre-commit"); res.Path != want {
		t.Errorf("hook at %s, want %s", res.Path, want)
	}
	if _, err := Install(t.Context(), Options{Dir: repo.Dir, Majlis: "relative/majlis"}); !errors.Is(err, admission.ErrInvalid) {
		t.Errorf("a relative executable: %v, want admission.ErrInvalid", err)
	}
	if _, err := Install(t.Context(), Options{Dir: t.TempDir(), Majlis: majlis}); !errors.Is(err, admission.ErrInvalid) {
		t.Errorf("outside a repository: %v, want admission.ErrInvalid", err)
	}
}
