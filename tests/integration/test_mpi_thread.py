#!/usr/bin/env python3
"""Threads: MPI_THREAD_MULTIPLE programs, and the progress thread
(GRIDCOLL_ASYNC_PROGRESS=1, libgridcoll/runtime/gc_progress_thread.c).

thread_check runs 4 threads per rank calling MPI at once (rings on their
own communicators and on one with tags, wildcard receives of every other
thread's messages, concurrent communicator creation, MPI_Comm_create_group
on one parent with tags, intercommunicators, collectives, persistent
requests, a blocking site-local receive): on uneven layouts of 2 and 3
sites, linked and with --preload, and with the progress thread as well.

nbc_check's progress case has rank 0 compute outside MPI in the middle of
an MPI_Ibarrier: with the thread the others must leave before it ends (on
one site MPICH's own progress thread does it).  With the thread running
beside the program, nbc_check on two layouts, coll_check in its three
forms and p2p_check (MPI_Cancel of cross-site receives, whose callback
then defers to the engine) run whole and byte-exact.  Run in the
ThreadSanitizer build too (scripts/test.sh), where a race between the
thread and the program fails the rank."""

from harness import SANITIZED, Skip, main, run_cases
from test_mpi_nbc import COLL_CASES, LAYOUTS, NBC_LAYOUTS, THREAD, nbc_test
from test_mpi_p2p import CASES as P2P_CASES

SIZES_2_1_2 = LAYOUTS[2][1]
THREAD_CASES = ["levels", "ring_comms", "ring_tags", "wildcard",
                "comm_create", "create_group", "intercomm", "collectives",
                "persistent", "local_blocking"]
# With the progress thread, nbc_check looks for races between two threads
# in the engine; the layouts matter for the algorithms, which
# integration.mpi_nbc runs on all of them in every build.  Two layouts, a
# one-rank site among others and one rank per site, keep the CI run
# within its time.
NBC_THREAD_LAYOUTS = [layout for layout in NBC_LAYOUTS
                      if layout[0] in ("sizes_2_1_2", "sizes_1_1_1")]
# Three sites with a one-rank site, and two uneven sites without one
# (the concurrent creations hung on both before they were fixed); the
# release build adds a one-rank site beside a larger one.
MULTIPLE_LAYOUTS = [("sizes_2_1_2", SIZES_2_1_2),
                    ("sizes_3_2", ["--site-sizes", "3,2"])]
if not SANITIZED:
    MULTIPLE_LAYOUTS.insert(1, ("sizes_1_3", ["--site-sizes", "1,3"]))


# thread_check takes 11-16 s under ThreadSanitizer at load 3, and 126 s
# beside eight busy loops (all ten cases pass): a hang is what outlasts
# that.
MULTIPLE_TIMEOUT = 300 if SANITIZED else 120


def multiple_test(layout, env=None):
    return lambda: run_cases("thread_check", layout, THREAD_CASES, env,
                             timeout=MULTIPLE_TIMEOUT)


def multiple_preloaded():
    if SANITIZED:
        raise Skip("instrumented libgridcoll.so cannot be preloaded into "
                   "uninstrumented programs; covered by the release build")
    run_cases("thread_check_plain", ["--preload"] + SIZES_2_1_2, THREAD_CASES)


def coll_test(form):
    return lambda: run_cases("coll_check", SIZES_2_1_2, COLL_CASES,
                             dict(THREAD, COLL_CHECK_FORM=form))


if __name__ == "__main__":
    tests = [("multiple_%s" % name, multiple_test(args))
             for name, args in MULTIPLE_LAYOUTS]
    tests += [("multiple_preloaded", multiple_preloaded),
              ("multiple_with_progress_thread",
               multiple_test(SIZES_2_1_2, THREAD))]
    tests += [("nbc_check_%s" % name, nbc_test(args, thread=True))
              for name, args in NBC_THREAD_LAYOUTS]
    tests += [("coll_check_%s" % form, coll_test(form))
              for form in ("blocking", "nonblocking", "persistent")]
    tests += [("p2p_check", lambda: run_cases("p2p_check", SIZES_2_1_2,
                                              P2P_CASES, THREAD))]
    main(tests)
