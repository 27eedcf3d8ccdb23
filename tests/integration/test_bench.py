#!/usr/bin/env python3
"""gridcoll-bench under gridrun on two sites (2+1 ranks): the CSV header,
one row per algorithm (as `gridcoll-info --algorithms --csv` lists them,
plus "auto") and size, numbers that parse and are ordered p10 <= median <=
p90 (n/a only for an algorithm with restrictions), also with --start
window; the aligned table; an unknown algorithm in --algos or a bad
--start exits 2 naming the valid ones; the algorithms of a size take turns
call by call; a wrong result stops the bench with a FAIL line and the
wrong byte.  The nonblocking forms (ialltoall, ...): the same rows, each
timed (every algorithm is a schedule); --overlap (with
--test-every): its own CSV columns, times and overlaps in range, MPI_Test
called only in the --test-every rows, the overlapped calls' results
checked, usage errors.  gridcoll-halo on 2+4 ranks, a 2x3 grid: the
cut pairs of reorder 0 and 1 and the WAN messages the library counts for
them under --algo direct and bundled.  gridcoll-mpibench stream with
--omit: the ramp-up is streamed but left out of the timed part.
bench/proc_cpu.py: the CPU time of the processes a command starts."""

import csv
import io
import os
import re
import shutil
import subprocess
import tempfile
import time

from harness import BIN, SOURCE_DIR, algorithm_rows, check, gridrun, main

BENCH = os.path.join(BIN, "gridcoll-bench")
MPIBENCH = os.path.join(BIN, "gridcoll-mpibench")
HALO = os.path.join(BIN, "gridcoll-halo")
BCAST_SPY = os.path.abspath(os.path.join(BIN, "bcast_spy.so"))
LAYOUT = ["--site-sizes", "2,1"]
HEADER = "coll,algo,sites,ranks,bytes,median_us,p10_us,p90_us"
OVERLAP_HEADER = ("coll,algo,sites,ranks,bytes,test_every,tests,pure_us,"
                  "compute_us,total_us,overlap_pct,overlap_p10,overlap_p90")
SIZES = "8,1k"
TINY = ["--iters", "3", "--warmup", "1"]


def algorithms():
    """{collective: {algorithm: restrictions}} of the grid algorithms, the
    ones gridcoll-bench forces, from gridcoll-info."""
    table = {}
    for row in algorithm_rows():
        if row["level"] == "grid":
            table.setdefault(row["coll"], {})[row["algo"]] = row["restrictions"]
    return table


def run_bench(args):
    rc, out, err = gridrun(LAYOUT, [BENCH] + args)
    check(rc == 0, "gridcoll-bench %s exited %d:\n%s\n%s" %
          (" ".join(args), rc, out, err))
    return out


def check_csv(coll, sizes, extra=()):
    algos = algorithms()[coll]
    out = run_bench([coll, "--sizes", SIZES, "--csv"] + TINY + list(extra))
    lines = out.splitlines()
    check(lines and lines[0] == HEADER, "header: %r" % lines[:1])
    rows = list(csv.DictReader(io.StringIO(out)))
    got = sorted((r["algo"], int(r["bytes"])) for r in rows)
    want = sorted((a, b) for a in list(algos) + ["auto"] for b in sizes)
    check(got == want, "%s: rows (algo, bytes) %s, expected %s" %
          (coll, got, want))
    for r in rows:
        check(r["coll"] == coll and r["sites"] == "2" and r["ranks"] == "3",
              "row %s" % r)
        values = [r["median_us"], r["p10_us"], r["p90_us"]]
        if values == ["n/a"] * 3:
            check(algos.get(r["algo"]), "n/a for %s, which has no "
                  "restrictions" % r["algo"])
            continue
        median, p10, p90 = (float(v) for v in values)
        check(0 <= p10 <= median <= p90, "row %s: not p10 <= median <= p90"
              % r)


