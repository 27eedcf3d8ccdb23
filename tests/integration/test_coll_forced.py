#!/usr/bin/env python3
"""Every collective algorithm forced through its environment variable under
coll_check (tests/mpi/coll_check.c: every collective, several datatypes and
ops, MPI_IN_PLACE, sub-communicators whose sites interleave, results checked
against a reference computed independently).

Round i forces, for every collective that has one, its i-th algorithm, on
a layout that changes from round to round (uneven two sites, three sites
with a one-rank site, one rank against three), so every algorithm runs at
least once.  Algorithms with restrictions are left to the defaults here:
coll_check's interleaved sub-communicators with a non-commutative op would
make forcing them an error by design; test_allgather_wan.py,
test_reduce_wan.py and test_bcast_wan.py force them on the calls they can
run, and every intra-site schedule (GRIDCOLL_ALLTOALL_LOCAL,
GRIDCOLL_ALLGATHER_LOCAL) byte for byte."""

import csv
import io
import os
import re
import subprocess

from harness import BIN, check, gridrun, main

INFO = os.path.join(BIN, "gridcoll-info")
COLL_CHECK = os.path.join(BIN, "coll_check")
LAYOUTS = [["--site-sizes", "2,3"], ["--site-sizes", "2,1,2"],
           ["--site-sizes", "1,3"]]
CASES = ["barrier", "bcast", "reduce", "allreduce", "reduce_scatter",
         "reduce_scatter_block", "scan", "exscan", "gather", "gatherv",
         "scatter", "scatterv", "allgather", "allgatherv", "alltoall",
         "alltoallv", "alltoallw"]


def unrestricted_algorithms():
    """{collective: [algorithm, ...]} of the algorithms without
    restrictions, in table order."""
    out = subprocess.run([INFO, "--algorithms", "--csv"], check=True,
                         stdout=subprocess.PIPE, text=True).stdout
    tables = {}
    for row in csv.DictReader(io.StringIO(out)):
        if not row["restrictions"]:
            tables.setdefault(row["coll"], []).append(row["algo"])
    return tables


def round_env(tables, i):
    return {"GRIDCOLL_%s" % coll.upper(): algos[i]
            for coll, algos in tables.items() if i < len(algos)}


def forced_round(i, env):
    def test():
        layout = LAYOUTS[i % len(LAYOUTS)]
        rc, out, err = gridrun(layout, [COLL_CHECK], env=env, timeout=120)
        where = "%s with %s" % (" ".join(layout), env)
        failures = [l for l in (out + err).splitlines() if "FAIL" in l]
        check(not failures and rc == 0, "%s: exit %d:\n%s" % (
            where, rc, "\n".join(failures[:5] + err.splitlines()[-15:])))
        ok = sorted(l[3:] for l in out.splitlines()
                    if re.match(r"OK \S+$", l))
        check(ok == sorted(CASES), "%s: OK lines %s" % (where, ok))
    return test


if __name__ == "__main__":
    tables = unrestricted_algorithms()
    rounds = max(len(algos) for algos in tables.values())
    main([("round_%d" % i, forced_round(i, round_env(tables, i)))
          for i in range(rounds)])
