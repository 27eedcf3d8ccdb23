#!/usr/bin/env python3
"""Process topologies across sites (libgridcoll/comm/topo/): tests/mpi/topo_check
run through gridrun on one site (every call is MPICH's) and on 2+2, 1+3 and
1+1+1 sites (GridColl's).  The reorder = 0 answers ("ANS" lines: coordinates,
shifts, Cart_sub members, graph neighbours, weights, error classes) must be
the same byte for byte as the single-site run of the same size; the
reorder = 1 cases check themselves (bijective coordinates, sites' members in
their old order, the cut topo_reorder.c computes, data along the neighbours
by point to point and, across sites, by MPI_Neighbor_alltoall(v) under
every algorithm of the neighbor table, bundled refusing a communicator
no two blocks cross between sites in)
and print their cut ("CUT" lines), which must not exceed the identity's and,
for the layouts where a better order exists, must be lower."""

import os
import re

from harness import BIN, check, gridrun, main

TOPO_CHECK = os.path.join(BIN, "topo_check")
TIMEOUT_S = 60
CASES = ["world", "cart", "cart_small", "cart_sub", "graph", "dist_adjacent",
         "dist_create", "dup", "errors", "reorder_cart", "reorder_dist"]
CUT = re.compile(r"^CUT (\S+) (.*) identity (\d+) reorder (\d+)$", re.M)

_single = {}


def run(layout):
    rc, out, err = gridrun(layout, [TOPO_CHECK], timeout=TIMEOUT_S)
    summary = "%s: exit %d\nstdout tail:\n%s\nstderr tail:\n%s" % (
        " ".join(layout), rc, out[-3000:], "\n".join(err.splitlines()[-20:]))
    check(rc != 124, "job hung (gridrun timeout)\n" + summary)
    check("FAIL" not in out, "a case failed\n" + summary)
    check(rc == 0, "nonzero exit\n" + summary)
    ok = re.findall(r"^OK (\S+)$", out, re.M)
    check(ok == CASES, "cases reported: %s\n%s" % (ok, summary))
    answers = [l for l in out.splitlines() if l.startswith("ANS ")]
    check(answers, "no answers\n" + summary)
    return answers, CUT.findall(out)


def single(size):
    """The answers of plain MPICH (one site) for `size` ranks."""
    if size not in _single:
        _single[size] = run(["--sites", "1", "-n", str(size)])
    return _single[size]


def compare(layout, size):
    answers, cuts = run(layout)
    expected, _ = single(size)
    diff = [(a, b) for a, b in zip(expected, answers) if a != b]
    check(len(answers) == len(expected) and not diff,
          "%s: %d answers differ from MPICH's (one site), first: %s"
          % (" ".join(layout), len(diff) + abs(len(answers) - len(expected)),
             diff[:3]))
    for name, grid, identity, reorder in cuts:
        check(int(reorder) <= int(identity),
              "%s %s: reorder cuts %s, identity %s"
              % (name, grid, reorder, identity))
    return {(name, grid): (int(i), int(r)) for name, grid, i, r in cuts}


def one_site():
    _, cuts = single(4)
    for name, grid, identity, reorder in cuts:
        check(identity == reorder == "0", "one site cuts nothing: %s %s %s %s"
              % (name, grid, identity, reorder))


def two_sites_2_2():
    cuts = compare(["--site-sizes", "2,2"], 4)
    # The pairs v, v+2 of 4 ranks all cross 2+2 in rank order; reordered,
    # each pair is on one site and nothing is cut.
    identity, reorder = cuts[("reorder_dist", "n=4 step 2")]
    check(identity > 0 and reorder == 0, "reorder_dist 2+2: %s" % (cuts,))


def two_sites_1_3():
    compare(["--site-sizes", "1,3"], 4)


def three_sites_1_1_1():
    compare(["--site-sizes", "1,1,1"], 3)


def three_sites_2_1_3():
    # 6 ranks, pairs v, v+3: rank ranges 2+1+3 cut all three pairs, the
    # best order only the one whose member is alone on its site.
    cuts = compare(["--site-sizes", "2,1,3"], 6)
    identity, reorder = cuts[("reorder_dist", "n=6 step 3")]
    check(reorder * 3 == identity, "reorder_dist 2+1+3: reorder %d, "
          "identity %d" % (reorder, identity))


if __name__ == "__main__":
    main([("one_site", one_site),
          ("two_sites_2_2", two_sites_2_2),
          ("two_sites_1_3", two_sites_1_3),
          ("three_sites_1_1_1", three_sites_1_1_1),
          ("three_sites_2_1_3", three_sites_2_1_3)])
