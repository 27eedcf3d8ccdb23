#!/usr/bin/env python3
"""Grid Allgather(v) and Allreduce algorithms across sites: allgather_wan
(tests/mpi/, self-checking) through gridrun with GRIDCOLL_STATS=1 on
uneven layouts.  Per layout, allgather hier runs once with every
intra-site strategy (the site level of allgather's table, forced by
GRIDCOLL_ALLGATHER_LOCAL; the site-level stats must show every site chose
it and nothing else) and the whole program once
with the defaults, every algorithm of both tables in turn; and once with
the node layer's shared-memory local phases (allgather strategy shm,
GRIDCOLL_ALLREDUCE_LOCAL=shm) on virtual nodes of two ranks
(GRIDCOLL_NODE_SIZE=2) with a 64 KiB shared buffer, so node leaders talk
over the network and long messages go in chunks.  Besides the
program's own byte-for-byte checks ("OK <case>" lines, no FAIL), the WAN
traffic each site reports must be exactly the cost model's:
  allgather hier    each site sends its n_s blocks once to every other
                    site: S-1 messages of n_s m bytes (none when empty)
  allreduce hier    one vector per ordered site pair: S-1 messages of M
  allreduce multileader  the same (S-1) M bytes per site, one message
                    per overlapping pair of slices and segment."""

import os

from harness import BIN, algorithms, check, main, run_self_checking

PROGRAM = os.path.join(BIN, "allgather_wan")

STRATEGIES = algorithms("allgather", "site")
NODE_ENV = {"GRIDCOLL_ALLGATHER_LOCAL": "shm",
            "GRIDCOLL_ALLREDUCE_LOCAL": "shm",
            "GRIDCOLL_NODE_SIZE": "2", "GRIDCOLL_SHM_BYTES": "64K"}
# Three and five ranks: neither a power of two nor a square; three sites
# with a one-rank site in the middle.
LAYOUTS = [("sizes_3_5", [3, 5]), ("sizes_2_1_2", [2, 1, 2])]
SITE_NAMES = ["alpha", "beta", "gamma"]

