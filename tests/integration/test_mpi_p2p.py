#!/usr/bin/env python3
"""MPI point-to-point conformance through gridrun: tests/mpi/p2p_check runs
every case (send modes, sizes up to 64 MiB, wildcards, ordering, probes, the
Wait/Test families, cancel, derived datatypes, truncation, communicator
isolation) in several site layouts; tests/mpi/p2p_persistent_check the
persistent and partitioned requests, MPI_Isendrecv, the request lifecycle
and buffered sends against the attached buffer.  Rank 0 and the last rank are on
different sites in every multi-site layout, and the program sends between
them in every case.  The single-site layout is MPICH pass-through.  The
same source built against plain MPICH runs once with --preload."""

import os
import re
import subprocess

from harness import BIN, SANITIZED, Skip, check, main

GRIDRUN = os.path.join(BIN, "gridrun")
P2P_CHECK = os.path.join(BIN, "p2p_check")
P2P_CHECK_PLAIN = os.path.join(BIN, "p2p_check_plain")
PERSISTENT_CHECK = os.path.join(BIN, "p2p_persistent_check")
PERSISTENT_CHECK_PLAIN = os.path.join(BIN, "p2p_persistent_check_plain")
TIMEOUT_S = 60
MPIEXEC_NOISE = re.compile(r"\s*=|YOUR APPLICATION TERMINATED|This typically "
                           r"refers|Please see the FAQ")

# Every case p2p_check runs by default, in its order.
CASES = [
    "send_recv", "ssend", "rsend", "bsend", "nonblocking", "wildcards",
    "get_count", "proc_null", "non_overtaking", "non_overtaking_any_source",
    "any_source_preposted", "behind_wildcard",
    "tag_out_of_order", "sendrecv", "probe", "wait_test", "cancel",
    "datatypes", "truncate", "many_outstanding", "large", "comm_isolation",
    "count_c",
]

PERSISTENT_CASES = [
    "persistent", "wildcard", "proc_null", "large_count", "free_active",
    "get_status", "cancel", "isendrecv", "bsend_buffer", "partitioned",
]


def run_p2p_check(layout, program=P2P_CHECK, cases=CASES):
    # gridrun's own --timeout tears the job down cleanly; killing gridrun
    # from here instead would orphan its relays and ranks.
    r = subprocess.run([GRIDRUN, "--timeout", str(TIMEOUT_S)] + layout +
                       ["--", program], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True,
                       timeout=TIMEOUT_S + 30)
    out, err = r.stdout, r.stderr
    ok = re.findall(r"^OK (\S+)$", out, re.M)
    fails = [l for l in out.splitlines() if l.startswith("FAIL")]
    # mpiexec's multi-line "BAD TERMINATION" banners would crowd out the
    # lines that say what went wrong.
    other = [l for l in out.splitlines() if l.strip() and
             not l.startswith("OK ") and not MPIEXEC_NOISE.match(l)]
    summary = ("%s: exit %d\npassed: %s\n%s\nother stdout:\n%s\n"
               "stderr tail:\n%s" % (
                   " ".join(layout), r.returncode, " ".join(ok) or "none",
                   "\n".join(fails), "\n".join(other[-20:]),
                   "\n".join(err.splitlines()[-20:])))
    check(r.returncode != 124,
          "job hung (gridrun timeout); last case passed: %s\n%s"
          % (ok[-1] if ok else "none", summary))
    check(not fails, "cases failed:\n" + summary)
    check(r.returncode == 0, "nonzero exit:\n" + summary)
    check(len(ok) == len(set(ok)), "a case reported twice: %s" % ok)
    check(set(ok) == set(cases),
          "cases missing: %s; unexpected: %s\n%s"
          % (sorted(set(cases) - set(ok)), sorted(set(ok) - set(cases)),
             summary))


def single_site_3_ranks():
    run_p2p_check(["--sites", "1", "-n", "3"])


def two_sites_1_1():
    run_p2p_check(["--site-sizes", "1,1"])


def two_sites_1_3():
    run_p2p_check(["--site-sizes", "1,3"])


def two_sites_2_2():
    run_p2p_check(["--site-sizes", "2,2"])


def two_sites_3_5():
    run_p2p_check(["--site-sizes", "3,5"])


def three_sites_2_1_2():
    run_p2p_check(["--site-sizes", "2,1,2"])


def preloaded_into_plain_build():
    if SANITIZED:
        raise Skip("instrumented libgridcoll.so cannot be preloaded into "
                   "uninstrumented programs; covered by the release build")
    run_p2p_check(["--site-sizes", "2,2", "--preload"], P2P_CHECK_PLAIN)


def persistent_2_1_2():
    run_p2p_check(["--site-sizes", "2,1,2"], PERSISTENT_CHECK,
                  PERSISTENT_CASES)


def persistent_1_3():
    run_p2p_check(["--site-sizes", "1,3"], PERSISTENT_CHECK, PERSISTENT_CASES)


def persistent_3_2():
    run_p2p_check(["--site-sizes", "3,2"], PERSISTENT_CHECK, PERSISTENT_CASES)


def persistent_preloaded_into_plain_build():
    if SANITIZED:
        raise Skip("instrumented libgridcoll.so cannot be preloaded into "
                   "uninstrumented programs; covered by the release build")
    run_p2p_check(["--site-sizes", "2,1,2", "--preload"],
                  PERSISTENT_CHECK_PLAIN, PERSISTENT_CASES)


if __name__ == "__main__":
    main([("single_site_3_ranks", single_site_3_ranks),
          ("two_sites_1_1", two_sites_1_1),
          ("two_sites_1_3", two_sites_1_3),
          ("two_sites_2_2", two_sites_2_2),
          ("two_sites_3_5", two_sites_3_5),
          ("three_sites_2_1_2", three_sites_2_1_2),
          ("preloaded_into_plain_build", preloaded_into_plain_build),
          ("persistent_2_1_2", persistent_2_1_2),
          ("persistent_1_3", persistent_1_3),
          ("persistent_3_2", persistent_3_2),
          ("persistent_preloaded_into_plain_build",
           persistent_preloaded_into_plain_build)])
