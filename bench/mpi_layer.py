#!/usr/bin/env python3
"""GridColl's MPI layer against plain MPICH, side by side in one run (issue 3).

(a) Pass-through on one site: MPI_Allreduce of 8 B and MPI_Alltoall of
    64 KiB per pair on 4 ranks, `mpiexec -n 4 gridcoll-mpibench-plain`
    (MPICH alone, no interposition) against `gridrun --sites 1 -n 4 --
    gridcoll-mpibench` (libgridcoll linked, relay running), back to back,
    which one goes first alternating from round to round.
(a2) The same on 2 ranks, where the machine's 2 cores are not
    oversubscribed, as a supplement that resolves much smaller
    differences; with a third configuration, `mpiexec -n 2
    gridcoll-mpibench` (libgridcoll linked, no gridrun environment), to
    tell the library from the launcher.  Order: plain, gridrun, library in
    odd rounds, the reverse in even ones.
(b) Two sites on loopback: ping-pong (8 B, 4 MiB, 64 MiB) between rank 0
    and rank 2 (other site) and rank 0 and rank 1 (same site) under
    `gridrun --site-sizes 2,2`; the same-site pair under plain mpiexec; the
    cross-site pair with TLS between the relays (gridrun's machine-file
    mode: local mode's WAN streams are plaintext); and the relay path alone
    (gridrelay-bench --latency, plaintext and TLS), which is what a
    cross-site message rides on.  The configurations take turns, the first
    one moving on by one every round.

Every raw sample goes to the CSV; the summary gives medians, the spread
(min .. max) and ratios computed round by round (each round's pair ran
back to back), then their median.  CSV columns: part (a, a2, b), test,
configuration, bytes, round, position (place in the round), iters,
usec_per_op, usec_median, MBps (gridcoll-mpibench's own columns; for the
relay path alone one-way = gridrelay-bench's median round trip / 2),
load1 (1-minute load average as the run started), idle (idle fraction of
the CPUs in the 0.5 s before the round: other jobs on the machine) and
seconds (wall time of the run, start-up included).

    bench/mpi_layer.py [--build build] [--rounds 7] [--quick] [--idle-wait 15]
                       [--csv docs/performance/mpi-layer.csv] [--report-only]

--report-only prints the summary of the samples already in the CSV.
"""

import argparse
import csv
import io
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Iteration counts: a run of the timed loop takes about 1-2 s on the
# reference machine (2 cores; 4 busy-polling ranks are oversubscribed and a
# collective then costs several scheduler ticks of 4 ms).
FULL = {
    "allreduce4": (250, 20),         # ~5 ms per call
    "alltoall4": (80, 5),            # ~16 ms per call
    "allreduce2": (200000, 1000),    # ~0.3-0.8 us per call
    "alltoall2": (10000, 100),       # ~7-10 us per call
    "cross": ("2000,40,4", "100,2,1"),       # ~40 us, ~10 ms, ~150 ms
    "same": ("100000,200,20", "1000,10,2"),  # ~0.1-5 us, ~0.5 ms, ~10 ms
}
QUICK = {
    "allreduce4": (60, 5),
    "alltoall4": (20, 2),
    "allreduce2": (100000, 100),
    "alltoall2": (4000, 20),
    "cross": ("400,10,2", "20,1,1"),
    "same": ("20000,40,4", "100,2,1"),
}
PP_SIZES = [8, 4 << 20, 64 << 20]

FAKE_RSH = """#!/bin/sh
# ssh stand-in: "rsh [-FLAG...] HOST CMD..." runs CMD here, whatever HOST.
while [ $# -gt 0 ]; do
    case $1 in
    -o | -l | -p | -i | -F) shift 2 ;;
    -*) shift ;;
    *) break ;;
    esac
done
shift
exec sh -c "$*"
"""


def run(cmd, timeout=150):
    try:
        out = subprocess.run(cmd, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True,
                             timeout=timeout)
    except subprocess.TimeoutExpired:
        sys.exit("command timed out after %d s: %s" % (timeout, " ".join(cmd)))
    if out.returncode != 0:
        sys.exit("command failed (exit %d): %s\n%s%s" % (
            out.returncode, " ".join(cmd), out.stdout, out.stderr))
    return out.stdout