def test_nonblocking_csv():
    # MPI_Ialltoall then MPI_Wait under every algorithm of alltoall's
    # table, all schedules: every row has times.
    algos = algorithms()["alltoall"]
    rc, out, err = gridrun(LAYOUT, [BENCH, "ialltoall", "--sizes", SIZES,
                                    "--csv"] + TINY)
    check(rc == 0, "ialltoall exited %d:\n%s\n%s" % (rc, out, err))
    check(out.splitlines()[:1] == [HEADER], "header:\n" + out)
    rows = list(csv.DictReader(io.StringIO(out)))
    got = sorted((r["algo"], int(r["bytes"])) for r in rows)
    want = sorted((a, b) for a in list(algos) + ["auto"] for b in (8, 1024))
    check(got == want, "rows %s, expected %s" % (got, want))
    for r in rows:
        check(r["coll"] == "ialltoall" and r["ranks"] == "3", "row %s" % r)
        check(r["median_us"] != "n/a", "%s did not run as a schedule:\n%s" %
              (r["algo"], err))
        median, p10, p90 = (float(r[k]) for k in ("median_us", "p10_us",
                                                  "p90_us"))
        check(0 < p10 <= median <= p90, "row %s" % r)


def overlap_rows(args, sizes, algos, every):
    """gridcoll-bench --overlap: its rows, checked."""
    out = run_bench(args + ["--overlap", "--test-every", str(every),
                            "--algos", ",".join(algos), "--csv"] + TINY)
    check(out.splitlines()[:1] == [OVERLAP_HEADER], "header:\n" + out)
    rows = list(csv.DictReader(io.StringIO(out)))
    got = sorted((r["algo"], int(r["bytes"]), int(r["test_every"]))
                 for r in rows)
    want = sorted((a, b, e) for a in algos for b in sizes for e in (0, every))
    check(got == want, "rows %s, expected %s" % (got, want))
    for r in rows:
        check(r["coll"] == args[0] and r["sites"] == "2", "row %s" % r)
        pure, comp, total = (float(r[k]) for k in ("pure_us", "compute_us",
                                                   "total_us"))
        pct, p10, p90 = (float(r[k]) for k in ("overlap_pct", "overlap_p10",
                                               "overlap_p90"))
        check(pure > 0 and total > 0, "row %s" % r)
        # The loop is calibrated to the pure time of the calibration calls;
        # on a loaded machine those and the rounds' differ by up to 30
        # times (seen at a load of 18 on 2 cores), so this only catches a
        # calibration off by orders of magnitude.
        check(pure / 300 <= comp <= pure * 300,
              "compute %.0f us for a pure time of %.0f us: %s" % (comp, pure,
                                                                   r))
        check(0 <= p10 <= pct <= p90 <= 100, "overlaps out of order: %s" % r)
        tests = int(r["tests"])
        if r["test_every"] == "0":
            check(tests == 0, "MPI_Test called without --test-every: %s" % r)
        else:
            check(tests >= 1, "no MPI_Test with --test-every: %s" % r)
    return rows


def test_overlap_csv():
    overlap_rows(["iallreduce", "--sizes", "64k"], [65536],
                 ["reduce_bcast", "auto"],
                 10)
    # Sizes mean nothing to a barrier: bytes 0.
    overlap_rows(["ibarrier"], [0], ["auto"], 5)


