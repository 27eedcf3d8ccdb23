#!/usr/bin/env python3
"""relay/transport_tls.c is the one relay source that speaks to OpenSSL
(its headers, its functions and types, libevent's OpenSSL bufferevents);
every other one asks it through relay.h.  Names each line of another
relay source that uses OpenSSL, and checks that the pattern still finds
OpenSSL where it is, so that a renamed file cannot make this pass."""

import glob
import os
import re
import sys

TLS_SOURCES = {"transport_tls.c"}
OPENSSL = re.compile(r"openssl|bufferevent_ssl|BUFFEREVENT_SSL|"
                     r"\bSSL\b|\bX509\b|"
                     r"\b(SSL|X509|EVP|ERR|RAND|OPENSSL|CRYPTO|BIO|PEM|HMAC|"
                     r"TLS1)_")


def main(relay_dir):
    passed = failed = 0
    sources = sorted(glob.glob(os.path.join(relay_dir, "*.[ch]")))
    names = {os.path.basename(path) for path in sources}
    for name in sorted(TLS_SOURCES - names):
        print("FAIL %s: no such file in %s" % (name, relay_dir),
              file=sys.stderr)
        failed += 1
    for path in sources:
        name = os.path.basename(path)
        with open(path, encoding="utf-8") as f:
            hits = [(n, line.rstrip()) for n, line in enumerate(f, 1)
                    if OPENSSL.search(line)]
        if name in TLS_SOURCES:
            ok = bool(hits)
            if not ok:
                print("FAIL %s: no OpenSSL found where it lives" % name,
                      file=sys.stderr)
        else:
            ok = not hits
            for n, line in hits:
                print("FAIL relay/%s:%d: OpenSSL outside transport_tls.c: %s"
                      % (name, n, line.strip()), file=sys.stderr)
        passed += ok
        failed += not ok
    print("relay_openssl: %d passed, %d failed" % (passed, failed))
    return 0 if failed == 0 and passed > len(TLS_SOURCES) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
