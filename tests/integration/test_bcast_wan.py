#!/usr/bin/env python3
"""Bcast algorithms across sites: bcast_wan (tests/mpi/, self-checking)
runs every bcast algorithm in one gridrun job per layout, switching with
GridColl_Set_algorithm, with GRIDCOLL_STATS=1.  Every case must print its
OK line, and each algorithm's WAN bytes and messages per site (the
gridcoll-stats lines) must be exactly what its cost model says
(docs/algorithms/bcast.md):

  hier       the root's site sends M to every other site's leader:
             (S-1) M bytes per call from the root's site, none elsewhere;
  multilane, chain
             every byte crosses each WAN link between consecutive sites
             (root's site first) once: M per call from every site but the
             last in that order;
  binomial, scatter_allgather
             the edges of their trees and ring that join two sites, from
             a model of the schedule.

Messages: one per segment (GRIDCOLL_BCAST_SEGSIZE, set here to an odd
30000 bytes, so that 4 MiB makes more segments per stream than a plan
keeps in flight) on every WAN edge; multilane cuts each half
separately.

One more job runs hier alone with its local phase through the node layer
(GRIDCOLL_BCAST_LOCAL=shm) on virtual nodes of two ranks
(GRIDCOLL_NODE_SIZE=2) with a 64 KiB shared buffer: node leaders take
part, 4 MiB goes through the buffer in chunks, the WAN counts are hier's."""

import os
import re
import subprocess

from harness import BIN, check, main, tail, wan_stats

GRIDRUN = os.path.join(BIN, "gridrun")
ALGORITHMS = ["hier", "multilane", "binomial", "scatter_allgather", "chain"]
SIZES = [0, 1, 1000, 64 * 1024, 4 * 1024 * 1024]
SEGSIZE = 30000
MAX_MESSAGE = 1 << 30
SITE_NAMES = ["alpha", "beta", "gamma", "delta"]
LAYOUTS = [[3, 5], [2, 1, 2]]
NODE_ENV = {"GRIDCOLL_BCAST_LOCAL": "shm", "GRIDCOLL_NODE_SIZE": "2",
            "GRIDCOLL_SHM_BYTES": "64K"}
TIMEOUT = 90


