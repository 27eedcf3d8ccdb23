#!/usr/bin/env python3
"""Selection of collective algorithms and its accounting: a bad
GRIDCOLL_<COLL> or GRIDCOLL_<COLL>_SEGSIZE stops an MPI program with a
message naming the variable, the value and (for algorithms) the valid
names; `gridcoll-info --algorithms` lists every table; GRIDCOLL_STATS=1
prints, per site, one line per collective and algorithm used with exact
call, WAN byte and WAN message counts for cases whose cost is known
(tests/mpi/coll_stats.c does nothing but the collective), and
GridColl_Algorithm_used names the forced algorithm; the default rule
switches allreduce from hier to multileader above 4 MiB."""

import csv
import io
import os
import re
import subprocess

from harness import BIN, STATS_LINE, check, gridrun, main, wan_stats

STATS = os.path.join(BIN, "coll_stats")
BENCH = os.path.join(BIN, "gridcoll-bench")
INFO = os.path.join(BIN, "gridcoll-info")
LAYOUT = ["--site-sizes", "2,1"]  # sites alpha (ranks 0, 1) and beta (2)

# Every table of libgridcoll (gc_coll_algo.h, enum gc_coll_kind).
TABLES = ["barrier", "bcast", "reduce", "allreduce", "reduce_scatter", "scan",
          "gather", "gatherv", "scatter", "scatterv", "allgather",
          "allgatherv", "alltoall", "alltoallv", "alltoallw"]

def info_csv():
    r = subprocess.run([INFO, "--algorithms", "--csv"],
                       stdout=subprocess.PIPE, text=True, check=True,
                       timeout=30)
    return list(csv.DictReader(io.StringIO(r.stdout)))


def failing_run(env, program):
    rc, out, err = gridrun(LAYOUT, program, env=env)
    check(rc not in (0, 124), "expected the job to fail, exit %d:\n%s\n%s" %
          (rc, out, err))
    return err


def test_bad_algorithm_name():
    valid = [r["algo"] for r in info_csv() if r["coll"] == "bcast"]
    err = failing_run({"GRIDCOLL_BCAST": "nonsense"},
                      [STATS, "bcast", "1", "8"])
    lines = [l for l in err.splitlines()
             if "GRIDCOLL_BCAST=nonsense" in l and "MPI_Bcast" in l]
    check(lines, "no message naming MPI_Bcast and GRIDCOLL_BCAST=nonsense:\n"
          + err)
    check(all(name in lines[0] for name in valid),
          "the message should list the valid names %s:\n%s" %
          (valid, lines[0]))


def test_bad_segment_size():
    err = failing_run({"GRIDCOLL_BCAST_SEGSIZE": "abc"},
                      [STATS, "bcast", "1", "8"])
    check(re.search(r"MPI_Bcast: GRIDCOLL_BCAST_SEGSIZE=abc is not a "
                    r"segment size", err),
          "no clear message about GRIDCOLL_BCAST_SEGSIZE=abc:\n" + err)


def test_bad_local_phase():
    err = failing_run({"GRIDCOLL_BCAST_LOCAL": "bogus"},
                      [STATS, "bcast", "1", "8"])
    check("MPI_Bcast: GRIDCOLL_BCAST_LOCAL=bogus is not a local phase of "
          "bcast (valid: shm, mpich)" in err,
          "no clear message about GRIDCOLL_BCAST_LOCAL=bogus:\n" + err)


def test_bad_shm_bytes():
    err = failing_run({"GRIDCOLL_BCAST": "hier",
                       "GRIDCOLL_BCAST_LOCAL": "shm",
                       "GRIDCOLL_SHM_BYTES": "12"},
                      [STATS, "bcast", "1", "8"])
    check(re.search(r"MPI_Bcast: GRIDCOLL_SHM_BYTES=12 is not a size "
                    r"from 4096 bytes", err),
          "no clear message about GRIDCOLL_SHM_BYTES=12:\n" + err)


def test_info_lists_every_table():
    r = subprocess.run([INFO, "--algorithms"], stdout=subprocess.PIPE,
                       text=True, check=True, timeout=30)
    rows = info_csv()
    check(sorted({row["coll"] for row in rows}) == sorted(TABLES),
          "--csv tables: %s" % sorted({row["coll"] for row in rows}))
    # The text form: a heading per table naming its variable, its
    # algorithms indented under it, then its default rule.  Other blocks
    # (choices inside an algorithm, such as alltoall's local phase) have
    # headings of their own.
    blocks = {}
    for block in r.stdout.strip().split("\n\n"):
        head = re.match(r"(\w+) \(GRIDCOLL_(\w+)=NAME", block)
        if head is None or head.group(2) != head.group(1).upper():
            continue
        blocks[head.group(1)] = block
        check(block.splitlines()[-1].startswith("  default: "),
              "no default rule for %s:\n%s" % (head.group(1), block))
    check(sorted(blocks) == sorted(TABLES), "tables: %s" % sorted(blocks))
    for row in rows:
        listed = [l.split()[0] for l in blocks[row["coll"]].splitlines()[1:-1]
                  if not l.strip().startswith("restrictions:")]
        check(row["algo"] in listed, "%s/%s missing from --algorithms:\n%s" %
              (row["coll"], row["algo"], blocks[row["coll"]]))


