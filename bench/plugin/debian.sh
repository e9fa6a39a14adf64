#!/usr/bin/env bash
# A real program nobody here wrote, rebuilt by `syscluster cc` (issue 12):
# a Debian source package (default gzip; `apt-get source`, needs the
# deb-src line scripts/install-deps.sh --bench adds), built by clang-19
# -O2 -g (plain), recorded compressing a file, advised, rebuilt with
# `syscluster cc --plan` (CC=, its build system unchanged); then its own
# test suite (make check) on the rebuilt program, compress/decompress
# compared byte for byte with the plain build, crossings counted by
# `syscluster stat`, and what the plugin did (its remarks, summed up).
# The source is cached in build/debian-src/; each run builds afresh.
# Packages known here: gzip (autotools: ./configure && make), ncompress
# (its GNUmakefile: make compress; the program is `compress`), both
# compressing 8.1 MB; dosfstools (autotools), whose fsck.fat checks a
# 32 MiB FAT image made by its mkfs.fat: its lseek + read is replaced by
# the pread runtime (the descriptor is io.c's own global:
# llvm/lib/SeekRead.cpp), which runs it as written there (io.c's descriptor
# is not close-on-exec: docs/COMPILER.md), compared under injected faults,
# on a truncated image and in a repair; mkfs.fat (the same package: its
# source cache), recorded making a 1 GiB FAT32 image (a fixed volume id,
# --invariant), whose loop of checked 512-byte writes the plugin writes in
# writev batches (advise's batch-writes: llvm/lib/BatchWrite.cpp): the
# images of both builds compared byte for byte, fresh (-C) and under
# faults (injected by verify, and a full tmpfs); pax (its own Build.sh; no test
# suite), recorded copying a tree (`pax -rw`, 5.6 MB in 16 files), compared
# by `syscluster verify` (the copied tree, also under injected faults) and
# timed side by side with the plain build.
#   bench/plugin/debian.sh [PACKAGE]     (after make build)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BIN=${BIN:-$ROOT/target/release/syscluster}
CLANG=${SYSCLUSTER_CLANG:-clang-19}
PKG=${1:-gzip}
SRCPKG=$PKG
[ "$PKG" != mkfs.fat ] || SRCPKG=dosfstools
CACHE=$ROOT/build/debian-src/$SRCPKG
W=$(mktemp -d "${TMPDIR:-/tmp}/sc-debian.XXXXXX")
trap '[ -n "${KEEP:-}" ] || rm -rf "$W"' EXIT
say() { echo "debian $PKG: $*" >&2; }
fail() { say "FAIL: $*"; exit 1; }
# How each package builds and what its program is called.
# PROG is the program recorded, RUN its arguments, SC_FLAGS syscluster cc's.
SC_FLAGS=()
case $PKG in
  gzip) PROG=gzip; RUN=(-c -n input); CONFIGURE=1 ;;
  ncompress) PROG=compress; RUN=(-c input); CONFIGURE=0 ;;
  dosfstools) PROG=src/fsck.fat; RUN=(-n -v img); CONFIGURE=1 ;;
  pax) PROG=pax; RUN=(-rw tree dst); CONFIGURE=buildsh ;;
  mkfs.fat) PROG=src/mkfs.fat; RUN=(-i 12345678 --invariant -F 32 img); CONFIGURE=1 ;;
  *) fail "unknown package (gzip, ncompress, dosfstools, mkfs.fat, pax): how it builds is not known here" ;;
esac

# The source, once.
if [ ! -f "$CACHE/.complete" ]; then
  command -v dpkg-source > /dev/null || fail "dpkg-source is missing: scripts/install-deps.sh --bench"
  rm -rf "$CACHE" && mkdir -p "$CACHE"
  (cd "$CACHE" && apt-get source -qq "$SRCPKG" > apt.log 2>&1) ||
    fail "apt-get source $SRCPKG failed (no deb-src line? scripts/install-deps.sh --bench adds it): $(tail -3 "$CACHE/apt.log")"
  touch "$CACHE/.complete"
fi
SRC=$(find "$CACHE" -mindepth 1 -maxdepth 1 -type d | head -1)
[ -n "$SRC" ] || fail "no source tree in $CACHE"
say "source $(basename "$SRC")"

