# syscluster — the two commands of the README:
#   make demo   installs what is missing, builds, records the bundled copy
#               program, advises, applies the top recommendation and
#               compares the two with syscluster stat
#   make test   runs every test
SHELL := /bin/bash
CARGO ?= cargo
export PATH := $(HOME)/.cargo/bin:$(PATH)

BIN := target/release/syscluster
DEMO := build/demo

.PHONY: all deps build corpus demo test browser test-rust test-c test-llvm bench clean

all: build

deps:
	@scripts/install-deps.sh

build: deps corpus
	$(MAKE) -s -C libmulticall
	$(MAKE) -s -C llvm
	$(CARGO) build --release --locked

corpus:
	@$(MAKE) -s -C tests/corpus

demo: build
	@BIN=$(BIN) DEMO=$(DEMO) scripts/demo.sh

test: build browser test-rust test-c test-llvm

# Chromium for the HTML page test (which skips, saying so, only without it).
browser:
	@scripts/install-deps.sh --browser || echo "make: Chromium could not be installed: the HTML page test will skip" >&2

test-rust:
	$(CARGO) test --release --locked --workspace --no-fail-fast

test-c:
	$(MAKE) -C libmulticall test
	$(MAKE) -C runtime test

# The compiler plugin: lit + FileCheck (llvm/test), then the copy programs
# built with `syscluster cc` against the plain build, under faults
# (tests/plugin/run.sh).
test-llvm:
	$(MAKE) -C llvm test
	BIN=$(CURDIR)/$(BIN) tests/plugin/run.sh

bench: build
	@scripts/install-deps.sh --bench
	$(MAKE) -C libmulticall bench
	bench/run.sh

clean:
	$(CARGO) clean
	$(MAKE) -C libmulticall clean
	$(MAKE) -C runtime clean
	$(MAKE) -C tests/corpus clean
	$(MAKE) -C llvm clean
	rm -rf build
