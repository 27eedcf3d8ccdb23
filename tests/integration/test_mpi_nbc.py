#!/usr/bin/env python3
"""Nonblocking and persistent collectives across sites (issue 13).

coll_check, the byte-exact check of every collective, runs with
COLL_CHECK_FORM=nonblocking (each call as its MPI_I* form and MPI_Wait)
and =persistent (MPI_*_init, MPI_Start, MPI_Wait, MPI_Request_free) on one
site (MPICH's own forms), on 1+3 and on 2+1+2.  nbc_check adds what one
call at a time cannot show: Ibcast under every bcast algorithm and a
derived type freed before the wait, several collectives outstanding on
two communicators completed in shuffled order with point-to-point in
between, an Ibarrier that must not complete early, persistent
collectives started 100 times with the buffer changed between starts and
started in different orders on different ranks, a user op freed right
after MPI_Iallreduce, the reductions, allgather, alltoall and alltoallv
under every algorithm of their tables (persistent ones started twice,
the send buffer changed in between), and the neighbourhood collectives
in their three forms on Cartesian grids, a graph and distributed graphs,
also with GRIDCOLL_NEIGHBOR forcing each algorithm of the neighbor table
on every multi-site layout.

nbc_check's progress case runs here without the progress thread: the
others must wait for rank 0, which computes outside MPI (where rank 0 has a
peer on its site, and on one site, MPICH alone); test_mpi_thread.py runs it
with the thread."""

from harness import main, run_cases

COLL_CASES = [
    "barrier", "bcast", "reduce", "allreduce", "reduce_scatter",
    "reduce_scatter_block", "scan", "exscan", "gather", "gatherv", "scatter",
    "scatterv", "allgather", "allgatherv", "alltoall", "alltoallv",
    "alltoallw"]
NBC_CASES = ["ibcast", "overlap", "ibarrier", "persistent", "freedom",
             "algorithms", "neighbor", "count_c", "progress"]
THREAD = {"GRIDCOLL_ASYNC_PROGRESS": "1"}

LAYOUTS = [
    ("sites_1_n_3", ["--sites", "1", "-n", "3"]),
    ("sizes_1_3", ["--site-sizes", "1,3"]),
    ("sizes_2_1_2", ["--site-sizes", "2,1,2"]),
]
NBC_LAYOUTS = LAYOUTS + [("sizes_2_2", ["--site-sizes", "2,2"]),
                         ("sizes_1_1_1", ["--site-sizes", "1,1,1"])]


def coll_test(form, layout):
    return lambda: run_cases("coll_check", layout, COLL_CASES,
                             {"COLL_CHECK_FORM": form})


def nbc_test(layout, thread=False):
    # On one site MPICH runs the neighbourhood collectives itself, with its
    # own pairing where one process is both neighbours (nbc_check.c).
    env = {"NBC_CHECK_MPICH": "1"} if "--sites" in layout else {}
    if thread:
        env.update(THREAD)
    elif "1," not in " ".join(layout):
        # Rank 0 has a peer on its site (or MPICH alone runs the job).
        env["NBC_CHECK_WAIT_FOR_0"] = "1"
    return lambda: run_cases("nbc_check", layout, NBC_CASES, env)


def neighbor_test(algo, layout):
    # nbc_check checks that the forced algorithm ran each call, or that
    # bundled refused a communicator no two blocks cross between sites in.
    return lambda: run_cases("nbc_check", layout, ["neighbor"],
                             {"GRIDCOLL_NEIGHBOR": algo}, ["neighbor"])


if __name__ == "__main__":
    tests = [("coll_check_%s_%s" % (form, name), coll_test(form, args))
             for form in ("nonblocking", "persistent")
             for name, args in LAYOUTS]
    tests += [("nbc_check_%s" % name, nbc_test(args))
              for name, args in NBC_LAYOUTS]
    tests += [("neighbor_%s_%s" % (algo, name), neighbor_test(algo, args))
              for algo in ("direct", "bundled")
              for name, args in NBC_LAYOUTS if "--sites" not in args]
    main(tests)
