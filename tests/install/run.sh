#!/usr/bin/env bash
# `make install` and `make uninstall` (mk/install.mk), tested from outside:
#  1. installs into a scratch PREFIX, and stages the same install with
#     DESTDIR (same files; the pkg-config file names the final PREFIX);
#  2. hides the source tree (a tmpfs mounted over it in a private mount
#     namespace: the binary's compiled-in source paths lead nowhere) and,
#     with the installed copy alone, runs `syscluster run` on a small program
#     (same bytes as plain, the runtime acted, the preload library mapped is
#     the installed one), records it, advises a plan and rebuilds the copy
#     program with `syscluster cc --plan` (it calls the looped multi-call and
#     copies the same bytes);
#  3. renders every installed manual page with `man -l` (no warning), loads
#     the completions in bash, zsh and fish when they are installed;
#  4. compiles and runs a program against libmulticall found through the
#     installed pkg-config file, shared (soname resolved) and static;
#  5. uninstalls both and checks nothing is left.
# Hiding the tree needs root (unshare, mount): where tmpfs is required
# (CI=true, or SYSCLUSTER_REQUIRE: tests/lib/require.sh) it must run;
# elsewhere, without root, step 2 runs with the tree visible and says so.
#   PROFILE=release tests/install/run.sh
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/lib/require.sh"
PROFILE=${PROFILE:-release}
MAKE=${MAKE:-make}
W=$(mktemp -d /tmp/sc-install.XXXXXX)
trap 'rm -rf "$W"' EXIT
fail() { echo "install test: FAIL: $*" >&2; exit 1; }
say() { echo "install test: $*"; }
P=$W/prefix
# A cache of its own: no test depends on the calibration ~/.cache holds.
export XDG_CACHE_HOME=$W/cache

# -- 1. install, and the same staged ------------------------------------------
"$MAKE" -s -C "$ROOT" install PREFIX="$P" PROFILE="$PROFILE" > "$W/make.log" 2>&1 || { cat "$W/make.log"; fail "make install"; }
"$MAKE" -s -C "$ROOT" install PREFIX=/usr DESTDIR="$W/stage" PROFILE="$PROFILE" > "$W/make.log" 2>&1 || { cat "$W/make.log"; fail "make install DESTDIR="; }
diff <(cd "$P" && find . | sort) <(cd "$W/stage/usr" && find . | sort) > "$W/d" || fail "DESTDIR installs other files: $(head -5 "$W/d")"
grep -qx 'prefix=/usr' "$W/stage/usr/lib/pkgconfig/libmulticall.pc" || fail "the staged pkg-config file does not name PREFIX=/usr"
for f in bin/syscluster bin/mc-calibrate lib/syscluster/libsyscluster-preload.so lib/syscluster/SysCluster.so \
  lib/syscluster/libsyscluster-rt.a lib/syscluster/libmulticall.a lib/libmulticall.so lib/libmulticall.so.1 \
  lib/libmulticall.a include/multicall.h lib/pkgconfig/libmulticall.pc share/man/man1/syscluster.1 \
  share/man/man1/mc-calibrate.1 share/man/man7/libmulticall.7 share/man/man3/mc_run.3 \
  share/bash-completion/completions/syscluster share/zsh/site-functions/_syscluster \
  share/fish/vendor_completions.d/syscluster.fish; do
  [ -e "$P/$f" ] || fail "not installed: $f"
done
# One manual page per subcommand, named as a packager expects.
subs=$("$P/bin/syscluster" --help | sed -n '/^Commands:/,/^$/p' | awk '/^  [a-z]/ && $1 != "help" {print $1}')
[ -n "$subs" ] || fail "no subcommands in syscluster --help"
for s in $subs; do [ -f "$P/share/man/man1/syscluster-$s.1" ] || fail "no manual page for syscluster $s"; done
say "installed $(cd "$P" && find . -type f -o -type l | wc -l) files into PREFIX and the same under DESTDIR; a page for each of: $(echo $subs)"