def test_overlap_checked():
    # bcast_spy.so flips byte 3 of the last rank's MPI_Ibcast result while
    # binomial is forced, but only for a request that MPI_Test saw: the
    # --test-every calls.  Without --test-every all goes well; with it the
    # check of the first overlapped call with MPI_Test fails.
    args = [BENCH, "ibcast", "--sizes", "1k", "--algos", "binomial,auto",
            "--overlap", "--csv"] + TINY
    env = {"GRIDCOLL_TEST_WRONG_BCAST": "binomial"}
    rc, out, err = gridrun(LAYOUT, ["env", "LD_PRELOAD=" + BCAST_SPY] + args,
                           env=env)
    check(rc == 0, "without MPI_Test: exit %d:\n%s\n%s" % (rc, out, err))
    rc, out, err = gridrun(LAYOUT, ["env", "LD_PRELOAD=" + BCAST_SPY] + args +
                           ["--test-every", "1"], env=env)
    check(rc == 1, "exit status %d, expected 1:\n%s\n%s" % (rc, out, err))
    # A site that exits 1 may have the launcher tear down the others,
    # whose mpiexec then writes its banner on stdout too.
    lines = out.splitlines()
    fails = [l for l in lines if l.startswith("FAIL ")]
    rows = [l for l in lines if l.startswith("ibcast,")]
    check(lines[:1] == [OVERLAP_HEADER] and rows == [] and fails == [
        "FAIL coll=ibcast algo=binomial bytes=1024: wrong result (the ranks "
        "that saw it say where on stderr)"], "stdout:\n" + out)
    wrong = re.findall(r"^gridcoll-bench: rank (\d+): ibcast algo=(\S+) "
                       r"bytes=1024: byte (\d+) of the block from rank 0", err,
                       re.M)
    check(wrong == [("2", "binomial", "3")], "stderr:\n" + err)


def test_overlap_usage():
    for args, words in ((["alltoall", "--overlap"], "needs a nonblocking"),
                        (["ialltoall", "--test-every", "5"],
                         "only with --overlap"),
                        (["ialltoall", "--overlap", "--test-every", "0"],
                         "--test-every: a number")):
        rc, out, err = gridrun(LAYOUT, [BENCH] + args)
        check(rc == 2 and words in err,
              "%s: exit %d, expected 2 and %r:\n%s" % (args, rc, words, err))
        check(HEADER not in out and OVERLAP_HEADER not in out,
              "rows printed despite the error:\n" + out)


def test_halo():
    # A 2x3 grid on sites of 2 and 4 ranks: in rank order the first site
    # holds half a row, 3 neighbour pairs cross; reorder = 1 gives it a
    # column, 2 cross.  Under direct every exchange sends one WAN message
    # per crossing pair from each site, under bundled one in all, the
    # same bytes, as the library's statistics count them.
    header = ("dims,periodic,reorder,sites,ranks,bytes,cut_pairs,median_us,"
              "p10_us,p90_us,algo")
    for reorder, cut in ((0, 3), (1, 2)):
        for algo, messages in (("direct", cut), ("bundled", 1)):
            rc, out, err = gridrun(["--site-sizes", "2,4"], [
                "env", "GRIDCOLL_STATS=1", HALO, "--dims", "2x3",
                "--reorder", str(reorder), "--bytes", "1k", "--algo", algo,
                "--csv"] + TINY)
            check(rc == 0, "gridcoll-halo exited %d:\n%s\n%s" % (rc, out,
                                                                   err))
            check(out.splitlines()[:1] == [header], "header:\n" + out)
            rows = list(csv.DictReader(io.StringIO(out)))
            check(len(rows) == 1, "rows:\n" + out)
            r = rows[0]
            check((r["dims"], r["reorder"], r["sites"], r["ranks"],
                   r["bytes"], r["cut_pairs"], r["algo"]) ==
                  ("2x3", str(reorder), "2", "6", "1024", str(cut), algo),
                  "row %s" % r)
            check(0 < float(r["p10_us"]) <= float(r["median_us"]) <=
                  float(r["p90_us"]), "row %s" % r)
            stats = re.findall(r"^gridcoll-stats: site=\w+ coll=neighbor "
                               r"algo=%s calls=(\d+) wan_bytes=(\d+) "
                               r"wan_messages=(\d+)$" % algo, err, re.M)
            # 1 warm-up and 3 timed exchanges.
            want = [("4", str(4 * cut * 1024), str(4 * messages))] * 2
            check(stats == want, "neighbor statistics %s, expected %s:\n%s"
                  % (stats, want, err))
    rc, out, err = gridrun(["--site-sizes", "2,4"], [HALO, "--dims", "2x2"])
    check(rc == 2 and "must be the number of ranks" in err,
          "--dims 2x2 on 6 ranks: exit %d:\n%s" % (rc, err))