def ceil_div(a, b):
    return -(-a // b)


def roots(p):
    # As bcast_wan.c: 0, the last rank, the middle one; repeats run once.
    out = []
    for r in (0, p - 1, p // 2):
        if r not in out:
            out.append(r)
    return out


class Layout:
    def __init__(self, sizes):
        self.sizes = sizes
        self.p = sum(sizes)
        self.site = [s for s, n in enumerate(sizes) for _ in range(n)]

    def order(self, root):
        """Ranks in broadcast order: the root, its site, the next sites."""
        s0 = self.site[root]
        out = [root]
        for k in range(len(self.sizes)):
            s = (s0 + k) % len(self.sizes)
            out += [r for r in range(self.p)
                    if self.site[r] == s and r != root]
        return out


def segments(m, seg):
    return ceil_div(m, seg)


def model(layout, algo, m, root):
    """(site -> bytes, site -> messages) sent over the WAN by one call."""
    sites = len(layout.sizes)
    sent = [0] * sites
    msgs = [0] * sites
    if m == 0:
        return sent, msgs
    order = layout.order(root)
    site_of = [layout.site[r] for r in order]  # by position
    chain_sites = []
    for s in site_of:
        if s not in chain_sites:
            chain_sites.append(s)

    def edge(u, v, nbytes, count):
        if nbytes > 0 and site_of[u] != site_of[v]:
            sent[site_of[u]] += nbytes
            msgs[site_of[u]] += count

    p = layout.p
    if algo == "hier":
        sent[layout.site[root]] = (sites - 1) * m
        msgs[layout.site[root]] = (sites - 1) * segments(m, SEGSIZE)
    elif algo in ("multilane", "chain"):
        if algo == "chain":
            per_link = segments(m, SEGSIZE)
        else:
            half = m - m // 2
            per_link = segments(half, SEGSIZE) + segments(m - half, SEGSIZE)
        for s in chain_sites[:-1]:
            sent[s] += m
            msgs[s] += per_link
    elif algo == "binomial":
        for u in range(1, p):
            edge(u - (u & -u), u, m, segments(m, MAX_MESSAGE))
    elif algo == "scatter_allgather":
        block = ceil_div(m, p)

        def nbytes(first, n):
            lo, hi = min(first * block, m), min((first + n) * block, m)
            return hi - lo

        def subtree(v):
            return p if v == 0 else v & -v

        for v in range(1, p):
            edge(v - (v & -v), v, nbytes(v, min(subtree(v), p - v)), 1)
        for v in range(p):
            right = (v + 1) % p
            for i in range(p - 1):
                out = (v - i) % p
                if not right <= out < right + subtree(right):
                    edge(v, right, nbytes(out, 1), 1)
    return sent, msgs


def expected_stats(layout, algo):
    sites = len(layout.sizes)
    total_bytes = [0] * sites
    total_msgs = [0] * sites
    for m in SIZES:
        for root in roots(layout.p):
            sent, msgs = model(layout, algo, m, root)
            for s in range(sites):
                total_bytes[s] += sent[s]
                total_msgs[s] += msgs[s]
    return total_bytes, total_msgs


def run_layout(sizes, algorithms=ALGORITHMS, env_extra=None):
    layout = Layout(sizes)
    env = dict(os.environ, GRIDCOLL_STATS="1",
               GRIDCOLL_BCAST_SEGSIZE=str(SEGSIZE))
    env.pop("GRIDCOLL_BCAST", None)
    for var in NODE_ENV:
        env.pop(var, None)
    env.update(env_extra or {})
    args = [GRIDRUN, "--timeout", str(TIMEOUT), "--site-sizes",
            ",".join(map(str, sizes)), "--", os.path.join(BIN, "bcast_wan")]
    if algorithms != ALGORITHMS:
        args += algorithms
    # gridrun's own --timeout tears the job down cleanly.
    r = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=TIMEOUT + 30, env=env)
    out, err = r.stdout, r.stderr
    failures = [l for l in (out + err).splitlines() if "FAIL" in l]
    check(not failures, "bcast_wan reported:\n%s\n--- stderr:\n%s" %
          ("\n".join(failures[:10]), tail(err)))
    check(r.returncode != 124, "bcast_wan hung (gridrun --timeout %d):\n%s"
          % (TIMEOUT, tail(out + err)))
    check(r.returncode == 0, "bcast_wan exited %d:\n%s\n--- stderr:\n%s" %
          (r.returncode, tail(out), tail(err)))

    want = ["OK %s/%d/root%d" % (a, m, root) for a in algorithms
            for m in SIZES for root in roots(layout.p)]
    ok = [l for l in out.splitlines() if re.match(r"OK \S+$", l)]
    check(sorted(ok) == sorted(want),
          "OK lines differ; missing %s, unexpected or repeated %s" %
          (sorted(set(want) - set(ok)),
           sorted(l for l in ok if l not in want or ok.count(l) > 1)))

    stats = {(site, algo): counts
             for (site, coll, algo), counts in wan_stats(out + err).items()
             if coll == "bcast"}
    calls = len(SIZES) * len(roots(layout.p))
    problems = []
    for algo in algorithms:
        want_bytes, want_msgs = expected_stats(layout, algo)
        for s in range(len(sizes)):
            name = SITE_NAMES[s]
            got = stats.get((name, algo))
            expect = (calls, want_bytes[s], want_msgs[s])
            if got != expect:
                problems.append("%s on %s: calls, wan_bytes, wan_messages "
                                "are %s, want %s" % (algo, name, got, expect))
    check(not problems, "WAN counts differ from the cost models:\n%s" %
          "\n".join(problems))


def make_test(sizes):
    return lambda: run_layout(sizes)


if __name__ == "__main__":
    main([("bcast_wan_%s" % "_".join(map(str, sizes)), make_test(sizes))
          for sizes in LAYOUTS] +
         [("bcast_wan_hier_shm_nodes_of_2_3_5",
           lambda: run_layout([3, 5], ["hier"], NODE_ENV))])