# The programs the installed copy works on, built while the tree is visible.
mkdir "$W/work"
cat > "$W/work/lines.c" <<'EOF'
/* Short writes, then the path of the preload library this process maps. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>
int main(void)
{
    char line[64];
    for (int i = 0; i < 2000; i++) {
        int n = snprintf(line, sizeof line, "line %d\n", i);
        if (write(1, line, n) != n)
            return 1;
    }
    FILE *maps = fopen("/proc/self/maps", "r");
    char m[512];
    while (maps && fgets(m, sizeof m, maps))
        if (strstr(m, "libsyscluster-preload.so")) {
            fprintf(stderr, "mapped %s", strchr(m, '/'));
            break;
        }
    return 0;
}
EOF
cc -O2 -o "$W/work/lines" "$W/work/lines.c"
cp "$ROOT/tests/corpus/copy.c" "$W/work/copy.c"

# -- 2. the installed copy, the source tree hidden ----------------------------
cat > "$W/installed.sh" <<'EOF'
set -eu
P=$1 W=$2 ROOT=$3
fail() { echo "install test: FAIL: $*" >&2; exit 1; }
if [ -n "$ROOT" ]; then
  [ ! -e "$ROOT/Makefile" ] || fail "the source tree is still visible"
fi
cd "$W/work"
# syscluster run: same bytes, the runtime deferred writes, the installed library.
./lines > plain.out 2>/dev/null
"$P/bin/syscluster" run -v -- ./lines > run.out 2> run.err || fail "syscluster run: $(cat run.err)"
cmp -s plain.out run.out || fail "syscluster run changed the output"
grep -q "mapped $P/lib/syscluster/libsyscluster-preload.so" run.err || fail "syscluster run did not preload the installed library: $(cat run.err)"
grep -q 'deferred=[1-9]' run.err || fail "syscluster run: the runtime did not defer a write: $(cat run.err)"
echo "install test: syscluster run: same 2000 lines, writes deferred, $(grep -o 'mapped [^ ]*' run.err)"
# syscluster cc with a plan advised from a recorded run of the copy program.
clang-19 -O2 -g copy.c -o copy_plain
head -c 300000 /dev/urandom > in
"$P/bin/syscluster" record -q -o copy.json -- ./copy_plain in out_plain > /dev/null
"$P/bin/syscluster" advise -q copy.json --plan-out plan.json > /dev/null
# --assume-gain: this checks the installed pieces, not the gain decision
# (which needs a calibration with first_context; tests/plugin covers it).
"$P/bin/syscluster" cc --plan plan.json --assume-gain -Rpass=syscluster -O2 -g copy.c -o copy_sc 2> cc.err || fail "syscluster cc: $(cat cc.err)"
nm copy_sc | grep -q __syscluster_write_read_loop ||
  fail "syscluster cc: copy_sc does not call the looped multi-call: $(grep remark cc.err)"
./copy_sc in out_sc || fail "copy_sc failed"
cmp -s in out_sc || fail "copy_sc copied other bytes"
echo "install test: syscluster cc --plan: the copy program calls the looped multi-call and copies the same bytes"
EOF
if [ "$(id -u)" = 0 ] && unshare -m true 2>/dev/null; then
  unshare -m bash -c 'mount --make-rprivate / && mount -t tmpfs -o size=1m hidden "$3" && exec bash "$4" "$1" "$2" "$3"' \
    _ "$P" "$W" "$ROOT" "$W/installed.sh" || fail "the installed copy, the source tree hidden"
elif [ "${CI:-}" = true ] || t_required tmpfs; then
  fail "hiding the source tree needs root and unshare (tmpfs is required here: SYSCLUSTER_REQUIRE or CI)"
else
  say "not root: the installed copy runs with the source tree visible"
  bash "$W/installed.sh" "$P" "$W" "" || fail "the installed copy"
fi

# -- 3. manual pages, completions ----------------------------------------------
# From the top of the manual tree, as man runs groff: a page's ".so" link
# names another page there.
n=0
cd "$P/share/man"
for m in man*/*; do
  page=$(MANWIDTH=80 man -l "$m" 2>"$W/man.err") || fail "man -l $m failed: $(cat "$W/man.err")"
  [ ! -s "$W/man.err" ] || fail "man -l $m: $(cat "$W/man.err")"
  [ "$(echo "$page" | grep -c .)" -ge 5 ] || fail "man -l $m renders nothing: $page"
  warn=$(groff -k -man -Tutf8 -ww -z "$m" 2>&1) && [ -z "$warn" ] || fail "groff warns about $m: $warn"
  n=$((n + 1))
done
cd - > /dev/null
MANWIDTH=80 man -l "$P/share/man/man1/syscluster-run.1" | grep -q -- '--coalesce' || fail "syscluster-run(1) does not document --coalesce"
say "man -l renders all $n manual pages without a warning"
bash -c "source '$P/share/bash-completion/completions/syscluster' && complete -p syscluster" > /dev/null || fail "the bash completion does not load"
if command -v zsh > /dev/null; then zsh -n "$P/share/zsh/site-functions/_syscluster" || fail "the zsh completion does not parse"; fi
if command -v fish > /dev/null; then fish -n "$P/share/fish/vendor_completions.d/syscluster.fish" || fail "the fish completion does not parse"; fi
say "completions: bash loads$(command -v zsh > /dev/null && echo ', zsh parses')$(command -v fish > /dev/null && echo ', fish parses')"

# -- 4. a program against libmulticall through pkg-config ----------------------
export PKG_CONFIG_PATH=$P/lib/pkgconfig
cc -O2 -o "$W/copy_mc" "$ROOT/libmulticall/examples/copy.c" $(pkg-config --cflags --libs libmulticall) || fail "cannot build against the installed libmulticall (pkg-config)"
cc -O2 -static -o "$W/copy_mc_static" "$ROOT/libmulticall/examples/copy.c" $(pkg-config --static --cflags --libs libmulticall) || fail "cannot build statically against the installed libmulticall (pkg-config --static)"
head -c 100000 /dev/urandom > "$W/in"
LD_LIBRARY_PATH=$P/lib "$W/copy_mc" "$W/in" "$W/out" || fail "the program linked with libmulticall.so failed"
cmp -s "$W/in" "$W/out" || fail "the program linked with libmulticall.so copied other bytes"
LD_LIBRARY_PATH=$P/lib ldd "$W/copy_mc" | grep -q "libmulticall.so.1 => $P/lib/libmulticall.so.1" || fail "libmulticall.so.1 is not resolved by its soname in PREFIX/lib"
"$W/copy_mc_static" "$W/in" "$W/out2" && cmp -s "$W/in" "$W/out2" || fail "the static program failed"
say "pkg-config: a program built against libmulticall (shared, by soname, and static) copies the same bytes"

# -- 5. uninstall ----------------------------------------------------------------
"$MAKE" -s -C "$ROOT" uninstall PREFIX="$P" > /dev/null || fail "make uninstall"
"$MAKE" -s -C "$ROOT" uninstall PREFIX=/usr DESTDIR="$W/stage" > /dev/null || fail "make uninstall DESTDIR="
left=$(find "$P" "$W/stage" -type f -o -type l)
[ -z "$left" ] || fail "make uninstall left: $left"
say "uninstall removes every file"
