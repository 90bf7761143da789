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
run "$majlis" help exit-codes
say "$majlis --json no-such-command   # a usage error, as a script sees it"
set +e; "$majlis" --json no-such-command; echo "exit status: $?"; set -e
run "$majlis" debug failpoints --json
