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

.PHONY: all deps build corpus demo test browser test-rust test-c test-llvm test-kmod check-generated bench clean

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

test: build check-generated browser test-rust test-c test-llvm test-kmod

# Chromium for the HTML page test (which skips, saying so, only without it).
# Under CI (CI=true) a failed install fails: the page test must run there.
browser:
	@scripts/install-deps.sh --browser || { echo "make: Chromium could not be installed: the HTML page test will skip" >&2; [ "$$CI" != true ]; }

# Every file generated from data/ is what its script writes today (the
# arguments of the syscall table and vmlinux.h come from the running kernel:
# only the table's numbers and names are checked).
check-generated:
	@python3 scripts/gen-syscall-lists.py --check
	@python3 scripts/gen-syscall-table.py --check-numbers data/syscalls_x86_64.tsv
	@python3 scripts/gen-errno-table.py | cmp -s - data/errno_linux.tsv || \
		{ echo "make: data/errno_linux.tsv is stale: run python3 scripts/gen-errno-table.py > data/errno_linux.tsv" >&2; exit 1; }

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

# multicall.ko in a QEMU guest running Debian's stock kernel (docs/KMOD.md).
test-kmod:
	$(MAKE) -C kmod test

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
	$(MAKE) -C kmod clean
	rm -rf build
