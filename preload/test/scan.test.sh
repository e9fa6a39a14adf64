#!/usr/bin/env bash
# The raw-syscall scan counts only code: a table in .text outside every
# FDE (libcrypto's kind, test/lib/datatext.c) is data; a raw syscall in
# assembly without unwind info (Go's kind, test/lib/nocfi.c) is found; a
# real program that loads OpenSSL's libcrypto (python3 with hashlib and
# ssl) is coalesced, same bytes.
. "$(dirname "$0")/common.sh"
msg=$(rt env SYSCLUSTER_VERBOSE=1 "$T/scanprobe" "$T/libdatatext.so" "$W/scan" 2>&1)
if echo "$msg" | grep -q 'deferred=96 ' && ! echo "$msg" | grep -q "raw syscall"; then ok "scan: syscall bytes in data between functions are not raw syscalls"
else bad "scan: data in .text taken for code: $msg"; fi
msg=$(rt env SYSCLUSTER_VERBOSE=1 "$T/scanprobe" "$T/libnocfi.so" "$W/scan" 2>&1)
if echo "$msg" | grep -q "libnocfi.so makes system calls without libc"; then ok "scan: a raw syscall in code without unwind info is found"
else bad "scan: a raw syscall outside every FDE missed: $msg"; fi
if python3 -c 'import hashlib, ssl' 2>/dev/null; then
  py='import hashlib, ssl, os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
for i in range(2000): os.write(fd, b"%05d %s\n" % (i, hashlib.sha256(b"%d" % i).hexdigest()[:8].encode()))'
  python3 -c "$py" "$W/py1"; msg=$(rt env SYSCLUSTER_VERBOSE=1 python3 -c "$py" "$W/py2" 2>&1)
  if cmp -s "$W/py1" "$W/py2" && echo "$msg" | grep -q 'python3[^ ]*: deferred=[1-9]' && ! echo "$msg" | grep -q libcrypto; then
    ok "python3 with hashlib and ssl (libcrypto loaded): deferred, same bytes"
  else bad "python3 with libcrypto: $msg"; fi
else
  bad "python3 with hashlib and ssl not available (scripts/install-deps.sh installs python3)"
fi
t_finish
