#!/usr/bin/env python3
"""WAN traffic of the all-to-all algorithms against their cost model
(docs/algorithms/alltoall.md).  alltoall_wan (tests/mpi/, a
self-checking MPI_Alltoall of m = 0, 1, 1000, 65536 and 1 MiB bytes per
pair) runs through gridrun with GRIDCOLL_STATS=1 and a forced algorithm;
from each site's gridcoll-stats line for alltoall, with N ranks, n_s on
site s and `calls` calls:
  - lg:   wan_bytes == n_s (N - n_s) * (sum of m), every block crossing the
          WAN exactly once; wan_messages <= calls * sum over t != s of
          max(n_s, n_t), and exactly that many for the calls with m > 0;
  - hier: the same bytes; wan_messages <= calls * (sites - 1), one message
          per ordered pair of sites and call.
And once, the point-to-point local schedules must not take a message the
application's wildcard receive is waiting for (alltoall_wan wildcard)."""

import os
import re
import subprocess

from harness import BIN, check, main, tail, wan_stats

GRIDRUN = os.path.join(BIN, "gridrun")
PROGRAM = os.path.join(BIN, "alltoall_wan")
# gridrun's site names, in site order (launcher/gridrun_job.c).
SITE_NAMES = ["alpha", "beta", "gamma", "delta", "epsilon"]
SIZES = [0, 1, 1000, 65536, 1048576]
CASES = ["m%d" % m for m in SIZES]
LAYOUTS = [[3, 5], [2, 1, 2]]
TIMEOUT = 90

def run(layout, algo, local=None, cases=CASES, args=(), gridrun_args=()):
    env = dict(os.environ, GRIDCOLL_STATS="1", GRIDCOLL_ALLTOALL=algo)
    env.pop("GRIDCOLL_ALLTOALL_LOCAL", None)
    if local:
        env["GRIDCOLL_ALLTOALL_LOCAL"] = local
    # gridrun's own --timeout tears the job down cleanly.
    r = subprocess.run([GRIDRUN, "--timeout", str(TIMEOUT), "--site-sizes",
                        ",".join(map(str, layout))] + list(gridrun_args) +
                       ["--", PROGRAM] +
                       list(args), env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=TIMEOUT + 30)
    out = r.stdout + r.stderr
    check(r.returncode == 0 and "FAIL" not in out,
          "alltoall_wan exited %d:\n%s" % (r.returncode, tail(out, 30)))
    ok = [l[3:] for l in r.stdout.splitlines() if re.match(r"OK \S+$", l)]
    check(ok == cases, "OK lines %s, want %s" % (ok, cases))
    stats = {site: (algo,) + counts
             for (site, coll, algo), counts in wan_stats(out).items()
             if coll == "alltoall"}
    return stats, out


def check_traffic(layout, algo):
    stats, out = run(layout, algo)
    total = sum(layout)
    busy_calls = sum(1 for m in SIZES if m > 0)
    for s, n in enumerate(layout):
        site = SITE_NAMES[s]
        check(site in stats, "no alltoall stats for site %s:\n%s" %
              (site, tail(out, 30)))
        used, calls, wan_bytes, wan_messages = stats[site]
        where = "%s on %s, site %s (%d ranks)" % (
            algo, "+".join(map(str, layout)), site, n)
        check(used == algo and calls == len(SIZES),
              "%s: algo=%s calls=%d, want %s and %d" %
              (where, used, calls, algo, len(SIZES)))
        want_bytes = n * (total - n) * sum(SIZES)
        check(wan_bytes == want_bytes, "%s: wan_bytes=%d, want n_s (N - n_s) "
              "sum(m) = %d" % (where, wan_bytes, want_bytes))
        others = [t for j, t in enumerate(layout) if j != s]
        if algo == "lg":
            per_call = sum(max(n, t) for t in others)
            check(wan_messages <= calls * per_call,
                  "%s: wan_messages=%d over the bound %d calls * %d" %
                  (where, wan_messages, calls, per_call))
            check(wan_messages == busy_calls * per_call,
                  "%s: wan_messages=%d, want %d (%d calls with data * %d)" %
                  (where, wan_messages, busy_calls * per_call, busy_calls,
                   per_call))
        else:
            check(wan_messages <= calls * len(others),
                  "%s: wan_messages=%d over the bound %d calls * %d" %
                  (where, wan_messages, calls, len(others)))


def make_test(layout, algo):
    return lambda: check_traffic(layout, algo)


def wildcard():
    run([3, 5], "lg", local="lin", cases=["wildcard"],
        args=["wildcard"])


# Every intra-site schedule under lg's local phase, on a site of 4 ranks
# that fills the fat tree FT(2; 2, 2) and one of 3 that does not (opt
# then runs on the fitted tree).
LOCAL_SCHEDULES = ("lin", "xor", "opt", "bruck", "mpich")


def make_local_test(local):
    return lambda: run([3, 4], "lg", local=local,
                       gridrun_args=["--fattree", "2,2"])


if __name__ == "__main__":
    main([("%s_%s" % (algo, "_".join(map(str, layout))),
           make_test(layout, algo))
          for algo in ("lg", "hier") for layout in LAYOUTS] +
         [("local_%s" % local, make_local_test(local))
          for local in LOCAL_SCHEDULES] +
         [("wildcard_lin", wildcard)])
