# syscluster — the two commands of the README:
#   make demo   installs what is missing, builds, records the bundled copy
#               program, advises, applies the top recommendation and
#               compares the two with syscluster stat
#   make test   runs every test
#   make install PREFIX=… [DESTDIR=…], make uninstall (mk/install.mk)
SHELL := /bin/bash
CARGO ?= cargo
export PATH := $(HOME)/.cargo/bin:$(PATH)

# The cargo profile: release for what is shipped (build, demo, install);
# `make test` builds and tests everything once with `checked` (release with
# overflow checks, Cargo.toml), never the release build beside it.
PROFILE ?= release
BIN = target/$(PROFILE)/syscluster
DEMO := build/demo

.PHONY: all deps build corpus demo test browser lint test-rust test-c test-asan test-llvm test-install test-kmod check-generated bench clean

all: build

deps:
	@scripts/install-deps.sh

build: deps corpus
	$(MAKE) -s -C libmulticall
	$(MAKE) -s -C llvm
	$(CARGO) build --profile $(PROFILE) --locked

corpus:
	@$(MAKE) -s -C tests/corpus

demo: build
	@BIN=$(BIN) DEMO=$(DEMO) scripts/demo.sh

test: PROFILE = checked
test: build check-generated browser lint test-rust test-c test-asan test-llvm test-install test-kmod

# rustfmt and clippy with the pinned toolchain (rust-toolchain.toml): a
# file not formatted as rustfmt.toml says, or a warning, fails.
lint:
	$(CARGO) fmt --all --check
	$(CARGO) clippy --release --locked --workspace --all-targets -- -D warnings

# Chromium for the HTML page test (which skips, saying so, only without it).
# Where Chromium is required (CI=true, or chromium in SYSCLUSTER_REQUIRE:
# tests/lib/require.sh) a failed install fails: the page test must run there.
browser:
	@scripts/install-deps.sh --browser || { echo "make: Chromium could not be installed: the HTML page test will skip" >&2; . tests/lib/require.sh; ! t_required chromium && [ "$$CI" != true ]; }

# Every file generated from data/ is what its script writes today (the
# arguments of the syscall table and vmlinux.h come from the running kernel:
# only the table's numbers and names are checked).
check-generated:
	@python3 scripts/gen-syscall-lists.py --check
	@python3 scripts/gen-formats.py --check
	@python3 scripts/gen-syscall-table.py --check-numbers data/syscalls_x86_64.tsv
	@python3 scripts/gen-errno-table.py | cmp -s - data/errno_linux.tsv || \
		{ echo "make: data/errno_linux.tsv is stale: run python3 scripts/gen-errno-table.py > data/errno_linux.tsv" >&2; exit 1; }

test-rust:
	$(CARGO) test --profile $(PROFILE) --locked --workspace --no-fail-fast

# SC: the syscluster binary of this profile (the runtime's tests run
# `syscluster verify --run` with it).
test-c:
	$(MAKE) -C libmulticall test
	SC=$(CURDIR)/$(BIN) $(MAKE) -C preload test

# libmulticall and the preload library built with ASan and UBSan, their
# tests run (libmulticall/sanitize.mk, preload/sanitize.mk).
test-asan:
	$(MAKE) -s -C libmulticall test-asan
	$(MAKE) -s -C preload test-asan

# `make install` into a scratch prefix; the installed copy, away from the
# source tree, runs `syscluster run` and `syscluster cc`, renders its manual
# pages and builds a program against libmulticall through pkg-config.
test-install:
	PROFILE=$(PROFILE) tests/install/run.sh

# The compiler plugin: lit + FileCheck (llvm/test), then the copy programs
# built with `syscluster cc` against the plain build, under faults
# (tests/plugin/run.sh, seek_read.sh, batch_write.sh).
test-llvm:
	$(MAKE) -C llvm test
	BIN=$(CURDIR)/$(BIN) tests/plugin/run.sh
	BIN=$(CURDIR)/$(BIN) tests/plugin/seek_read.sh
	BIN=$(CURDIR)/$(BIN) tests/plugin/batch_write.sh

# multicall.ko in a QEMU guest running Debian's stock kernel (docs/KMOD.md).
test-kmod:
	PROFILE=$(PROFILE) $(MAKE) -C kmod test

bench: build
	@scripts/install-deps.sh --bench
	$(MAKE) -C libmulticall bench
	bench/run.sh

clean:
	$(CARGO) clean
	$(MAKE) -C libmulticall clean
	$(MAKE) -C preload clean
	$(MAKE) -C tests/corpus clean
	$(MAKE) -C llvm clean
	$(MAKE) -C kmod clean
	rm -rf build

include mk/install.mk
