#!/usr/bin/env python3
"""Every collective algorithm forced through its environment variable under
coll_check (tests/mpi/coll_check.c: every collective, several datatypes and
ops, MPI_IN_PLACE, sub-communicators whose sites interleave, results checked
against a reference computed independently).

Round i forces, for every collective coll_check calls that has one, its
i-th grid algorithm (GRIDCOLL_<COLL>), on a layout that changes from round
to round (uneven two sites, three sites with a one-rank site, one rank
against three), so every algorithm runs at least once, and the stats
(GRIDCOLL_STATS=1) must show that every site's calls of each forced
collective ran it and no other.  Algorithms with restrictions are left
to the defaults here: coll_check's interleaved sub-communicators with a
non-commutative op would make forcing them an error by design;
test_allgather_wan.py, test_reduce_wan.py and test_bcast_wan.py force them
on the calls they can run.

Site round i forces, with the grid defaults, the i-th site algorithm of
every table that has a site level (GRIDCOLL_<COLL>_LOCAL: bcast's and
allreduce's shm and mpich, allgather's strategies, alltoall's schedules),
and the site-level stats (GRIDCOLL_STATS=1) must show that every site's
phases chose it and no other."""

import os
import re

from harness import (BIN, algorithm_rows, check, gridrun, main, site_stats,
                     wan_stats)

COLL_CHECK = os.path.join(BIN, "coll_check")
LAYOUTS = [["--site-sizes", "2,3"], ["--site-sizes", "2,1,2"],
           ["--site-sizes", "1,3"]]
SITES = {"2,3": ["alpha", "beta"], "2,1,2": ["alpha", "beta", "gamma"],
         "1,3": ["alpha", "beta"]}
CASES = ["barrier", "bcast", "reduce", "allreduce", "reduce_scatter",
         "reduce_scatter_block", "scan", "exscan", "gather", "gatherv",
         "scatter", "scatterv", "allgather", "allgatherv", "alltoall",
         "alltoallv", "alltoallw"]
# The tables coll_check's cases reach (reduce_scatter_block's is
# reduce_scatter's, exscan's scan's): no neighbourhood collective.
GRID_TABLES = ["barrier", "bcast", "reduce", "allreduce", "reduce_scatter",
               "scan", "gather", "gatherv", "scatter", "scatterv",
               "allgather", "allgatherv", "alltoall", "alltoallv",
               "alltoallw"]
# The tables whose site level coll_check's calls reach with the grid
# defaults; the v-forms share allgather's and alltoall's.
SITE_TABLES = ["bcast", "allreduce", "allgather", "alltoall"]


def unrestricted_algorithms():
    """{collective: [algorithm, ...]} of the grid algorithms without
    restrictions of GRID_TABLES, in table order."""
    tables = {}
    for row in algorithm_rows():
        if (row["level"] == "grid" and not row["restrictions"] and
                row["coll"] in GRID_TABLES):
            tables.setdefault(row["coll"], []).append(row["algo"])
    return tables


def site_algorithms():
    """{collective: [site algorithm, ...]} of SITE_TABLES, in table
    order."""
    tables = {coll: [] for coll in SITE_TABLES}
    for row in algorithm_rows():
        if row["level"] == "site" and row["coll"] in tables:
            tables[row["coll"]].append(row["algo"])
    return tables


def round_env(tables, i, suffix=""):
    return {"GRIDCOLL_%s%s" % (coll.upper(), suffix): algos[i]
            for coll, algos in tables.items() if i < len(algos)}


def run_round(i, env):
    layout = LAYOUTS[i % len(LAYOUTS)]
    rc, out, err = gridrun(layout, [COLL_CHECK], env=env, timeout=120)
    where = "%s with %s" % (" ".join(layout), env)
    failures = [l for l in (out + err).splitlines() if "FAIL" in l]
    check(not failures and rc == 0, "%s: exit %d:\n%s" % (
        where, rc, "\n".join(failures[:5] + err.splitlines()[-15:])))
    ok = sorted(l[3:] for l in out.splitlines() if re.match(r"OK \S+$", l))
    check(ok == sorted(CASES), "%s: OK lines %s" % (where, ok))
    return SITES[layout[1]], err, where


def check_chosen(where, sites, calls, env, suffix):
    """Every site's calls ({(site, coll, algo): calls}) of each collective
    that env forces (GRIDCOLL_<COLL><suffix>=algo) chose that algorithm
    and no other."""
    for var, algo in env.items():
        coll = var[len("GRIDCOLL_"):len(var) - len(suffix)].lower()
        for site in sites:
            got = {a: n for (s, c, a), n in calls.items()
                   if s == site and c == coll}
            check(list(got) == [algo] and got[algo] > 0,
                  "%s: site %s chose %s for %s" % (where, site, got, var))


def forced_round(i, env):
    def test():
        sites, err, where = run_round(i, dict(env, GRIDCOLL_STATS="1"))
        calls = {key: counts[0] for key, counts in wan_stats(err).items()}
        check_chosen(where, sites, calls, env, "")
    return test


def site_round(i, env):
    def test():
        sites, err, where = run_round(i, dict(env, GRIDCOLL_STATS="1"))
        check_chosen(where, sites, site_stats(err), env, "_LOCAL")
    return test


if __name__ == "__main__":
    tables = unrestricted_algorithms()
    rounds = max(len(algos) for algos in tables.values())
    sites = site_algorithms()
    site_rounds = max(len(algos) for algos in sites.values())
    main([("round_%d" % i, forced_round(i, round_env(tables, i)))
          for i in range(rounds)] +
         [("site_round_%d" % i, site_round(i, round_env(sites, i, "_LOCAL")))
          for i in range(site_rounds)])
