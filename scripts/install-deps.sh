#!/usr/bin/env bash
# Installs what syscluster needs to build, test and benchmark on a fresh
# Debian 12 machine: Debian packages through apt (only those missing), and
# checks for a Rust toolchain (crates come through Cargo).  Idempotent and
# quick when everything is present.
#
#   scripts/install-deps.sh            build + test dependencies
#   scripts/install-deps.sh --bench    also the tools the benchmarks compare with
#   scripts/install-deps.sh --browser  also Chromium for the HTML report test
set -euo pipefail

# Build: clang compiles the BPF programs, libelf and zlib are needed by the
# vendored libbpf, liburing by libmulticall; LLVM 19 (headers, llvm-config-19)
# and clang-19 build and run the compiler plugin (llvm/, `syscluster cc`);
# musl-tools (musl-gcc) links the `syscluster` launcher (preload/launcher).
BUILD=(gcc make pkg-config clang libelf-dev zlib1g-dev liburing-dev llvm-19-dev clang-19 musl-tools)
# Tests: real programs to trace and compare with; libc's debug info (the
# symbolizer's separate-debug-file test); Go for the corpus's Go program
# (code locations past a language runtime).
# llvm-19-tools: FileCheck and lit (/usr/lib/llvm-19/build/utils/lit) for llvm/test.
# man-db and groff-base: the install test renders the installed manual pages.
# The real-program suite (tests/integration/real_programs.rs): memcached
# loaded by memcaslap (libmemcached-tools), git, and python3 and make above.
TEST=(strace coreutils python3 graphviz libc6-dbg llvm-19-tools man-db groff-base git memcached libmemcached-tools golang-go)
# The kernel module's guest test: QEMU (TCG), busybox-static for the
# initramfs, cpio and xz to pack and unpack it.  Debian's kernel packages
# are fetched into build/ by kmod/guest/kernel.sh, not installed.
KMOD=(qemu-system-x86 busybox-static cpio xz-utils)
# Benchmarks: the tools a user would pick instead; dpkg-dev unpacks the
# Debian source packages bench/plugin/debian.sh rebuilds with `syscluster cc`.
BENCH=(linux-perf bpftrace libbpf-tools bpfcc-tools hyperfine dpkg-dev)
BROWSER=(chromium)

want=("${BUILD[@]}" "${TEST[@]}" "${KMOD[@]}")
for arg in "$@"; do
  case "$arg" in
    --bench) want+=("${BENCH[@]}") ;;
    --browser) want+=("${BROWSER[@]}") ;;
    *) echo "install-deps: unknown option $arg" >&2; exit 2 ;;
  esac
done

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
# `apt-get source` (bench/plugin/debian.sh) needs a deb-src line: the same
# Debian archive as the binary packages.
deb_src=0
if [[ " $* " == *" --bench "* ]] && ! grep -rqs '^Types:.*deb-src\|^deb-src ' /etc/apt/sources.list /etc/apt/sources.list.d/; then
  printf 'Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: bookworm bookworm-updates\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' |
    $SUDO tee /etc/apt/sources.list.d/syscluster-deb-src.sources > /dev/null
  deb_src=1
fi

missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ $deb_src -eq 1 ] && [ ${#missing[@]} -eq 0 ]; then
  $SUDO apt-get update -qq || echo "install-deps: apt-get update failed after adding deb-src" >&2
fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq || echo "install-deps: apt-get update failed; trying the cached package lists" >&2
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if ! command -v cargo >/dev/null 2>&1; then
  if [ -x "$HOME/.cargo/bin/cargo" ]; then
    echo "install-deps: cargo is in ~/.cargo/bin but not on PATH; add it: export PATH=\$HOME/.cargo/bin:\$PATH" >&2
  else
    echo "install-deps: no Rust toolchain; install rustup (https://rustup.rs): it installs the pinned version" >&2
  fi
  exit 1
fi

# The pinned toolchain (rust-toolchain.toml: the version, clippy, rustfmt):
# rustup installs it once; cargo run in this tree then uses it.
TOOLCHAIN=$(sed -n 's/^channel *= *"\(.*\)"/\1/p' "$(dirname "$0")/../rust-toolchain.toml")
if command -v rustup >/dev/null 2>&1; then
  if ! rustup run "$TOOLCHAIN" cargo clippy --version >/dev/null 2>&1 ||
     ! rustup run "$TOOLCHAIN" rustfmt --version >/dev/null 2>&1; then
    echo "install-deps: installing Rust $TOOLCHAIN (rust-toolchain.toml) with clippy and rustfmt" >&2
    rustup toolchain install "$TOOLCHAIN" --profile minimal --component clippy,rustfmt
  fi
elif ! rustc --version | grep -q "^rustc $TOOLCHAIN "; then
  echo "install-deps: $(rustc --version) is not the pinned Rust $TOOLCHAIN (rust-toolchain.toml) and rustup is missing: install rustup (https://rustup.rs)" >&2
  exit 1
fi
