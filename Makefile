# majlis — see README.md. Every target runs with git isolated from the
# user's configuration where tests are involved.
GO        ?= go
BIN       ?= bin/majlis
PREFIX    ?= $(HOME)/.local
BENCHTIME ?= 2s
STATICCHECK_VERSION ?= v0.8.2

# Tests run with a temporary HOME; keep Go's own caches where they were.
export GOMODCACHE := $(shell $(GO) env GOMODCACHE)
export GOCACHE    := $(shell $(GO) env GOCACHE)

SHELL := /bin/bash

.PHONY: all build build-failpoints test test-short soak lint bench bench-smoke demo install clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/majlis

# A binary whose failpoints fire (MAJLIS_FAILPOINTS); used by crash tests.
build-failpoints:
	$(GO) build -tags failpoints -o bin/majlis-failpoints ./cmd/majlis

# The README's test command: everything, with the race detector, isolated
# from the user's git config. The slowest packages start first, so that a
# long one does not begin last; the majlis binary the tests run (built with
# the failpoints tag) is built once here and shared by every package
# (MAJLIS_TEST_BIN). scripts/testfmt prints a line per package as it
# finishes and the slowest tests at the end; the whole JSON is kept in
# bin/test.json.
#
# -timeout is go test's limit for one package's run. No package takes more
# than about 3 minutes on a 2-core machine with two CPU-bound processes
# beside it; the limit is ten times that, so a slow machine gives a slow
# green run, not a red one, and a hung test still ends.
#
# -p 3 -parallel 4: most tests wait on git and majlis processes, not on
# the CPU. With go test's defaults (one package and one test per CPU) a
# 2-core machine ran the provider's 240 tests two at a time, and the other
# packages one after another beside it: 450 s beside two CPU-bound
# processes. Four tests at a time: 380 s; three packages at a time as
# well: 330 s, the provider's package the longest (325 s).
TEST_TIMEOUT  ?= 30m
TEST_PROCS    ?= 3
TEST_PARALLEL ?= 4
TEST_PKGS     ?= ./provider ./admission ./cmd/majlis ./gitops ./client ./server ./...
TEST_FLAGS    ?=

test: bin/majlis-test
	@home=$$(mktemp -d) && trap 'rm -rf "$$home"' EXIT && set -o pipefail && \
	HOME=$$home XDG_CONFIG_HOME=$$home/.config XDG_STATE_HOME=$$home/.local/state \
	GIT_CONFIG_NOSYSTEM=1 MAJLIS_TEST_BIN=$(CURDIR)/bin/majlis-test \
	$(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) -p $(TEST_PROCS) -parallel $(TEST_PARALLEL) $(TEST_FLAGS) -json $(TEST_PKGS) \
	| $(GO) run ./scripts/testfmt -save bin/test.json

# The race and crash tests with many more rounds (MAJLIS_TEST_SOAK=1,
# fixtures.Rounds: 8 to 20 times make test's rounds): run before a release.
# Those tests dominate it, so expect several times make test's time.
soak: bin/majlis-test
	@home=$$(mktemp -d) && trap 'rm -rf "$$home"' EXIT && set -o pipefail && \
	HOME=$$home XDG_CONFIG_HOME=$$home/.config XDG_STATE_HOME=$$home/.local/state \
	GIT_CONFIG_NOSYSTEM=1 MAJLIS_TEST_BIN=$(CURDIR)/bin/majlis-test MAJLIS_TEST_SOAK=1 \
	$(GO) test -race -count=1 -timeout 3h -p $(TEST_PROCS) -parallel $(TEST_PARALLEL) $(TEST_FLAGS) -json $(TEST_PKGS) \
	| $(GO) run ./scripts/testfmt -save bin/soak.json

# Always rebuilt (go build is quick when nothing changed): a stale binary
# would test old code.
.PHONY: bin/majlis-test
bin/majlis-test:
	@$(GO) build -tags failpoints -o $@ ./cmd/majlis

test-short: bin/majlis-test
	@home=$$(mktemp -d) && trap 'rm -rf "$$home"' EXIT && \
	HOME=$$home GIT_CONFIG_NOSYSTEM=1 MAJLIS_TEST_BIN=$(CURDIR)/bin/majlis-test $(GO) test -short -count=1 ./...

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags failpoints ./...
	@if $(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) -version >/dev/null 2>&1; then \
		$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./... ; \
	else echo "staticcheck not installable from the module proxy; skipped"; fi

# Benchmarks beside their floors (plain git, bare syscalls, bare SQLite),
# and the table of their ratios; scripts/benchratio.sh fails when the run
# failed or a benchmark that names a floor reports no ratio. It takes an
# hour or more and loads the machine.
bench: bin/majlis-test
	@home=$$(mktemp -d) && trap 'rm -rf "$$home"' EXIT && set -o pipefail && \
	HOME=$$home XDG_CONFIG_HOME=$$home/.config XDG_STATE_HOME=$$home/.local/state \
	GIT_CONFIG_NOSYSTEM=1 MAJLIS_TEST_BIN=$(CURDIR)/bin/majlis-test \
	$(GO) test -run '^$$' -bench . -benchtime $(BENCHTIME) -count 1 ./... 2>&1 | tee bench.txt; \
	status=$$?; scripts/benchratio.sh bench.txt && exit $$status

# What CI runs after the tests: every benchmark once (-benchtime 1x, the
# costly fixtures made smaller: fixtures.BenchSmoke), without the race
# detector, so that none can fail or lose its ratio unseen; no figure it
# prints is a measurement. About a minute on a 2-core machine.
# Only the packages with a benchmark are built.
BENCH_PKGS = $(sort $(patsubst %/,./%,$(dir $(shell git grep --untracked -l '^func Benchmark' -- '*_test.go'))))

bench-smoke: bin/majlis-test
	@home=$$(mktemp -d) && trap 'rm -rf "$$home"' EXIT && set -o pipefail && \
	HOME=$$home XDG_CONFIG_HOME=$$home/.config XDG_STATE_HOME=$$home/.local/state \
	GIT_CONFIG_NOSYSTEM=1 MAJLIS_TEST_BIN=$(CURDIR)/bin/majlis-test \
	$(GO) test -run '^$$' -bench . -benchtime 1x -count 1 $(BENCH_PKGS) 2>&1 | tee $$home/bench.txt; \
	status=$$?; scripts/benchratio.sh $$home/bench.txt && exit $$status

demo: build
	@scripts/demo.sh $(BIN)

install:
	$(GO) build -o $(PREFIX)/bin/majlis ./cmd/majlis
	@echo "installed $(PREFIX)/bin/majlis"

clean:
	rm -rf bin bench.txt
