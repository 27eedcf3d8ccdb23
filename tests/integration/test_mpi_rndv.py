#!/usr/bin/env python3
"""Bounded memory at the receiver: the rendezvous of point-to-point
messages to another site above GRIDCOLL_RNDV_THRESHOLD
(libgridcoll/p2p/gc_p2p_rndv.c).  tests/mpi/rndv_check on --site-sizes 1,2
checks every byte, the order of a small eager message after a large one,
probes, Mprobe/Mrecv, Ssend, cancel, truncation, Bsend with
MPI_Buffer_detach and a receiver blocked in a call MPICH runs alone; here the flooded receiver's resident size
must grow by far less than the flood.  The same flood with the threshold
out of reach (eager only, the old behaviour) must grow it by about the
flood: the measurement is shown to see what it bounds."""

import os
import re

from harness import BIN, check, gridrun, main, tail

RNDV_CHECK = os.path.join(BIN, "rndv_check")

LAYOUT = ["--site-sizes", "1,2"]
CASES = ["flood", "small_flood", "probe_mrecv", "bsend_detach", "blocked"]
# The floods are 32 messages of 2 MiB + 4099 bytes (64 MiB) and 4096 of
# 8 KiB (32 MiB): the announced ones cost the receiver their envelopes
# (about 200 bytes each), so a few MiB of slack cover those and the
# library's and MPICH's own allocations (and ASan's) while it waits.
BOUND_KIB = 8 * 1024
EAGER_AT_LEAST_KIB = 48 * 1024


def run(env, cases):
    rc, out, err = gridrun(LAYOUT, [RNDV_CHECK] + cases, env, 120)
    both = out + err
    check(rc != 124, "rndv_check hung:\n" + tail(both, 30))
    check(rc == 0 and "FAIL" not in both,
          "rndv_check exited %d:\n%s" % (rc, tail(both, 30)))
    ok = re.findall(r"^OK (\S+)$", out, re.M)
    check(ok == cases, "OK lines %s, want %s" % (ok, cases))
    growth = dict((name, int(kib)) for name, kib in re.findall(
        r"^RSS_GROWTH_KIB (\S+) (-?\d+)", out, re.M))
    for name, kib in sorted(growth.items()):
        print("    INFO %s: receiver's RSS grew %d KiB" % (name, kib))
    return growth


def rendezvous():
    growth = run({}, CASES)
    check("flood" in growth and growth["flood"] < BOUND_KIB,
          "flood: receiver grew %s KiB, bound %d KiB"
          % (growth.get("flood"), BOUND_KIB))


def small_window():
    """The default window (32M) holds the whole small flood (32 MiB, and
    it grows by that); 2M must bound it."""
    growth = run({"GRIDCOLL_EAGER_WINDOW": "2M"}, ["small_flood"])
    check("small_flood" in growth and growth["small_flood"] < BOUND_KIB,
          "small_flood: receiver grew %s KiB, bound %d KiB"
          % (growth.get("small_flood"), BOUND_KIB))


def eager_only_grows():
    growth = run({"GRIDCOLL_RNDV_THRESHOLD": "1024G"},
                 ["flood", "small_flood"])
    for name in ("flood", "small_flood"):
        check(name in growth and growth[name] >= EAGER_AT_LEAST_KIB // 2,
              "%s eager: the receiver grew by %s KiB only"
              % (name, growth.get(name)))


if __name__ == "__main__":
    main([("rendezvous", rendezvous), ("small_window", small_window),
          ("eager_only_grows", eager_only_grows)])