def test_bcast_csv():
    check_csv("bcast", [8, 1024])


def test_alltoall_csv():
    check_csv("alltoall", [8, 1024])


def test_start_window_csv():
    # The ranks start together at a broadcast time on the shared clock:
    # the same rows, the same checks.
    check_csv("bcast", [8, 1024], ["--start", "window"])
    check_csv("alltoall", [8, 1024], ["--start", "window"])


def test_bad_start():
    rc, out, err = gridrun(LAYOUT, [BENCH, "bcast", "--start", "later"])
    check(rc == 2, "exit status %d, expected 2:\n%s\n%s" % (rc, out, err))
    check("--start: barrier or window" in err,
          "the error should name the valid --start values:\n" + err)
    check(HEADER not in out, "rows printed despite the error:\n" + out)


def test_barrier_one_row_per_algorithm():
    # Sizes mean nothing to a barrier: one row per algorithm, bytes 0.
    check_csv("barrier", [0])


def test_table():
    algos = algorithms()["allreduce"]
    out = run_bench(["allreduce", "--sizes", "8"] + TINY)
    lines = out.splitlines()
    check(lines and lines[0].split() == HEADER.split(","),
          "table header: %r" % lines[:1])
    check(len(lines) == 1 + len(algos) + 1, "table rows:\n" + out)
    widths = {len(l) for l in lines}
    check(len(widths) == 1, "table columns not aligned:\n" + out)


def test_unknown_algorithm():
    valid = list(algorithms()["bcast"]) + ["auto"]
    rc, out, err = gridrun(LAYOUT, [BENCH, "bcast", "--algos", "nonsense"])
    check(rc == 2, "exit status %d, expected 2:\n%s\n%s" % (rc, out, err))
    check("nonsense" in err and all(a in err for a in valid),
          "the error should name 'nonsense' and %s:\n%s" % (valid, err))
    check(HEADER not in out, "rows printed despite the error:\n" + out)


def spied_bcast_bench(env=None):
    """gridcoll-bench bcast under bcast_spy.so; (rc, stdout, stderr)."""
    return gridrun(LAYOUT, ["env", "LD_PRELOAD=" + BCAST_SPY, BENCH, "bcast",
                            "--sizes", "8,1k", "--algos",
                            "binomial,multilane,auto", "--csv"] + TINY,
                   env=env)


def test_algorithms_take_turns():
    # One warm-up and three timed calls each, every round all algorithms
    # in turn; the next size starts with the next algorithm.
    rc, out, err = spied_bcast_bench()
    check(rc == 0, "exit status %d:\n%s\n%s" % (rc, out, err))
    calls = re.findall(r"^bcast_spy: (\S+) (\d+)$", err, re.M)
    want = ([("binomial", "8"), ("multilane", "8"), ("auto", "8")] * 4 +
            [("multilane", "1024"), ("auto", "1024"),
             ("binomial", "1024")] * 4)
    check(calls == want, "calls %s, expected %s" % (calls, want))


def test_wrong_result():
    # bcast_spy.so flips byte 3 of the last rank's result while multilane
    # is forced: a FAIL line for multilane alone, no row for that size or
    # the next, the rank and byte on stderr, exit status 1.
    rc, out, err = spied_bcast_bench({"GRIDCOLL_TEST_WRONG_BCAST": "multilane"})
    check(rc == 1, "exit status %d, expected 1:\n%s\n%s" % (rc, out, err))
    lines = out.splitlines()
    fails = [l for l in lines if l.startswith("FAIL ")]
    rows = [l for l in lines if l.startswith("bcast,")]
    check(lines[:1] == [HEADER] and rows == [] and fails == [
        "FAIL coll=bcast algo=multilane bytes=8: wrong result (the ranks "
        "that saw it say where on stderr)"], "stdout:\n" + out)
    wrong = re.findall(r"^gridcoll-bench: rank (\d+): bcast algo=(\S+) "
                       r"bytes=8: byte (\d+) of the block from rank 0 is "
                       r"0x[0-9a-f]{2}, expected 0x[0-9a-f]{2}$", err, re.M)
    check(wrong == [("2", "multilane", "3")], "stderr:\n" + err)


