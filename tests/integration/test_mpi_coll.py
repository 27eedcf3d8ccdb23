#!/usr/bin/env python3
"""Communicators and collectives across sites: comm_check and coll_check
(tests/mpi/, self-checking MPI programs linked with libgridcoll) run through
gridrun on one site (pass-through) and on uneven multi-site layouts.  Each
program prints "OK <case>" per case from rank 0, or "FAIL <case>: ..." and
aborts; a run passes when it exits 0 with exactly the expected OK lines and
no FAIL."""

import os
import re
import subprocess

from harness import BIN, SANITIZED, check, main, tail

GRIDRUN = os.path.join(BIN, "gridrun")

PROGRAMS = {
    "comm_check": [
        "world", "dup", "split_parity", "split_mod3_rev", "split_reverse",
        "split_undefined", "split_shared", "groups", "create", "compare",
        "attributes", "nested", "free_many", "isolation", "create_group",
        "idup", "info"],
    "coll_check": [
        "barrier", "bcast", "reduce", "allreduce", "reduce_scatter",
        "reduce_scatter_block", "scan", "exscan", "gather", "gatherv",
        "scatter", "scatterv", "allgather", "allgatherv", "alltoall",
        "alltoallv", "alltoallw"],
}

# Single site (pass-through); one rank against three; even 2+2; a
# contiguous 3+2; uneven 3+5 (eight ranks on this machine's two cores);
# three sites with a one-rank site in the middle.
LAYOUTS = [
    ("sites_1_n_3", ["--sites", "1", "-n", "3"]),
    ("sizes_1_3", ["--site-sizes", "1,3"]),
    ("sizes_2_2", ["--site-sizes", "2,2"]),
    ("sizes_3_2", ["--site-sizes", "3,2"]),
    ("sizes_3_5", ["--site-sizes", "3,5"]),
    ("sizes_2_1_2", ["--site-sizes", "2,1,2"]),
]

TIMEOUT = 90


def gridrun(args, program):
    # gridrun's own --timeout tears the job down cleanly; killing gridrun
    # from here instead would orphan its relays and ranks.
    r = subprocess.run([GRIDRUN, "--timeout", str(TIMEOUT)] + args + ["--"] +
                       program, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=TIMEOUT + 30)
    return r.returncode, r.stdout, r.stderr


def run_program(name, layout_args):
    rc, out, err = gridrun(layout_args, [os.path.join(BIN, name)])
    failures = [l for l in (out + err).splitlines() if "FAIL" in l]
    check(not failures, "%s reported:\n%s\n--- stderr:\n%s" %
          (name, "\n".join(failures[:10]), tail(err)))
    check(rc != 124, "%s hung (gridrun --timeout %d); output:\n%s\n%s" %
          (name, TIMEOUT, tail(out), tail(err)))
    check(rc == 0, "%s exited %d:\n%s\n--- stderr:\n%s" %
          (name, rc, tail(out), tail(err)))
    ok = [l for l in out.splitlines() if re.match(r"OK \S+$", l)]
    want = ["OK " + case for case in PROGRAMS[name]]
    check(sorted(ok) == sorted(want),
          "%s: OK lines differ; missing %s, unexpected or repeated %s" %
          (name, sorted(set(want) - set(ok)),
           sorted(l for l in ok if l not in want or ok.count(l) > 1)))


def make_test(name, layout_args):
    return lambda: run_program(name, layout_args)


# The sanitizer pass skips the layouts the others cover (even 2+2 and the
# contiguous 3+2), to keep the whole suite within its time budget.
SANITIZER_SKIPS = ("sizes_2_2", "sizes_3_2")

if __name__ == "__main__":
    main([("%s_%s" % (name, layout), make_test(name, args))
          for name in PROGRAMS for layout, args in LAYOUTS
          if not (SANITIZED and layout in SANITIZER_SKIPS)])
