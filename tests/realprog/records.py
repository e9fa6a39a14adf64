"""The interpreter of the real-program suite (tests/integration/real_programs.rs):
python3 with OpenSSL loaded (hashlib, ssl) writing many small records to
a file, each flushed: one short write per record.

Usage: records.py OUT N
Prints the OpenSSL version's name and the SHA-256 of what it wrote."""
import hashlib
import ssl
import sys

out, n = sys.argv[1], int(sys.argv[2])
ssl.create_default_context()  # libssl, not only libcrypto, is in use
with open(out, "w") as f:
    for i in range(n):
        f.write("%d %s\n" % (i, hashlib.sha256(str(i).encode()).hexdigest()[:16]))
        f.flush()
with open(out, "rb") as f:
    print(ssl.OPENSSL_VERSION.split()[0], hashlib.sha256(f.read()).hexdigest())
