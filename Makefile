# syscluster — the two commands of the README:
#   make demo   installs what is missing, builds, records the bundled copy
#               program and prints its report
#   make test   runs every test
SHELL := /bin/bash
CARGO ?= cargo
export PATH := $(HOME)/.cargo/bin:$(PATH)

BIN := target/release/syscluster
DEMO := build/demo

.PHONY: all deps build corpus demo test test-rust test-c bench clean

all: build

deps:
	@scripts/install-deps.sh

build: deps corpus
	$(CARGO) build --release --locked

corpus:
	@$(MAKE) -s -C tests/corpus

demo: build
	@mkdir -p $(DEMO)
	@head -c 2400000 /dev/urandom > $(DEMO)/input
	$(BIN) record -o $(DEMO)/copy.json -- tests/corpus/bin/copy $(DEMO)/input $(DEMO)/output
	@cmp $(DEMO)/input $(DEMO)/output
	$(BIN) report $(DEMO)/copy.json

test: build test-rust test-c

test-rust:
	$(CARGO) test --release --locked --workspace --no-fail-fast

test-c:
	$(MAKE) -C runtime test

bench: build
	@scripts/install-deps.sh --bench
	bench/run.sh

clean:
	$(CARGO) clean
	$(MAKE) -C tests/corpus clean
	rm -rf build
