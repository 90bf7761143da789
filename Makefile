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

.PHONY: all build build-failpoints test test-short lint bench demo install clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/majlis

# A binary whose failpoints fire (MAJLIS_FAILPOINTS); used by crash tests.
build-failpoints:
	$(GO) build -tags failpoints -o bin/majlis-failpoints ./cmd/majlis

# The README's test command: everything, with the race detector, isolated
# from the user's git config.
test:
	@home=$$(mktemp -d) && trap 'rm -rf "$$home"' EXIT && \
	HOME=$$home XDG_CONFIG_HOME=$$home/.config XDG_STATE_HOME=$$home/.local/state \
	GIT_CONFIG_NOSYSTEM=1 $(GO) test -race -count=1 ./...

test-short:
	@home=$$(mktemp -d) && trap 'rm -rf "$$home"' EXIT && \
	HOME=$$home GIT_CONFIG_NOSYSTEM=1 $(GO) test -short -count=1 ./...

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags failpoints ./...
	@if $(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) -version >/dev/null 2>&1; then \
		$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./... ; \
	else echo "staticcheck not installable from the module proxy; skipped"; fi

# Benchmarks beside their floors (bare syscalls, plain git), with ratios.
bench:
	@home=$$(mktemp -d) && trap 'rm -rf "$$home"' EXIT && \
	HOME=$$home GIT_CONFIG_NOSYSTEM=1 $(GO) test -run '^$$' -bench . -benchtime $(BENCHTIME) -count 1 ./... | tee bench.txt
	@scripts/benchratio.sh bench.txt

demo: build
	@scripts/demo.sh $(BIN)

install:
	$(GO) build -o $(PREFIX)/bin/majlis ./cmd/majlis
	@echo "installed $(PREFIX)/bin/majlis"

clean:
	rm -rf bin bench.txt