def mpibench_rows(cmd, expect):
    """Run gridcoll-mpibench --csv; return its rows (dicts), checked."""
    text = run(cmd)
    lines = text.splitlines()
    try:
        start = next(i for i, l in enumerate(lines) if l.startswith("test,"))
    except StopIteration:
        sys.exit("no CSV header in the output of %s:\n%s" % (" ".join(cmd),
                                                            text))
    rows = [r for r in csv.DictReader(io.StringIO("\n".join(lines[start:])))
            if r["test"] in ("allreduce", "alltoall", "pingpong")]
    if not rows:
        sys.exit("no measurement in the output of %s:\n%s" % (
            " ".join(cmd), text))
    for r in rows:
        for key, want in expect.items():
            if r[key] != str(want):
                sys.exit("%s: expected %s=%s, got %s\n%s" % (
                    " ".join(cmd), key, want, r[key], text))
    return rows


def relay_rows(bench, sizes, rounds, tls):
    """gridrelay-bench --latency per size: one-way = median RTT / 2."""
    rows = []
    for size, n in zip(sizes, rounds.split(",")):
        cmd = [bench, "--latency", "--msg-size", str(size), "--rounds", n,
               "--csv"]
        if not tls:
            cmd.insert(1, "--plaintext")
        rec = list(csv.DictReader(io.StringIO(run(cmd))))[-1]
        if rec["verified"] != "yes":
            sys.exit("%s: not verified" % " ".join(cmd))
        one_way = float(rec["rtt_us_median"]) / 2
        rows.append({"bytes": str(size), "iters": n, "usec_per_op": "",
                     "usec_median": "%.3f" % one_way,
                     "MBps": "%.1f" % (size / one_way)})
    return rows


def cpu_idle(seconds):
    """Fraction of the machine's CPU time spent idle over `seconds`."""
    def sample():
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        return v[3] + v[4], sum(v)
    idle0, total0 = sample()
    time.sleep(seconds)
    idle1, total1 = sample()
    return (idle1 - idle0) / max(1, total1 - total0)


def wait_idle(limit):
    """Wait (at most `limit` s) for a quiet machine; return the idle
    fraction of the last 0.5 s looked at."""
    deadline = time.monotonic() + limit
    while True:
        idle = cpu_idle(0.5)
        if idle >= 0.9 or time.monotonic() >= deadline:
            return idle


