#!/usr/bin/env python3
"""bench/tcp_burst.py (its own test, below), and bench/run-wan.sh --quick
(alltoall and barrier only, to stay within a minute): it exits 0 and
writes well-formed output: the relay CSV with the default-config row and
numbers in it; the collectives CSV with a row for every algorithm
gridcoll-info lists (plus auto) and the native baseline, for every size,
with its WAN bound; the back-to-back barrier CSV with a GridColl, a native
and a local row (the WAN ones at least the delay); the targets CSV with
every issue-5 target and a result; the markdown report with its sections;
the PNG plots; the loss seeds of --seed named in the report, and a
--seed that is no number refused before anything runs.  Needs root,
/dev/net/tun, iperf3 and gnuplot (skipped otherwise: the script would
install gnuplot-nox itself, which a test must not)."""

import csv
import io
import os
import shutil
import subprocess
import tempfile

from harness import BIN, BUILD_DIR, SOURCE_DIR, check, main, need_wan_devices

SCRIPT = os.path.join(SOURCE_DIR, "bench", "run-wan.sh")
COLLS = ["alltoall", "barrier"]
TARGETS = ["relay link, default config (", "relay / iperf3",
           "relay link, default config with TLS", "relay with TLS / iperf3",
           "alltoall 64 KiB/pair 4+4: native / lg",
           "alltoall 64 KiB/pair 4+4: lg / bound",
           "barrier 2+2, back to back / (L + local barrier)", "model:",
           "auto / best forced"]


def need():
    need_wan_devices((("iperf3", "iperf3"), ("gnuplot", "gnuplot-nox"),
                      ("ip", "iproute2")))


def algorithms(coll):
    r = subprocess.run([os.path.join(BIN, "gridcoll-info"), "--algorithms",
                        "--csv"], stdout=subprocess.PIPE, text=True,
                       check=True, timeout=30)
    return [row["algo"] for row in csv.DictReader(io.StringIO(r.stdout))
            if row["coll"] == coll and row["level"] == "grid"]