# Debian's patches leave configure.ac newer than what autotools made from
# it: the generated files are used as shipped, not regenerated.
NOREGEN=(ACLOCAL=true AUTOCONF=true AUTOMAKE=true AUTOHEADER=true MAKEINFO=true)
# build DIR CC: the package's own build, with CC as given; the CPU time
# (user + system, of make and every compiler it ran) of the make step is
# left in DIR/make.cpu: what the compile-time overhead is measured on, as
# the machine's other load moves wall times more than CPU times.
build() {
  local dir=$1 cc=$2 args=() cmd=(make -s -j2 "${NOREGEN[@]}")
  [ $CONFIGURE = 1 ] || args=(CC="$cc" CFLAGS="-O2 -g" "$PROG")
  # pax: mirabilos' Build.sh (as debian/rules runs it), CC and flags from
  # the environment; it builds in the directory it runs in.
  [ $CONFIGURE != buildsh ] || { cmd=(env CC="$cc" CFLAGS="-O2 -g" CPPFLAGS='-DPAX_SAFE_PATH=\"/usr/bin:/bin\"'
    sh ./Build.sh -r -tpax); args=(); }
  cp -a "$SRC" "$dir"
  (cd "$dir" && { [ $CONFIGURE != 1 ] || ./configure -q CC="$cc" CFLAGS="-O2 -g"; } > configure.log 2>&1 &&
    python3 -c '
import resource, subprocess, sys
rc = subprocess.run(sys.argv[2:]).returncode
r = resource.getrusage(resource.RUSAGE_CHILDREN)
open(sys.argv[1], "w").write(f"{r.ru_utime + r.ru_stime:.2f}\n")
sys.exit(rc)' make.cpu "${cmd[@]}" "${args[@]}" > make.log 2>&1) ||
    fail "$dir: the build failed: $(tail -5 "$dir"/configure.log "$dir"/make.log 2>/dev/null)"
}

# The input: 8.1 MB of text (compressible), the same every run; for
# fsck.fat a FAT image made by the plain build's mkfs.fat.
seq 1 1150000 > "$W/input"  # 8.1 MB
cd "$W"
start=$(date +%s.%N)
build plain "$CLANG"
plain_s=$(python3 -c "import time,sys; print(f'{time.time()-float(sys.argv[1]):.1f}')" "$start")
[ "$PKG" != dosfstools ] || plain/src/mkfs.fat -C img 65536 > /dev/null || fail "mkfs.fat -C img failed"
if [ "$PKG" = pax ]; then
  # A tree to copy: 16 files from 50 KB to 2.4 MB (5.6 MB), random bytes
  # from a fixed seed; pax -rw copies it into dst (each run overwrites).
  mkdir -p tree/sub dst
  python3 -c '
import random, sys
r = random.Random(12)
for i in range(1, 9):
    open(f"tree/f{i}", "wb").write(r.randbytes(i * 300000))
    open(f"tree/sub/g{i}", "wb").write(r.randbytes(i * 50000))'
fi
# mkfs.fat: a 1 GiB image file (sparse), made again by every run.
[ "$PKG" != mkfs.fat ] || truncate -s 1G img
"$BIN" record -q -o prof.json -- plain/$PROG "${RUN[@]}" > /dev/null
"$BIN" advise -q prof.json --plan-out plan.json > advice.txt
say "plan: $(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["clusters"]))' plan.json) clusters from the recorded run (advise: $(grep -m1 '^#1 ' advice.txt || echo 'no recommendation'))"
start=$(date +%s.%N)
build sc "$BIN cc --plan $W/plan.json --remarks $W/remarks ${SC_FLAGS[*]}"
sc_s=$(python3 -c "import time,sys; print(f'{time.time()-float(sys.argv[1]):.1f}')" "$start")
say "build: ${plain_s} s with clang-19, ${sc_s} s with syscluster cc (configure included, one run each)"
say "make's CPU time (user + system): $(cat plain/make.cpu) s with clang-19, $(cat sc/make.cpu) s with syscluster cc ($(python3 -c 'import sys; a, b = (float(open(f).read()) for f in sys.argv[1:]); print(f"{(b - a) / a * 100:+.1f} %")' plain/make.cpu sc/make.cpu))"

# Its own tests, on the rebuilt program.
if [ "$PKG" = pax ]; then
  say "make check: pax ships no test suite (Build.sh -r builds it; debian/rules runs none)"
else
  (cd sc && make -s check "${NOREGEN[@]}" > check.log 2>&1) || fail "make check of the rebuilt $PKG failed: $(tail -20 sc/check.log)"
  say "make check of the rebuilt program: passed (exit 0; $(grep -cE '^PASS' sc/check.log || true) PASS lines)"
fi

if [ "$PKG" = pax ]; then
  # Behaviour: the copied tree (bytes, modes, times kept by -p), output and
  # status, with and without faults injected into the K-th read or write
  # as the source issues it (syscluster verify, docs/VERIFY.md).
  mkdir -p empty/dst
  for fault in none write:ENOSPC@5 write:short@3 write:EIO@40 read:EIO@4 read:short=100@10 write:EINTR@7; do
    inject=(); [ $fault = none ] || inject=(--inject "$fault")
    "$BIN" verify --dir empty "${inject[@]}" -- "$W/plain/$PROG" -rw "$W/tree" dst ::: \
      "$W/sc/$PROG" -rw "$W/tree" dst > "verify-$fault.txt" 2>&1 ||
      fail "pax -rw $fault: the two builds differ: $(cat "verify-$fault.txt")"
  done
  for v in plain sc; do rm -rf "copy-$v" && mkdir "copy-$v" && "$v/$PROG" -rw tree "copy-$v"; done
  diff -r tree copy-plain/tree > /dev/null && diff -r tree copy-sc/tree > /dev/null ||
    fail "pax -rw: a copy differs from the tree"
  say "pax -rw: the same tree, output and status under 7 runs (none, ENOSPC, short, EIO, EINTR injected); both copies equal the tree byte for byte"
  # Time, side by side: the two builds alternately, 30 runs each, wall and
  # CPU (user + system) per run, the median.
  python3 - "$W" <<'PY'
import os, resource, statistics, subprocess, sys, time
w = sys.argv[1]
res = {"plain": ([], []), "sc": ([], [])}
for i in range(30):
    for v in ("plain", "sc") if i % 2 == 0 else ("sc", "plain"):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        subprocess.run([f"{w}/{v}/pax", "-rw", "tree", "dst"], cwd=w, check=True)
        wall = time.perf_counter() - t
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        res[v][0].append(wall * 1e3)
        res[v][1].append((after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) * 1e3)
for v, (wall, cpu) in res.items():
    print(f"debian pax: time of pax -rw tree dst ({v}): median wall {statistics.median(wall):.2f} ms, "
          f"CPU {statistics.median(cpu):.2f} ms (30 runs, alternated)", file=sys.stderr)
PY
elif [ "$PKG" = dosfstools ]; then
  # Behaviour: the same report and image, also with faults injected into
  # the K-th lseek or read as the source issues them (syscluster verify,
  # docs/VERIFY.md), and a repair (-a) of a damaged copy.
  mkdir -p empty
  for fault in none lseek:EIO@3 read:EIO@5 read:short@7 lseek:EINVAL@40 read:EINTR@100; do
    inject=(); [ $fault = none ] || inject=(--inject "$fault")
    "$BIN" verify --dir empty "${inject[@]}" -- "$W/plain/$PROG" "${RUN[@]:0:2}" "$W/img" ::: \
      "$W/sc/$PROG" "${RUN[@]:0:2}" "$W/img" > "verify-$fault.txt" 2>&1 ||
      fail "fsck.fat $fault: the two builds differ: $(cat "verify-$fault.txt")"
  done
  for v in plain sc; do
    mkdir -p "repair-$v" && cp img "repair-$v/img"
    printf '\xff\xff\xff\xff' | dd of="repair-$v/img" bs=1 seek=$((512 * 40 + 8)) conv=notrunc status=none
    rc=0
    (cd "repair-$v" && "$W/$v/$PROG" -a img > report 2>&1) || rc=$?
    echo "status $rc" >> "repair-$v/report"
  done
  diff -r repair-plain repair-sc > /dev/null || fail "fsck.fat -a: the two builds repair differently: $(diff -r repair-plain repair-sc | head -5)"
  # An image cut short: reads past its end (a short pread: the calls as
  # written), without verify's MULTICALL_BACKEND=direct.
  head -c $((16 * 1024 * 1024)) img > cut.img
  for v in plain sc; do
    rc=0
    "$W/$v/$PROG" -n -v cut.img > "cut-$v" 2>&1 || rc=$?
    echo "status $rc" >> "cut-$v"
  done
  cmp -s cut-plain cut-sc || fail "fsck.fat -n -v of a truncated image: the two builds differ: $(diff cut-plain cut-sc | head -5)"
  say "fsck.fat -n -v: the same report, status and files under 6 runs (none, EIO, short, EINVAL, EINTR injected) and on a truncated image; fsck.fat -a of a damaged image: the same repair"
elif [ "$PKG" = mkfs.fat ]; then
  grep -q "is written in batches" remarks/*.opt.yaml || fail "the pass batched no loop of mkfs.fat"
  # The 1 GiB FAT32 image of the recorded command, and fresh files (-C)
  # of 1 GiB and 64 MiB (FAT16), byte for byte, with the same report.
  for v in plain sc; do
    truncate -s 0 img && truncate -s 1G img
    "$v/$PROG" "${RUN[@]}" > "$v.report" 2>&1 && cp --sparse=always img "$v.img"
    for c in "-F 32 new.img 1048576" "-F 16 new.img 65536"; do
      rm -f new.img
      # shellcheck disable=SC2086
      "$v/$PROG" -C -i 12345678 --invariant $c >> "$v.report" 2>&1 && cmp -s new.img "$v.img" && echo same >> "$v.report"
      sha256sum new.img >> "$v.report"
    done
  done
  cmp -s plain.img sc.img || fail "mkfs.fat: the two builds make different images"
  cmp -s plain.report sc.report || fail "mkfs.fat: the two builds differ: $(diff plain.report sc.report | head -5)"
  rm -f new.img plain.img sc.img
  # Faults in the K-th write as the source issues it (syscluster verify:
  # the batch runs write by write there), on a 64 MiB FAT16 image in
  # verify's scratch directory; and a tmpfs of 64 KiB, which fills in the
  # middle of the first FAT's batch (root).
  mkdir -p empty
  mk=(-C -i 12345678 --invariant -F 16 new.img 65536)
  for fault in none write:EIO@20 write:ENOSPC@150 write:short@100 write:EINTR@60; do
    inject=(); [ $fault = none ] || inject=(--inject "$fault")
    count=(--no-count); [ $fault = none ] || count=()
    "$BIN" verify "${count[@]}" --dir empty "${inject[@]}" -- "$W/plain/$PROG" "${mk[@]}" ::: "$W/sc/$PROG" "${mk[@]}" \
      > "verify-$fault.txt" 2>&1 || fail "mkfs.fat $fault: the two builds differ: $(cat "verify-$fault.txt")"
  done
  faults="none, EIO, ENOSPC, short, EINTR injected"
  if [ "$(id -u)" -eq 0 ]; then
    "$BIN" verify --no-count --dir empty --fs-limit 64K -- "$W/plain/$PROG" "${mk[@]}" ::: "$W/sc/$PROG" "${mk[@]}" \
      > verify-enospc.txt 2>&1 || fail "mkfs.fat on a full tmpfs: the two builds differ: $(cat verify-enospc.txt)"
    faults="$faults; a full 64 KiB tmpfs"
  fi
  say "mkfs.fat: the same 1 GiB FAT32 image, report and status; fresh images (-C, FAT32 and FAT16) the same; under faults ($faults) the same"
else
  # Behaviour: the same compressed bytes, the input back.
  for v in plain sc; do
    "$v/$PROG" "${RUN[@]}" > "$v.gz"
    "$v/$PROG" -d -c "$v.gz" > "$v.out"
    cmp -s input "$v.out" || fail "$v: decompressing gives other bytes"
  done
  cmp -s plain.gz sc.gz || fail "the two builds compress to different bytes"
  say "compress/decompress: the two builds give identical bytes, the input comes back"
fi

crossings() { "$BIN" stat --json -- "$@" 2>/dev/null | python3 -c '
import json, sys
out = sys.stdin.read()
print(json.loads(out[out.rindex("{\n  \"by_syscall\""):])["crossings"]["median"])'; }
say "crossings of $PROG ${RUN[*]}: $(crossings plain/$PROG "${RUN[@]}") (clang-19) -> $(crossings sc/$PROG "${RUN[@]}") (syscluster cc)"

# What the plugin did: every remark of the pass, by kind.
python3 - "$W/remarks" <<'PY'
import collections, glob, re, sys
kinds = collections.Counter()
examples = {}
for f in glob.glob(sys.argv[1] + "/*.opt.yaml"):
    for doc in open(f).read().split("\n--- ")[0:]:
        m = re.search(r"^!(\w+)", doc.lstrip("-\n "), re.M)
        name = re.search(r"^Name:\s+(\S+)", doc, re.M)
        if not m or not name:
            continue
        # Single-quoted strings ('' is a quote) or double-quoted ones (a
        # backslash at a line's end joins it to the next).
        parts = []
        for sm in re.finditer(r"- String:\s+(?:'((?:[^']|'')*)'|\"((?:[^\"\\]|\\.)*)\")", doc, re.S):
            if sm.group(1) is not None:
                parts.append(re.sub(r"\s*\n\s*", " ", sm.group(1).replace("''", "'")))
            else:
                t = re.sub(r"\\\n\s*", "", sm.group(2))
                parts.append(re.sub(r"\s*\n\s*", " ", t).replace('\\"', '"'))
        text = "".join(parts)
        key = f"{m.group(1)} {name.group(1)}"
        kinds[key] += 1
        examples.setdefault(key, text)
print(f"remarks in {len(glob.glob(sys.argv[1] + '/*.opt.yaml'))} files:")
for k, n in sorted(kinds.items()):
    print(f"  {n:4d} {k}: e.g. {examples[k][:400]}")
PY