def free_ports(count):
    """`count` distinct loopback ports, free now (all stay bound until every
    one is chosen, so the kernel cannot hand out one twice)."""
    socks = [socket.socket() for _ in range(count)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--idle-wait", type=float, default=15, metavar="S",
                    help="before each round, wait up to S s for the CPUs to "
                    "be 90%% idle (other jobs on the machine)")
    ap.add_argument("--quick", action="store_true",
                    help="fewer iterations (and 2 rounds unless --rounds)")
    ap.add_argument("--csv", default=os.path.join(
        SRC, "docs", "performance", "mpi-layer.csv"))
    ap.add_argument("--report-only", action="store_true",
                    help="measure nothing: summarize the samples in --csv")
    args = ap.parse_args()
    if args.quick and "--rounds" not in sys.argv:
        args.rounds = 2
    it = QUICK if args.quick else FULL
    bin_dir = os.path.abspath(os.path.join(args.build, "bin"))
    gridrun = os.path.join(bin_dir, "gridrun")
    grid = os.path.join(bin_dir, "gridcoll-mpibench")
    plain = os.path.join(bin_dir, "gridcoll-mpibench-plain")
    rbench = os.path.join(bin_dir, "gridrelay-bench")
    for f in (gridrun, grid, plain, rbench):
        if not args.report_only and not os.access(f, os.X_OK):
            sys.exit("%s not found: build first (ninja -C %s)" % (f,
                                                                 args.build))
    mpiexec = os.environ.get("GRIDCOLL_MPIEXEC", "mpiexec")
    tmp = tempfile.mkdtemp(prefix="mpi-layer-")
    if not args.report_only:
        subprocess.run([os.path.join(SRC, "conf", "tls", "make-certs.sh"),
                        os.path.join(tmp, "tls"), "alpha", "beta"],
                       check=True, stdout=subprocess.DEVNULL)
    rsh = os.path.join(tmp, "rsh.sh")
    with open(rsh, "w") as f:
        f.write(FAKE_RSH)
    os.chmod(rsh, 0o755)

    def tls_gridrun():
        machines = os.path.join(tmp, "two-sites.machines")
        with open(machines, "w") as f:
            f.write("gwA cluster=alpha relay slots=2 wan=127.0.0.1:%d\n"
                    "gwB cluster=beta relay slots=2 wan=127.0.0.1:%d\n"
                    % tuple(free_ports(2)))
        return [gridrun, "-f", machines, "-n", "4", "--tls-dir",
                os.path.join(tmp, "tls"), "--rsh", rsh, "--timeout", "120",
                "--"]

    def coll(test, nbytes, ranks, key):
        iters, warm = it[key]
        opts = [test, "--bytes", str(nbytes), "--iters", str(iters),
                "--warmup", str(warm), "--csv"]
        configs = {
            "plain mpiexec":
                lambda: mpibench_rows([mpiexec, "-n", str(ranks), plain]
                                      + opts, {"lib": "plain"}),
            "gridrun --sites 1":
                lambda: mpibench_rows([gridrun, "--sites", "1", "-n",
                                       str(ranks), "--timeout", "120", "--",
                                       grid] + opts,
                                      {"lib": "gridcoll", "sites": 1}),
        }
        if ranks == 2:
            # Cheap here, and fine enough to tell the library from gridrun.
            configs["libgridcoll, plain mpiexec"] = (
                lambda: mpibench_rows([mpiexec, "-n", str(ranks), grid]
                                      + opts, {"lib": "gridcoll"}))
        return configs

    sizes = ",".join(str(s) for s in PP_SIZES)

    def pp(peer, key):
        iters, warm = it[key]
        return ["pingpong", "--peer", str(peer), "--bytes", sizes,
                "--iters", iters, "--warmup", warm, "--csv"]

    two_sites = [gridrun, "--site-sizes", "2,2", "--timeout", "120", "--",
                 grid]
    # (part, test label) -> {configuration: measure() -> rows}
    parts = [
        ("a", "allreduce 8 B, 4 ranks", coll("allreduce", 8, 4,
                                              "allreduce4")),
        ("a", "alltoall 64 KiB, 4 ranks", coll("alltoall", 65536, 4,
                                                "alltoall4")),
        ("a2", "allreduce 8 B, 2 ranks", coll("allreduce", 8, 2,
                                               "allreduce2")),
        ("a2", "alltoall 64 KiB, 2 ranks", coll("alltoall", 65536, 2,
                                                 "alltoall2")),
        ("b", "pingpong", {
            "cross-site, plaintext WAN":
                lambda: mpibench_rows(two_sites + pp(2, "cross"),
                                      {"sites": 2, "pair": "cross"}),
            "cross-site, TLS WAN":
                lambda: mpibench_rows(tls_gridrun() + [grid] + pp(2, "cross"),
                                      {"sites": 2, "pair": "cross"}),
            "same site, gridrun 2 sites":
                lambda: mpibench_rows(two_sites + pp(1, "same"),
                                      {"sites": 2, "pair": "same"}),
            "same site, plain mpiexec":
                lambda: mpibench_rows([mpiexec, "-n", "4", plain]
                                      + pp(1, "same"), {"lib": "plain"}),
            "relay path alone, plaintext":
                lambda: relay_rows(rbench, PP_SIZES, it["cross"][0], False),
            "relay path alone, TLS":
                lambda: relay_rows(rbench, PP_SIZES, it["cross"][0], True),
        }),
    ]

    samples = []  # dicts: part, test, configuration, bytes, round, ...
    began = time.monotonic()
    if args.report_only:
        with open(args.csv, newline="") as f:
            samples = [dict(row, bytes=int(row["bytes"]),
                            round=int(row["round"]))
                       for row in csv.DictReader(f)]
        args.rounds = max(s["round"] for s in samples)
    try:
        for r in range(0 if args.report_only else args.rounds):
            idle = wait_idle(args.idle_wait)
            for part, test, configs in parts:
                names = list(configs)
                if part == "b":
                    shift = r % len(names)
                    names = names[shift:] + names[:shift]
                elif r % 2:
                    # plain and gridrun stay back to back, the first of
                    # them alternating.
                    names.reverse()
                for pos, name in enumerate(names):
                    load = os.getloadavg()[0]
                    t0 = time.monotonic()
                    rows = configs[name]()
                    seconds = time.monotonic() - t0
                    for row in rows:
                        samples.append({
                            "part": part, "test": test,
                            "configuration": name, "bytes": int(row["bytes"]),
                            "round": r + 1, "position": pos + 1,
                            "iters": row["iters"],
                            "usec_per_op": row["usec_per_op"],
                            "usec_median": row["usec_median"],
                            "MBps": row["MBps"], "load1": "%.2f" % load,
                            "idle": "%.2f" % idle,
                            "seconds": "%.2f" % seconds})
            print("round %d/%d done (%.0f s)" % (
                r + 1, args.rounds, time.monotonic() - began),
                file=sys.stderr)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    fields = ["part", "test", "configuration", "bytes", "round", "position",
              "iters", "usec_per_op", "usec_median", "MBps", "load1",
              "idle", "seconds"]
    if not args.report_only:
        os.makedirs(os.path.dirname(args.csv) or ".", exist_ok=True)
        with open(args.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=fields)
            w.writeheader()
            w.writerows(samples)

    def series(test, name, nbytes, field):
        by_round = {s["round"]: float(s[field]) for s in samples
                    if s["test"] == test and s["configuration"] == name
                    and s["bytes"] == nbytes}
        return [by_round[r] for r in sorted(by_round)]

    def spread(v, fmt="%.1f"):
        return (fmt + " | " + fmt + " .. " + fmt) % (
            statistics.median(v), min(v), max(v))

    def ratio_cell(a, b):
        per = [x / y for x, y in zip(a, b)]
        return "%.3f | %.3f (%.3f .. %.3f)" % (
            statistics.median(a) / statistics.median(b),
            statistics.median(per), min(per), max(per))

    print("\n(a) pass-through on one site, us per call "
          "(timed loop / iterations, slowest rank)\n")
    print("| test | configuration | median | min .. max |")
    print("|---|---|---:|---:|")
    for part, test, configs in parts:
        if part not in ("a", "a2"):
            continue
        nbytes = 8 if test.startswith("allreduce") else 65536
        for name in configs:
            print("| %s | %s | %s |" % (test, name, spread(
                series(test, name, nbytes, "usec_per_op"),
                "%.0f" if part == "a" else "%.3f")))
    print("\n| X / plain mpiexec | from medians | per round: median "
          "(min .. max) |")
    print("|---|---:|---:|")
    for part, test, configs in parts:
        if part not in ("a", "a2"):
            continue
        nbytes = 8 if test.startswith("allreduce") else 65536
        # With 4 ranks on 2 cores a call takes whole scheduler ticks: the
        # median call is quantized to them, only the mean means something.
        for field, what in ((("usec_per_op", "mean"),) if part == "a" else
                            (("usec_per_op", "mean"),
                             ("usec_median", "median call"))):
            p = series(test, "plain mpiexec", nbytes, field)
            for name, short in (("gridrun --sites 1", "gridrun"),
                                ("libgridcoll, plain mpiexec",
                                 "libgridcoll under mpiexec")):
                if name not in configs:
                    continue
                print("| %s, %s, %s | %s |" % (
                    test, short, what,
                    ratio_cell(series(test, name, nbytes, field), p)))

    print("\n(b) ping-pong, one-way time = half the median round trip; "
          "8 B: us, 4 MiB and 64 MiB: MB/s\n")
    print("| configuration | size | median | min .. max |")
    print("|---|---|---:|---:|")
    configs = parts[-1][2]
    label = {8: "8 B", 4 << 20: "4 MiB", 64 << 20: "64 MiB"}
    for name in configs:
        for nbytes in PP_SIZES:
            field = "usec_median" if nbytes == 8 else "MBps"
            if nbytes != 8:
                v = [nbytes / x for x in series("pingpong", name, nbytes,
                                                "usec_median")]
            else:
                v = series("pingpong", name, nbytes, field)
            print("| %s | %s | %s |" % (name, label[nbytes], spread(
                v, "%.2f" if nbytes == 8 else "%.1f")))
    print("\n| time ratio (one-way) | size | from medians | per round: "
          "median (min .. max) |")
    print("|---|---|---:|---:|")
    pairs = [("cross-site, plaintext WAN", "same site, gridrun 2 sites"),
             ("same site, gridrun 2 sites", "same site, plain mpiexec"),
             ("cross-site, plaintext WAN", "relay path alone, plaintext"),
             ("cross-site, TLS WAN", "relay path alone, TLS"),
             ("cross-site, TLS WAN", "cross-site, plaintext WAN")]
    for a, b in pairs:
        for nbytes in PP_SIZES:
            print("| %s / %s | %s | %s |" % (a, b, label[nbytes], ratio_cell(
                series("pingpong", a, nbytes, "usec_median"),
                series("pingpong", b, nbytes, "usec_median"))))
    for a, b in pairs[2:4]:
        d = [x - y for x, y in zip(series("pingpong", a, 8, "usec_median"),
                                   series("pingpong", b, 8, "usec_median"))]
        print("\n- 8 B, one-way, %s minus %s: %.1f us per round: median "
              "(%.1f .. %.1f)" % (a, b, statistics.median(d), min(d),
                                  max(d)), end="")
    print("\n\nload average (1 min) during the runs: median %.2f, max %.2f; "
          "CPUs idle before a round: median %.2f, min %.2f; %d rounds in "
          "%.0f s; raw samples in %s" % (
              statistics.median(float(s["load1"]) for s in samples),
              max(float(s["load1"]) for s in samples),
              statistics.median(float(s["idle"]) for s in samples),
              min(float(s["idle"]) for s in samples), args.rounds,
              time.monotonic() - began, args.csv))


if __name__ == "__main__":
    main()