def rows(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def number(text):
    try:
        float(text)
        return True
    except ValueError:
        return False


def tcp_burst():
    """bench/tcp_burst.py, the report's plain-TCP baseline, between two
    namespace sites 5 ms apart: one CSV row per timed burst, in order, with
    the sizes asked for (100 B and 64 KiB + 1 split unevenly over 3
    connections: the server reads exactly each connection's share), each
    at least the one-way delay and well below a second."""
    need_wan_devices((("ip", "iproute2"),))
    out = tempfile.mkdtemp(prefix="tcp-burst-test-")
    try:
        path = os.path.join(out, "burst.csv")
        r = subprocess.run(
            [os.path.join(BIN, "gridrun"), "--timeout", "60", "--site-sizes",
             "1,1", "--wan", "delay=5ms", "--no-join-check", "--",
             os.path.join(SOURCE_DIR, "bench", "tcp_burst.py"), "pair",
             "--csv", path, "--streams", "3", "--bytes", "100,65537",
             "--rounds", "3", "--warmup", "1"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            timeout=90)
        check(r.returncode == 0, "exit %d:\n%s" % (r.returncode, r.stderr))
        got = rows(path)
        check([(x["streams"], x["bytes"], x["round"]) for x in got] ==
              [("3", b, str(n)) for b in ("100", "65537") for n in range(3)],
              "rows: %r" % got)
        for x in got:
            check(0.005 <= float(x["seconds"]) < 1.0,
                  "a burst of %s B took %s s" % (x["bytes"], x["seconds"]))
    finally:
        shutil.rmtree(out, ignore_errors=True)


def quick():
    need()
    out = tempfile.mkdtemp(prefix="run-wan-test-")
    try:
        r = subprocess.run(["bash", SCRIPT, "--quick", "--build", BUILD_DIR,
                            "--out", out, "--colls", ",".join(COLLS),
                            "--budget", "150", "--seed", "42"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, timeout=240)
        check(r.returncode == 0, "run-wan.sh --quick exited %d:\n%s\n%s" %
              (r.returncode, r.stdout, r.stderr))
        relay = rows(os.path.join(out, "wan-quick-relay.csv"))
        check([x["config"] for x in relay] == ["default"],
              "relay rows: %r" % relay)
        for col in ("relay_Mbit", "iperf3_Mbit", "relay_over_iperf3",
                    "gridwan_cpu_s_per_GB", "ranks_cores", "relays_cores"):
            check(number(relay[0][col]) and float(relay[0][col]) > 0,
                  "relay %s: %r" % (col, relay[0][col]))

        coll = rows(os.path.join(out, "wan-quick-coll.csv"))
        got = sorted((x["coll"], x["lib"], x["algo"], x["bytes"])
                     for x in coll)
        want = []
        for c in COLLS:
            sizes = ["0"] if c == "barrier" else ["8", "65536"]
            for b in sizes:
                want += [(c, "gridcoll", a, b) for a in algorithms(c)]
                want += [(c, "gridcoll", "auto", b), (c, "native", "native",
                                                        b)]
        check(got == sorted(want), "collective rows:\n%s\nwant\n%s" %
              (got, sorted(want)))
        for x in coll:
            check(x["layout"] == "2+2" and x["ranks"] == "4", "row %r" % x)
            check(number(x["bound_us"]) and float(x["bound_us"]) >= 20000,
                  "bound of %r" % x)
            if x["median_us"] != "n/a":
                check(number(x["median_us"]) and
                      number(x["bound_over_median"]), "numbers of %r" % x)

        barrier = rows(os.path.join(out, "wan-quick-barrier.csv"))
        check(sorted(r["lib"] for r in barrier) ==
              ["gridcoll", "local", "native"] and
              all(number(r["usec_per_op"]) and r["iters"] == "50"
                  for r in barrier),
              "back-to-back barrier rows: %r" % barrier)
        # Over a 20 ms one-way delay no WAN barrier takes less than it.
        check(all(float(r["usec_per_op"]) >= 20000 for r in barrier
                  if r["lib"] != "local"), "barrier below L: %r" % barrier)

        targets = rows(os.path.join(out, "wan-quick-targets.csv"))
        for name in TARGETS:
            hit = [t for t in targets if t["target"].startswith(name)]
            check(len(hit) == 1 and hit[0]["result"] in
                  ("pass", "fail", "not measured"),
                  "target %r: %r" % (name, hit))
        barrier = [t for t in targets if t["target"].startswith("barrier")]
        check(barrier[0]["result"] != "not measured",
              "barrier target not measured: %r" % barrier)

        with open(os.path.join(out, "wan-quick-report.md")) as f:
            md = f.read()
        for heading in ("## Targets (issue 5)", "## Relay link against "
                        "iperf3", "### alltoall", "### barrier",
                        "load before:", "load after:",
                        "its own seed, 42 plus the job's number"):
            check(heading in md, "report lacks %r" % heading)
        # --quick has no relay sweep, so no relay plot.
        for png in ("wan-quick-coll-alltoall.png",
                    "wan-quick-coll-barrier.png"):
            with open(os.path.join(out, png), "rb") as f:
                check(f.read(8) == b"\x89PNG\r\n\x1a\n", "%s is no PNG" % png)
    finally:
        shutil.rmtree(out, ignore_errors=True)


def bad_seed():
    r = subprocess.run(["bash", SCRIPT, "--seed", "soon"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=30)
    check(r.returncode == 2 and "--seed want a positive number" in r.stderr,
          "--seed soon: exit %d, %r" % (r.returncode, r.stderr))


if __name__ == "__main__":
    main([("tcp_burst", tcp_burst), ("quick", quick), ("bad_seed", bad_seed)])
