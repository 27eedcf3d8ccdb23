#!/usr/bin/env python3
"""Beyond 2 GiB across sites: tests/mpi/bigcount_check sends one message of
2^31 + 4099 bytes (a count beyond INT_MAX of MPI_BYTE) each way between
rank 0 and the last rank, which are on different sites, and checks every
byte and the statuses' large counts (send_c: linked on 1+3 ranks,
preloaded into the plain build on 1+1; p2p_check count_c runs every _c
call on 2+1+2 at small sizes); and broadcasts as many bytes with
MPI_Bcast_c from one site to the other (bcast_c, one rank a site: every
rank holds the whole buffer).  Each run moves 2 to 4 GiB through the
relays: a test of its own, labelled long."""

import os
import re
import subprocess

from harness import BIN, SANITIZED, Skip, check, main

GRIDRUN = os.path.join(BIN, "gridrun")
BIGCOUNT_CHECK = os.path.join(BIN, "bigcount_check")
BIGCOUNT_CHECK_PLAIN = os.path.join(BIN, "bigcount_check_plain")
# About 25 s a run on an idle machine; several minutes on a busy one.
TIMEOUT_S = 600


def run_bigcount_check(layout, program=BIGCOUNT_CHECK, cases=("send_c",)):
    # gridrun's own --timeout tears the job down cleanly.
    r = subprocess.run([GRIDRUN, "--timeout", str(TIMEOUT_S)] + layout +
                       ["--", program] + list(cases), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True,
                       timeout=TIMEOUT_S + 30)
    ok = re.findall(r"^OK (\S+)$", r.stdout, re.M)
    summary = "%s: exit %d\nstdout:\n%s\nstderr tail:\n%s" % (
        " ".join(layout), r.returncode, r.stdout[-3000:],
        "\n".join(r.stderr.splitlines()[-20:]))
    check(r.returncode != 124, "job hung (gridrun timeout)\n" + summary)
    check("FAIL" not in r.stdout, "cases failed:\n" + summary)
    check(r.returncode == 0, "nonzero exit:\n" + summary)
    check(ok == list(cases), "cases passed: %s, expected %s\n%s"
          % (ok, list(cases), summary))


def two_sites_1_3():
    run_bigcount_check(["--site-sizes", "1,3"])


def preloaded_into_plain_build():
    if SANITIZED:
        raise Skip("instrumented libgridcoll.so cannot be preloaded into "
                   "uninstrumented programs; covered by the release build")
    run_bigcount_check(["--site-sizes", "1,1", "--preload"],
                       BIGCOUNT_CHECK_PLAIN)


def bcast_two_sites_1_1():
    run_bigcount_check(["--site-sizes", "1,1"], cases=("bcast_c",))


if __name__ == "__main__":
    main([("two_sites_1_3", two_sites_1_3),
          ("preloaded_into_plain_build", preloaded_into_plain_build),
          ("bcast_two_sites_1_1", bcast_two_sites_1_1)])