# What allgather_wan sends (keep in step with tests/mpi/allgather_wan.c).
SIZES = [0, 8, 1000, 65536, 1048576]
ALLGATHER_BLOCKS = SIZES + [1000, 1000]   # + inplace, vector (250 ints)
ALLREDUCE_VECTORS = [(m // 8, 8) for m in SIZES] + [(65536 // 8, 8)] + \
    [(3, 16), (5000, 16)]                  # + inplace; matrices (4 unsigned)
ALLREDUCE_SEGSIZE = 256 * 1024             # the table's default

TIMEOUT = 90


def allgatherv_bytes(rank):
    return (rank % 3) * 125 * 4


def cases(allgather_algos, allreduce_algos):
    names = []
    for a in allgather_algos:
        names += ["allgather_%s_%d" % (a, m) for m in SIZES]
        names += ["allgather_%s_inplace" % a, "allgather_%s_vector" % a,
                  "allgatherv_%s" % a, "allgatherv_%s_inplace" % a]
    for a in allreduce_algos:
        names += ["allreduce_%s_%d" % (a, m) for m in SIZES]
        names += ["allreduce_%s_inplace" % a, "allreduce_%s_matrix_3" % a,
                  "allreduce_%s_matrix_5000" % a]
    return names


def run(sizes, env_extra, args, site_level=False):
    env = dict(os.environ, GRIDCOLL_STATS="1", **env_extra)
    for var in ("GRIDCOLL_ALLGATHER", "GRIDCOLL_ALLGATHERV",
                "GRIDCOLL_ALLREDUCE", "GRIDCOLL_ALLREDUCE_SEGSIZE"):
        env.pop(var, None)
    for var in NODE_ENV:
        if var not in env_extra:
            env.pop(var, None)
    return run_self_checking(PROGRAM, sizes, args, env, TIMEOUT, site_level)


def check_cases(ok, want):
    check(sorted(ok) == sorted(want),
          "OK lines differ; missing %s, unexpected or repeated %s" %
          (sorted(set(want) - set(ok)),
           sorted(l for l in ok if l not in want or ok.count(l) > 1)))


def check_stats(stats, site, coll, algo, want):
    got = stats.get((site, coll, algo), (0, 0, 0))
    check(got == want, "site %s %s %s: (calls, wan_bytes, wan_messages) = "
          "%s, expected %s" % (site, coll, algo, got, want))


def site_ranks(sizes):
    first = [sum(sizes[:s]) for s in range(len(sizes))]
    return [list(range(f, f + n)) for f, n in zip(first, sizes)]


def check_allgather_hier(stats, sizes):
    others = len(sizes) - 1
    for s, ranks in enumerate(site_ranks(sizes)):
        site = SITE_NAMES[s]
        blocks = [m * len(ranks) for m in ALLGATHER_BLOCKS]
        check_stats(stats, site, "allgather", "hier",
                    (len(blocks), others * sum(blocks),
                     others * sum(1 for b in blocks if b > 0)))
        block = sum(allgatherv_bytes(r) for r in ranks)
        check_stats(stats, site, "allgatherv", "hier",
                    (2, 2 * others * block, 2 * others * (block > 0)))


def slices(count, members):
    return [(count * j // members, count * (j + 1) // members)
            for j in range(members)]


def multileader_messages(sizes, s, count, esize):
    """Messages site s sends in one multileader call (allreduce_grid_
    multileader.c): per overlapping pair of slices, one per segment."""
    seg = max(1, ALLREDUCE_SEGSIZE // esize)
    messages = 0
    for lo, hi in slices(count, sizes[s]):
        for t, n in enumerate(sizes):
            if t == s:
                continue
            for tlo, thi in slices(count, n):
                overlap = min(hi, thi) - max(lo, tlo)
                if overlap > 0:
                    messages += -(-overlap // seg)
    return messages


def check_allreduce(stats, sizes):
    others = len(sizes) - 1
    vectors = [count * esize for count, esize in ALLREDUCE_VECTORS]
    for s in range(len(sizes)):
        site = SITE_NAMES[s]
        check_stats(stats, site, "allreduce", "hier",
                    (len(vectors), others * sum(vectors),
                     others * sum(1 for v in vectors if v > 0)))
        check_stats(stats, site, "allreduce", "multileader",
                    (len(vectors), others * sum(vectors),
                     sum(multileader_messages(sizes, s, count, esize)
                         for count, esize in ALLREDUCE_VECTORS if count)))


def strategy_test(sizes, strategy):
    def test():
        ok, stats, site = run(sizes, {"GRIDCOLL_ALLGATHER_LOCAL": strategy},
                              ["allgather_hier", "allgatherv_hier"], True)
        check_cases(ok, cases(["hier"], []))
        check_allgather_hier(stats, sizes)
        # Every site's phases ran the forced strategy, and only it.
        for s in range(len(sizes)):
            chosen = {a: n for (name, coll, a), n in site.items()
                      if name == SITE_NAMES[s] and coll == "allgather"}
            check(list(chosen) == [strategy] and chosen[strategy] > 0,
                  "site %s chose %s, forced %s" %
                  (SITE_NAMES[s], chosen, strategy))
    return test


def node_test(sizes):
    def test():
        ok, stats = run(sizes, NODE_ENV,
                        ["allgather_hier", "allgatherv_hier",
                         "allreduce_hier", "allreduce_multileader"])
        check_cases(ok, cases(["hier"], ["hier", "multileader"]))
        check_allgather_hier(stats, sizes)
        check_allreduce(stats, sizes)
    return test


def defaults_test(sizes):
    def test():
        allgather_algos = algorithms("allgather")
        allreduce_algos = algorithms("allreduce")
        check("hier" in allgather_algos and "multileader" in allreduce_algos,
              "gridcoll-info lists allgather %s, allreduce %s" %
              (allgather_algos, allreduce_algos))
        ok, stats = run(sizes, {}, [])
        check_cases(ok, cases(allgather_algos, allreduce_algos))
        check_allgather_hier(stats, sizes)
        check_allreduce(stats, sizes)
    return test


if __name__ == "__main__":
    tests = []
    for layout, sizes in LAYOUTS:
        tests.append(("defaults_%s" % layout, defaults_test(sizes)))
        tests += [("hier_%s_%s" % (strategy, layout),
                   strategy_test(sizes, strategy)) for strategy in STRATEGIES]
    tests.append(("shm_nodes_of_2_sizes_3_5", node_test([3, 5])))
    main(tests)
