#!/usr/bin/env python3
"""MPI-4 sessions and the site as a hardware level across sites:
session_check (tests/mpi/, a self-checking MPI program) runs through gridrun
on uneven layouts, linked with libgridcoll and, built against plain MPICH,
with --preload.  It starts with sessions alone (the grid must be the one
MPI_Init gives), then calls MPI_Init, then splits by hardware level; rank 0
prints "OK <case>" per case, a failing rank "FAIL <case>: ..." and aborts.
A run passes when it exits 0 with exactly the expected OK lines."""

from harness import SANITIZED, Skip, main, run_cases

CASES = ["psets", "session_world", "threads", "from_group",
         "intercomm_from_groups", "with_init", "hw_unguided", "hw_guided"]
# One rank against three, three sites with a one-rank site in the middle
# (both with one-process sites, which MPICH cannot run sessions on alone:
# the layer starts its world), a contiguous 3+2.
LAYOUTS = [
    ("sizes_1_3", ["--site-sizes", "1,3"]),
    ("sizes_2_1_2", ["--site-sizes", "2,1,2"]),
    ("sizes_3_2", ["--site-sizes", "3,2"]),
]
TIMEOUT = 90


def run(layout_args, preload):
    if preload and SANITIZED:
        raise Skip("an instrumented libgridcoll.so cannot be preloaded into "
                   "an uninstrumented program")
    program = "session_check_plain" if preload else "session_check"
    args = layout_args + (["--preload"] if preload else [])
    run_cases(program, args, CASES, timeout=TIMEOUT)


def make_test(layout_args, preload):
    return lambda: run(layout_args, preload)


if __name__ == "__main__":
    main([("%s_%s" % (layout, "preload" if preload else "linked"),
           make_test(args, preload))
          for layout, args in LAYOUTS for preload in (False, True)])
