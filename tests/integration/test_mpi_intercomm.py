#!/usr/bin/env python3
"""Intercommunicators across sites (issue 14): tests/mpi/intercomm_check
makes intercommunicators with MPI_Intercomm_create from groups that
interleave the sites (world ranks by parity), from uneven groups (the
first third against the rest, over a duplicate of MPI_COMM_WORLD as peer)
and from two groups of one site over a site-local peer (MPICH's own; made
by all processes, and by that site's alone), and checks on each, byte for
byte: membership and remote groups, point-to-point with statuses naming
remote ranks, every intercommunicator collective in both directions with
MPI_ROOT and MPI_PROC_NULL (nonblocking ones all outstanding and completed
in reverse order, persistent ones started twice in different orders on
different members), MPI_Intercomm_merge's order, and dup, split, compare
and free.  One site is MPICH alone (the
same program's expectations hold there); the plain build runs once with
--preload."""

from harness import SANITIZED, Skip, main, run_cases

TIMEOUT = 120

CASES = ["%s_%s" % (ic, part)
         for ic in ("alone", "site", "parity", "groups", "uneven")
         for part in ("members", "p2p", "collectives", "merge", "dup_split")]

LAYOUTS = [
    ("sites_1_n_3", ["--sites", "1", "-n", "3"]),
    ("sizes_2_1_2", ["--site-sizes", "2,1,2"]),
    ("sizes_1_3", ["--site-sizes", "1,3"]),
    ("sizes_3_2", ["--site-sizes", "3,2"]),
]


def run(layout, program="intercomm_check"):
    run_cases(program, layout, CASES, timeout=TIMEOUT)


def preloaded():
    if SANITIZED:
        raise Skip("instrumented libgridcoll.so cannot be preloaded into "
                   "uninstrumented programs; covered by the release build")
    run(["--site-sizes", "2,1,2", "--preload"], "intercomm_check_plain")


if __name__ == "__main__":
    tests = [(name, lambda layout=layout: run(layout))
             for name, layout in LAYOUTS]
    tests.append(("preloaded_2_1_2", preloaded))
    main(tests)
