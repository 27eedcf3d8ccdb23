#!/usr/bin/env python3
"""Grid Reduce_scatter(_block), Scan/Exscan and Reduce algorithms across
sites: reduce_wan (tests/mpi/, self-checking) through gridrun with
GRIDCOLL_STATS=1 on uneven layouts, every algorithm of the three tables in
turn.  Besides the program's own byte-for-byte checks ("OK <case>" lines,
no FAIL), the WAN traffic each site reports must be exactly the cost
model's (the algorithms' file headers in libgridcoll/coll/):
  reduce_scatter hier   site s sends the elements other sites own, once:
                        one message per (member of s, block of another
                        site's member) overlap of its share and segment
  reduce_scatter reduce_scatterv  the hier Reduce of the whole vector to
                        rank 0, then the hier Scatterv of the blocks
  scan hier             the site at position u of S sends its total to
                        the S-1-u sites after it
  scan gather_scatter   hier Gatherv to rank 0 and hier Scatterv back
  reduce hier           every site but the root's sends its partial
                        result to the root in segments."""

import os

from harness import BIN, algorithms, check, main, run_self_checking

PROGRAM = os.path.join(BIN, "reduce_wan")

# Three and five ranks; three sites with a one-rank site in the middle.
LAYOUTS = [("sizes_3_5", [3, 5]), ("sizes_2_1_2", [2, 1, 2])]
SITE_NAMES = ["alpha", "beta", "gamma"]

SEGSIZE = 256 * 1024  # reduce and reduce_scatter tables' default
DOUBLE, MATRIX = 8, 16

# What reduce_wan runs (keep in step with tests/mpi/reduce_wan.c).
SIZES = [0, 8, 1000, 65536, 1048576]

TIMEOUT = 90


