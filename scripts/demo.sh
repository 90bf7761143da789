#!/usr/bin/env bash
# make demo: runs majlis on a scratch repository it creates, isolated from
# your git configuration, and removes it afterwards.
set -euo pipefail
majlis=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
scratch=$(mktemp -d "${TMPDIR:-/tmp}/majlis-demo.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
export HOME="$scratch/home" GIT_CONFIG_NOSYSTEM=1 XDG_STATE_HOME="$scratch/home/.local/state"
mkdir -p "$HOME"
git config --global user.name "majlis demo"
git config --global user.email "demo@majlis.invalid"
git config --global init.defaultBranch main

say() { printf '\n\033[1m$ %s\033[0m\n' "$*"; }
run() { say "$*"; "$@"; }

repo="$scratch/app"
git init -q "$repo" && cd "$repo"
printf 'package app\n' > app.go && git add . && git commit -qm "initial commit"
echo "scratch repository: $repo"

run "$majlis" version
run "$majlis" init
run "$majlis" workspace allocate T-1 --intent 'src/auth/**'
run "$majlis" workspace allocate T-2
say "# an agent works in T-1: edits a tracked file, adds a new one"
ws=$(dirname "$repo")/app.workspaces/T-1
echo "// work in progress" >> "$ws/app.go"
echo "notes" > "$ws/NOTES.md"
run "$majlis" workspace show T-1
run "$majlis" workspace salvage T-1
say "git -C $ws status --short   # salvage touched nothing"
git -C "$ws" status --short
run git log --oneline -1 refs/majlis/salvage/T-1/1
run "$majlis" workspace release T-2
run "$majlis" workspace list
say "$majlis workspace allocate T-1 --json   # T-1 is live: refused, exit 4"
set +e; "$majlis" workspace allocate T-1 --json; echo "exit status: $?"; set -e

say "# reclaim T-1: preview first (nothing changes), then confirm that exact preview"
run "$majlis" workspace reclaim T-1 --preview
digest=$("$majlis" workspace reclaim T-1 --preview --json | sed -n 's/.*"digest": "\(sha256:[0-9a-f]*\)".*/\1/p' | head -1)
run "$majlis" workspace reclaim T-1 --confirm "$digest"
run git show --stat --oneline refs/majlis/salvage/T-1/2
run "$majlis" workspace list --all

say "# an agent cloned a repository inside T-2: reclaim refuses, nothing is touched"
git init -q "$(dirname "$repo")/app.workspaces/T-2/vendor/lib"
say "$majlis workspace reclaim T-2 --yes"
set +e; "$majlis" workspace reclaim T-2 --yes; echo "exit status: $?"; set -e
run ls "$(dirname "$repo")/app.workspaces/T-2/vendor/lib/.git/HEAD"

say "# leases: two agents declare what they will touch before they start"
mkdir -p src/auth/session && printf 'package auth\n' > src/auth/session/session.go && git add . && git commit -qm "add auth"
say "# each agent keeps a secret lease token: renewing and releasing its leases needs it"
head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$scratch/T-14.token"
head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$scratch/T-15.token"
run "$majlis" begin T-14 --paths 'src/auth/**' --token-file "$scratch/T-14.token"
say "$majlis begin T-15 --paths 'src/auth/session/**' --token-file T-15.token   # overlaps T-14 in another worktree: a warning"
"$majlis" begin T-15 --paths 'src/auth/session/**' --token-file "$scratch/T-15.token"
run "$majlis" lease acquire --holder T-14 --token-file "$scratch/T-14.token" host:port:3000
say "$majlis lease acquire --holder T-15 --token-file T-15.token host:port:3000   # the port is T-14's: refused, exit 4"
set +e; "$majlis" lease acquire --holder T-15 --token-file "$scratch/T-15.token" host:port:3000; echo "exit status: $?"; set -e
say "$majlis lease acquire --holder T-15 --token-file T-15.token host:port:auto   # a free port, allocated"
"$majlis" lease acquire --holder T-15 --token-file "$scratch/T-15.token" host:port:auto
run "$majlis" lease list
say "$majlis workspace reclaim T-15 --yes   # T-15 still holds its intent: its workspace is live, exit 4"
set +e; "$majlis" workspace reclaim T-15 --yes; echo "exit status: $?"; set -e
say "# T-14 is done: its leases go, then its workspace can be reclaimed"
say "$majlis lease release --holder T-14   # without its token: refused, exit 3"
set +e; "$majlis" lease release --holder T-14; echo "exit status: $?"; set -e
run "$majlis" lease release --holder T-14 --token-file "$scratch/T-14.token"
run "$majlis" workspace reclaim T-14 --yes