def stats_lines(env, args):
    rc, out, err = gridrun(LAYOUT, [STATS] + args,
                           env=dict(env, GRIDCOLL_STATS="1"))
    check(rc == 0, "coll_stats %s exited %d:\n%s\n%s" %
          (" ".join(args), rc, out, err))
    found = [STATS_LINE.fullmatch(l) for l in err.splitlines()
             if l.startswith("gridcoll-stats:")]
    check(all(found), "malformed gridcoll-stats line in:\n" + err)
    return sorted(m.groups() for m in found), out, err


def check_stats(env, args, want):
    """want: {(site, coll, algo): (calls, wan_bytes, wan_messages)}; each
    site also prints its coll=internal line."""
    got, out, err = stats_lines(env, args)
    forced = env["GRIDCOLL_" + args[0].upper()]
    check(out.split() == ["used=" + forced],
          "GridColl_Algorithm_used should name %s:\n%s" % (forced, out))
    internal = [g for g in got if g[1] == "internal"]
    check(sorted(g[0] for g in internal) == ["alpha", "beta"] and
          all(g[2] == "-" for g in internal),
          "one coll=internal algo=- line per site expected:\n" + err)
    used = sorted(g for g in got if g[1] != "internal")
    expected = sorted(k + tuple(str(v) for v in want[k]) for k in want)
    check(used == expected, "stats lines\n%s\nexpected\n%s" %
          ("\n".join(map(str, used)), "\n".join(map(str, expected))))


def test_allreduce_default_switch():
    """The default rule runs allreduce hier up to 4 MiB and multileader
    above (gc_coll_select.c): one automatic call of each size, seen in the
    stats.  Each site sends the other its whole vector either way; the
    bench's own MPI_Allreduces after the call (4 bytes: whether a result
    was wrong; 8: the call's time) run hier too."""
    for nbytes, want in (
            (4 << 20, {"hier": (3, (4 << 20) + 12, 3)}),
            ((4 << 20) + 8, {"hier": (2, 12, 2),
                             "multileader": (1, (4 << 20) + 8, 17)})):
        rc, out, err = gridrun(LAYOUT, [BENCH, "allreduce", "--sizes",
                                        str(nbytes), "--algos", "auto",
                                        "--iters", "1", "--warmup", "0",
                                        "--csv"],
                               env={"GRIDCOLL_STATS": "1"})
        check(rc == 0, "gridcoll-bench exited %d:\n%s\n%s" % (rc, out, err))
        for site in ("alpha", "beta"):
            got = {algo: v for (s, coll, algo), v in wan_stats(err).items()
                   if s == site and coll == "allreduce"}
            check(got == want, "%d B, site %s: %r, want %r"
                  % (nbytes, site, got, want))


def test_alltoall_default_switch():
    """The default rule runs alltoall lg below 512 KiB a pair and direct
    from there (gc_coll_select.c): one automatic call of each size, seen
    in the stats.  Either way each site sends the other 2 m bytes in 2
    messages on this layout."""
    for m, algo in (((512 << 10) - 4, "lg"), (512 << 10, "direct")):
        rc, out, err = gridrun(LAYOUT, [BENCH, "alltoall", "--sizes", str(m),
                                        "--algos", "auto", "--iters", "1",
                                        "--warmup", "0", "--csv"],
                               env={"GRIDCOLL_STATS": "1"})
        check(rc == 0, "gridcoll-bench exited %d:\n%s\n%s" % (rc, out, err))
        for site in ("alpha", "beta"):
            got = {a: v for (s, coll, a), v in wan_stats(err).items()
                   if s == site and coll == "alltoall"}
            check(got == {algo: (1, 2 * m, 2)}, "%d B, site %s: %r, want %s"
                  % (m, site, got, algo))


def test_stats_barrier():
    # Each call: one empty message from each site leader to the other.
    k = 5
    check_stats({"GRIDCOLL_BARRIER": "hier"}, ["barrier", str(k)],
                {("alpha", "barrier", "hier"): (k, 0, k),
                 ("beta", "barrier", "hier"): (k, 0, k)})


def test_stats_alltoall_direct():
    # Each call: every rank sends m bytes to each rank of the other site:
    # alpha 2 x 1 messages, beta 1 x 2.
    k, m = 3, 1000
    check_stats({"GRIDCOLL_ALLTOALL": "direct"}, ["alltoall", str(k), str(m)],
                {("alpha", "alltoall", "direct"): (k, 2 * 1 * m * k, 2 * k),
                 ("beta", "alltoall", "direct"): (k, 1 * 2 * m * k, 2 * k)})


def test_stats_bcast_hier():
    # The root (alpha) sends the buffer once to beta's leader per call (in
    # one message: m is below any pipeline segment); beta takes part in
    # every call but sends nothing across the WAN.
    k, m = 4, 1000
    check_stats({"GRIDCOLL_BCAST": "hier"}, ["bcast", str(k), str(m)],
                {("alpha", "bcast", "hier"): (k, m * k, k),
                 ("beta", "bcast", "hier"): (k, 0, 0)})


if __name__ == "__main__":
    main([(name[len("test_"):], fn) for name, fn in sorted(globals().items())
          if name.startswith("test_")])