def reduce_scatter_calls(n):
    """(per-rank counts, element size) of every Reduce_scatter(_block)."""
    calls = [([m // DOUBLE] * n, DOUBLE) for m in SIZES[:-1]]
    irregular = [((5 * r + 2) % 4) * 1000 for r in range(n)]
    calls += [(irregular, DOUBLE), (irregular, DOUBLE)]  # + in place
    calls.append(([(r % 3) * 20000 for r in range(n)], DOUBLE))
    calls.append(([(r % 3) * 700 for r in range(n)], MATRIX))
    return calls


# Scan and Exscan: (elements, element size) per call, each run twice.
SCAN_CALLS = [(m // DOUBLE, DOUBLE) for m in SIZES] + \
    [(65536 // DOUBLE, DOUBLE), (5000, MATRIX)]


def reduce_calls(n):
    """(elements, element size, root) of every Reduce."""
    calls = [(m // DOUBLE, DOUBLE, 0) for m in SIZES]
    calls += [(1048576 // DOUBLE, DOUBLE, n - 1), (65536 // DOUBLE, DOUBLE, 0),
              (5000, MATRIX, n - 1)]
    return calls


def cases(rs_algos, scan_algos, reduce_algos):
    names = []
    for a in rs_algos:
        names += ["reduce_scatter_block_%s_%d" % (a, m) for m in SIZES[:-1]]
        names += ["reduce_scatter_%s%s" % (a, x)
                  for x in ("", "_inplace", "_large", "_matrix")]
    for a in scan_algos:
        for name in ("scan", "exscan"):
            names += ["%s_%s_%d" % (name, a, m) for m in SIZES]
            names += ["%s_%s_inplace" % (name, a), "%s_%s_matrix" % (name, a)]
    for a in reduce_algos:
        names += ["reduce_%s_%d" % (a, m) for m in SIZES]
        names += ["reduce_%s_%s" % (a, x)
                  for x in ("root_last", "inplace", "matrix")]
    return names


def ceil_div(a, b):
    return -(-a // b)


class Layout:
    """Ranks of MPI_COMM_WORLD by site: contiguous, in site order."""

    def __init__(self, sizes):
        self.sizes = sizes
        self.n = sum(sizes)
        self.site = [s for s, k in enumerate(sizes) for _ in range(k)]
        first = [sum(sizes[:s]) for s in range(len(sizes))]
        self.members = [list(range(f, f + k)) for f, k in zip(first, sizes)]


def reduce_traffic(lay, count, esize, root):
    """(bytes, messages) per site of one hier Reduce."""
    seg = max(1, SEGSIZE // esize)
    out = []
    for s in range(len(lay.sizes)):
        if s == lay.site[root] or count == 0:
            out.append((0, 0))
        else:
            out.append((count * esize, ceil_div(count, seg)))
    return out


def scatterv_traffic(lay, block_bytes, root):
    """(bytes, messages) per site of one hier Scatterv (also of an empty
    one: a message per site)."""
    out = []
    for s in range(len(lay.sizes)):
        if s != lay.site[root]:
            out.append((0, 0))
            continue
        out.append((sum(block_bytes[r] for t in range(len(lay.sizes))
                        if t != s for r in lay.members[t]),
                    len(lay.sizes) - 1))
    return out


def gatherv_traffic(lay, block_bytes, root):
    return [(0, 0) if s == lay.site[root] else
            (sum(block_bytes[r] for r in lay.members[s]), 1)
            for s in range(len(lay.sizes))]


def reduce_scatter_hier_traffic(lay, counts, esize):
    """(bytes, messages) per site of one Reduce_scatter hier: member j of
    site s holds share j of E_s (the elements owned by other sites) and
    sends each overlap with a block, in segments, to its owner."""
    seg = max(1, SEGSIZE // esize)
    out = []
    for s, members in enumerate(lay.members):
        remote = [r for r in range(lay.n) if lay.site[r] != s]
        total = sum(counts[r] for r in remote)
        messages = 0
        for j in range(len(members)):
            lo = total * j // len(members)
            hi = total * (j + 1) // len(members)
            at = 0
            for r in remote:
                overlap = min(hi, at + counts[r]) - max(lo, at)
                if overlap > 0:
                    messages += ceil_div(overlap, seg)
                at += counts[r]
        out.append((total * esize, messages))
    return out


def scan_hier_traffic(lay, count, esize):
    sites = len(lay.sizes)
    return [(0, 0) if count * esize == 0 else
            ((sites - 1 - u) * count * esize, sites - 1 - u)
            for u in range(sites)]


def add(total, traffic):
    for s, (b, m) in enumerate(traffic):
        total[s][0] += b
        total[s][1] += m


def expected(lay):
    """{(coll, algo): [(calls, bytes, messages) per site]}."""
    sites = len(lay.sizes)
    want = {}

    def tally(key, traffics):
        total = [[0, 0] for _ in range(sites)]
        for t in traffics:
            add(total, t)
        want[key] = [(len(traffics), b, m) for b, m in total]

    rs = reduce_scatter_calls(lay.n)
    tally(("reduce_scatter", "hier"),
          [reduce_scatter_hier_traffic(lay, c, e) for c, e in rs])
    scatterv = []
    for counts, esize in rs:
        both = [[0, 0] for _ in range(sites)]
        add(both, reduce_traffic(lay, sum(counts), esize, 0))
        add(both, scatterv_traffic(lay, [c * esize for c in counts], 0))
        scatterv.append([tuple(x) for x in both])
    tally(("reduce_scatter", "reduce_scatterv"), scatterv)

    scans = SCAN_CALLS * 2  # Scan and Exscan
    tally(("scan", "hier"), [scan_hier_traffic(lay, c, e) for c, e in scans])
    gather_scatter = []
    for count, esize in scans:
        both = [[0, 0] for _ in range(sites)]
        add(both, gatherv_traffic(lay, [count * esize] * lay.n, 0))
        add(both, scatterv_traffic(lay, [count * esize] * lay.n, 0))
        gather_scatter.append([tuple(x) for x in both])
    tally(("scan", "gather_scatter"), gather_scatter)

    tally(("reduce", "hier"),
          [reduce_traffic(lay, c, e, root) for c, e, root in
           reduce_calls(lay.n)])
    return want


def run(sizes):
    env = dict(os.environ, GRIDCOLL_STATS="1")
    for var in ("GRIDCOLL_REDUCE", "GRIDCOLL_REDUCE_SEGSIZE",
                "GRIDCOLL_REDUCE_SCATTER", "GRIDCOLL_REDUCE_SCATTER_SEGSIZE",
                "GRIDCOLL_SCAN"):
        env.pop(var, None)
    return run_self_checking(PROGRAM, sizes, [], env, TIMEOUT)


def layout_test(sizes):
    def test():
        rs_algos = algorithms("reduce_scatter")
        scan_algos = algorithms("scan")
        reduce_algos = algorithms("reduce")
        check(sorted(rs_algos) == ["hier", "reduce_scatterv"] and
              sorted(scan_algos) == ["gather_scatter", "hier"] and
              reduce_algos == ["hier"],
              "gridcoll-info lists reduce_scatter %s, scan %s, reduce %s" %
              (rs_algos, scan_algos, reduce_algos))
        ok, stats = run(sizes)
        want = cases(rs_algos, scan_algos, reduce_algos)
        check(sorted(ok) == sorted(want),
              "OK lines differ; missing %s, unexpected or repeated %s" %
              (sorted(set(want) - set(ok)),
               sorted(l for l in ok if l not in want or ok.count(l) > 1)))
        for (coll, algo), per_site in expected(Layout(sizes)).items():
            for s, triple in enumerate(per_site):
                got = stats.get((SITE_NAMES[s], coll, algo), (0, 0, 0))
                check(got == triple,
                      "site %s %s %s: (calls, wan_bytes, wan_messages) = "
                      "%s, expected %s" % (SITE_NAMES[s], coll, algo, got,
                                           triple))
    return test


if __name__ == "__main__":
    main([("all_algorithms_%s" % layout, layout_test(sizes))
          for layout, sizes in LAYOUTS])