def test_stream_omit():
    # Rank 0 streams for --omit + --seconds; the receiver counts what it
    # gets in the --seconds after --omit, and checks every byte (a bad
    # one: exit 1).
    start = time.monotonic()
    rc, out, err = gridrun(LAYOUT, [MPIBENCH, "stream", "--bytes", "64k",
                                    "--peer", "2", "--seconds", "1",
                                    "--omit", "1.5", "--csv"])
    wall = time.monotonic() - start
    check(rc == 0, "stream exited %d:\n%s\n%s" % (rc, out, err))
    rows = list(csv.DictReader(io.StringIO(out)))
    check(len(rows) == 1 and rows[0]["test"] == "stream" and
          rows[0]["pair"] == "cross", "rows: %r" % rows)
    messages = int(rows[0]["iters"])
    timed = messages * float(rows[0]["usec_per_op"]) / 1e6
    check(messages > 0 and abs(timed - 1) < 0.01,
          "%d messages timed over %.3f s, expected 1 s" % (messages, timed))
    check(wall >= 2.5, "the job took %.1f s, less than --omit + --seconds"
          % wall)
    rc, out, err = gridrun(LAYOUT, [MPIBENCH, "stream", "--omit", "-1"])
    check(rc == 2 and "--omit: 0 to 3600 seconds" in err,
          "--omit -1: exit %d, stderr %r" % (rc, err))


def test_proc_cpu():
    # A python3 that burns 0.6 s of CPU and starts a sleep: python3's time
    # within a sampling interval of it, the sleep's none, the shell that
    # ran the command line counted too; the command's exit status.
    path = os.path.join(tempfile.mkdtemp(prefix="proc-cpu-test-"), "cpu.csv")
    burn = ("import subprocess, sys, time\n"
            "t = time.process_time()\n"
            "while time.process_time() - t < 0.6: pass\n"
            "subprocess.run(['sleep', '0.3'])\n"
            "sys.exit(3)\n")
    r = subprocess.run([os.path.join(SOURCE_DIR, "bench", "proc_cpu.py"),
                        "--csv", path, "--", "sh", "-c",
                        'python3 -c "$0"; exit $?', burn],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=30)
    with open(path) as f:
        rows = {row["name"]: row for row in csv.DictReader(f)}
    shutil.rmtree(os.path.dirname(path))
    check(r.returncode == 3, "exit %d, expected 3: %s" % (r.returncode,
                                                          r.stderr))
    check(sorted(rows) == ["python3", "sh", "sleep"], "names %s" % rows)
    check(all(rows[n]["processes"] == "1" for n in rows), "counts %s" % rows)
    python = float(rows["python3"]["cpu_seconds"])
    check(0.5 <= python <= 0.8, "python3 took %.2f s, expected 0.6" % python)
    check(float(rows["sleep"]["cpu_seconds"]) < 0.05, "sleep: %s" % rows)


def test_help():
    rc, out, err = gridrun(["--sites", "1", "-n", "1"], [BENCH, "--help"])
    check(rc == 0, "--help exited %d:\n%s" % (rc, err))
    for word in ("--sizes", "--iters", "--warmup", "--algos", "--start",
                 "CLOCK_MONOTONIC", "--csv", "ialltoall", "ibarrier",
                 "--overlap", "--test-every", "MPI_Test", "1 - (total -",
                 "block of one pair", "whole buffer", HEADER):
        check(word in out, "--help does not mention %r:\n%s" % (word, out))


if __name__ == "__main__":
    main([(name[len("test_"):], fn) for name, fn in sorted(globals().items())
          if name.startswith("test_")])
