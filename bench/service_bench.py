#!/usr/bin/env python3
"""gridrelay services against per-job relays, over one emulated WAN.

Two namespace sites behind gridwan (tests/integration/test_service.py's
Services: TLS 1.3 links, K streams), with both kinds of relay side by side
in one run, taking turns round after round so background noise hits them
alike:

  startup   gridrun to every rank in main: `gridrun -n 4 --no-join-check
            -- sh -c 'date +%s.%N'` from gridrun's start to the last rank's
            clock; warm services (registration only) against per-job
            relays gridrun starts in the same namespaces (TLS, fresh
            links);
  latency   the first timed allreduce after start (gridcoll-mpibench
            allreduce --iters 1 --warmup 1 --start window: the job's second
            operation, timed from a common start, every rank on this
            host's clock), 8 B and 1 MiB, warm service links against fresh
            ones;
  pingpong  an 8-byte ping-pong job alone and beside two jobs streaming:
            what another job's bulk adds to a small message;
  share     aggregate link throughput with 1, 2 and 4 jobs streaming
            (one sender each, relay_tool, 4 MiB messages), each job's
            share and Jain's fairness index, against iperf3 with the same
            number of streams in the same run; and two jobs of 3 senders
            and 1 sender (what the link's deficit round robin evens out).

    bench/service_bench.py [--build build] [--rounds 3] [--delay 10ms]
                           [--rate 200mbit] [--streams 8]
                           [--service-config TEXT]
                           [--csv docs/performance/service.csv]

Needs root (namespaces); prints a Markdown report for
docs/performance/README.md.
"""

import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--delay", default="10ms")
    ap.add_argument("--rate", default="200mbit")
    ap.add_argument("--streams", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=4.0,
                    help="throughput sampling window")
    ap.add_argument("--service-config", default="",
                    help="more text for both services' configuration, "
                    "e.g. 'tcp = { notsent_lowat = 0; };'")
    ap.add_argument("--csv", default=None)
    return ap.parse_args()


ARGS = parse_args()
os.environ["GRIDCOLL_BUILD_DIR"] = os.path.abspath(ARGS.build)
import test_service as ts  # noqa: E402  (needs GRIDCOLL_BUILD_DIR first)
from harness import BIN, make_certs  # noqa: E402,F401

ROWS = []


def record(test, mode, value, unit, **extra):
    ROWS.append(dict(test=test, mode=mode, value="%.3f" % value, unit=unit,
                     **{k: str(v) for k, v in extra.items()}))


def med(xs):
    return statistics.median(xs)


def spread(xs):
    digits = 3 if max(xs) < 10 else 1
    return "%.*f .. %.*f" % (digits, min(xs), digits, max(xs))


# ---- per-job relays in the services' namespaces ---------------------------

NETNS_RSH = """#!/bin/sh
# gridrun's and hydra's ssh stand-in: the relay hosts gw-a and gw-b are
# the sites' namespaces; ranks run where gridrun does, as with the
# services (they reach their relay over its Unix socket).
while [ $# -gt 0 ]; do
    case $1 in -o|-l|-p|-i|-F) shift 2 ;; -*) shift ;; *) break ;; esac
done
host=$1; shift
case $host in
gw-a) exec ip netns exec %s sh -c "$*" ;;
gw-b) exec ip netns exec %s sh -c "$*" ;;
*) exec sh -c "$*" ;;
esac
"""


def per_job_files(svc):
    rsh = svc.path("netns-rsh.sh")
    with open(rsh, "w") as f:
        f.write(NETNS_RSH % (svc.ns["alpha"], svc.ns["beta"]))
    os.chmod(rsh, 0o755)
    mf = svc.path("perjob.machines")
    with open(mf, "w") as f:
        f.write("node-a cluster=alpha slots=2\n"
                "gw-a cluster=alpha relay wan=%s:7510 local=unix:%s\n"
                "node-b cluster=beta slots=2\n"
                "gw-b cluster=beta relay wan=%s:7510 local=unix:%s\n"
                % (svc.addr["alpha"], svc.path("pj-alpha.sock"),
                   svc.addr["beta"], svc.path("pj-beta.sock")))
    return rsh, mf


def gridrun_args(svc, mode, rsh, mf):
    """gridrun's options for a job through warm services or per-job
    relays (both run gridrun in alpha's namespace)."""
    base = ["ip", "netns", "exec", svc.ns["alpha"],
            os.path.join(BIN, "gridrun"), "--timeout", "120", "-n", "4"]
    if mode == "service":
        return base + ["-f", svc.machine_file("alice"), "--rsh", ts.FAKE_RSH,
                       "--service-cert", svc.path("users", "alice.crt"),
                       "--service-key", svc.path("users", "alice.key"),
                       "--service-ca", svc.path("wan", "ca.crt")]
    # gridrun's per-job relays have the default wan.streams (8): so do
    # the services unless --streams says otherwise.
    return base + ["-f", mf, "--rsh", rsh, "--tls-dir", svc.path("wan")]


def run(cmd, timeout=180):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=timeout)
    if r.returncode != 0:
        sys.exit("failed (%d): %s\n%s" % (r.returncode, " ".join(cmd),
                                          r.stdout[-3000:]))
    return r.stdout


def startup_s(svc, mode, rsh, mf):
    t0 = time.time()
    out = run(gridrun_args(svc, mode, rsh, mf) +
              ["--no-join-check", "--", "/bin/sh", "-c", "date +%s.%N"])
    stamps = [float(l) for l in out.split() if l[:1].isdigit() and "." in l]
    if len(stamps) != 4:
        sys.exit("startup: %r" % out)
    return max(stamps) - t0


def first_allreduce_us(svc, mode, rsh, mf, nbytes):
    out = run(gridrun_args(svc, mode, rsh, mf) +
              ["--", os.path.join(BIN, "gridcoll-mpibench"), "allreduce",
               "--bytes", str(nbytes), "--iters", "1", "--warmup", "1",
               "--start", "window", "--csv"])
    rows = [l.split(",") for l in out.splitlines()
            if l.startswith("allreduce,")]
    return float(rows[0][8])


# ---- link sharing -----------------------------------------------------------

def job_bytes(svc):
    return {j["job_id"]: j["peers"][0]["bytes_sent"]
            for j in svc.status("alpha")["jobs"]}


def start_streams(svc, senders):
    """Jobs streaming at once, job i with senders[i] sending ranks (alpha)
    to one reading rank at beta; (job ids, processes)."""
    jobs, procs = [], []
    base = 9000 + int(time.time()) % 1000 * 10
    for i, n in enumerate(senders):
        jid = base + i
        tok, tok_file = svc.token_file("s%d" % jid)
        sites = (("alpha", 0, n), ("beta", n, 1))
        svc.register(jid, tok, sites=sites)
        count = 400
        procs.append(svc.tool("beta", tok_file, jid, n, "recv", "--expect",
                              count * n))
        for r in range(n):
            procs.append(svc.tool("alpha", tok_file, jid, r, "send", "--to",
                                  n, "--sizes", ",".join(["4M"] * count)))
        jobs.append(jid)
    return jobs, procs


def stop_streams(svc, jobs, procs):
    for p in procs:
        p.kill()
        p.wait()
    for jid in jobs:
        svc.control("alpha", "DELETE", "/jobs/%d" % jid)


def share_run(svc, senders):
    """(aggregate MB/s, per-job MB/s) of start_streams' jobs."""
    jobs, procs = start_streams(svc, senders)
    time.sleep(1.5)  # past slow start
    a = job_bytes(svc)
    t = time.time()
    time.sleep(ARGS.seconds)
    b = job_bytes(svc)
    dt = time.time() - t
    stop_streams(svc, jobs, procs)
    rates = [(b[j] - a[j]) / dt / 1e6 for j in jobs]
    return sum(rates), rates


def pingpong_us(svc, beside_bulk):
    """An 8-byte ping-pong job's median half round trip, alone or while two
    other jobs stream."""
    bulk = start_streams(svc, (1, 1)) if beside_bulk else None
    if bulk:
        time.sleep(1.5)
    try:
        out = run(gridrun_args(svc, "service", None, None) +
                  ["--", os.path.join(BIN, "gridcoll-mpibench"), "pingpong",
                   "--peer", "2", "--bytes", "8", "--iters", "200", "--csv"])
    finally:
        if bulk:
            stop_streams(svc, *bulk)
    rows = [l.split(",") for l in out.splitlines()
            if l.startswith("pingpong,")]
    return float(rows[0][9])


def jain(xs):
    return sum(xs) ** 2 / (len(xs) * sum(x * x for x in xs)) if any(xs) else 0


def iperf3_mbs(svc):
    server = subprocess.Popen(["ip", "netns", "exec", svc.ns["beta"],
                               "iperf3", "-s", "-1", "-B", svc.addr["beta"]],
                              stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    time.sleep(0.3)
    try:
        out = run(["ip", "netns", "exec", svc.ns["alpha"], "iperf3", "-c",
                   svc.addr["beta"], "-P", str(ARGS.streams), "-t",
                   str(ARGS.seconds + 1.5), "-O", "1.5", "-J"])
    finally:
        server.wait(timeout=30)
    return json.loads(out)["end"]["sum_received"]["bits_per_second"] / 8e6


# ---- the report ---------------------------------------------------------------

def main():
    results = {}

    def add(key, value):
        results.setdefault(key, []).append(value)

    with ts.Services(delay=ARGS.delay, rate=ARGS.rate, streams=ARGS.streams,
                     chunk=256 << 10, job_memory=256 << 20,
                     extra=ARGS.service_config) as svc:
        rsh, mf = per_job_files(svc)
        for rnd in range(ARGS.rounds):
            for mode in ("service", "per-job"):
                add(("startup", mode), startup_s(svc, mode, rsh, mf))
                for nbytes in (8, 1 << 20):
                    add(("allreduce", mode, nbytes),
                        first_allreduce_us(svc, mode, rsh, mf, nbytes))
            add(("iperf3",), iperf3_mbs(svc))
            for senders in ((1,), (1, 1), (1, 1, 1, 1), (3, 1)):
                total, rates = share_run(svc, senders)
                add(("share", senders), (total, rates))
            for beside in (False, True):
                add(("pingpong", beside), pingpong_us(svc, beside))
            print("round %d/%d done" % (rnd + 1, ARGS.rounds), flush=True)

    print("\nWAN: gridwan %s one way, %s; %d TLS streams per link; medians of "
          "%d rounds (min .. max)\n" % (ARGS.delay, ARGS.rate, ARGS.streams,
                                       ARGS.rounds))
    print("| measurement | warm service | per-job relays | ratio |")
    print("|---|---:|---:|---:|")
    s, p = results[("startup", "service")], results[("startup", "per-job")]
    print("| start-up, gridrun to all ranks in main (s) | %.2f (%s) | %.2f "
          "(%s) | %.2f |" % (med(s), spread(s), med(p), spread(p),
                             med(p) / med(s)))
    record("startup", "service", med(s), "s")
    record("startup", "per-job", med(p), "s")
    for nbytes in (8, 1 << 20):
        s = results[("allreduce", "service", nbytes)]
        p = results[("allreduce", "per-job", nbytes)]
        print("| first allreduce after start, %s (us) | %.0f (%s) | %.0f (%s) "
              "| %.2f |" % ("8 B" if nbytes == 8 else "1 MiB", med(s),
                            spread(s), med(p), spread(p), med(p) / med(s)))
        record("allreduce_first", "service", med(s), "us", bytes=nbytes)
        record("allreduce_first", "per-job", med(p), "us", bytes=nbytes)

    ip = results[("iperf3",)]
    print("\n| jobs streaming (senders each) | aggregate MB/s | / iperf3 -P %d "
          "| each job's share | Jain index |" % ARGS.streams)
    print("|---|---:|---:|---|---:|")
    print("| iperf3 -P %d (baseline) | %.1f (%s) | 1 | | |"
          % (ARGS.streams, med(ip), spread(ip)))
    record("iperf3", "P%d" % ARGS.streams, med(ip), "MB/s")
    for senders in ((1,), (1, 1), (1, 1, 1, 1), (3, 1)):
        runs = results[("share", senders)]
        totals = [t for t, _ in runs]
        shares = [[r / t for r in rates] for t, rates in runs]
        per_job = [med([sh[i] for sh in shares]) for i in range(len(senders))]
        index = med([jain(rates) for _, rates in runs])
        label = "%d (%s)" % (len(senders), ",".join(map(str, senders)))
        print("| %s | %.1f (%s) | %.2f | %s | %.3f |"
              % (label, med(totals), spread(totals), med(totals) / med(ip),
                 " / ".join("%.2f" % x for x in per_job), index))
        record("share", label, med(totals), "MB/s", jain="%.3f" % index,
               shares="/".join("%.3f" % x for x in per_job),
               iperf3_ratio="%.3f" % (med(totals) / med(ip)))

    solo, loaded = results[("pingpong", False)], results[("pingpong", True)]
    chunk_ms = (256 << 10) / (med(ip) * 1e6) * 1e3
    print("\n| 8-byte ping-pong, half round trip | alone | beside 2 streaming "
          "jobs | added | one chunk at the link's rate |")
    print("|---|---:|---:|---:|---:|")
    print("| (us) | %.0f (%s) | %.0f (%s) | %.0f | %.0f |"
          % (med(solo), spread(solo), med(loaded), spread(loaded),
             med(loaded) - med(solo), chunk_ms * 1e3))
    record("pingpong", "alone", med(solo), "us")
    record("pingpong", "beside_bulk", med(loaded), "us")

    if ARGS.csv:
        keys = sorted({k for r in ROWS for k in r})
        with open(ARGS.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=keys)
            w.writeheader()
            w.writerows(ROWS)


if __name__ == "__main__":
    if os.geteuid() != 0:
        sys.exit("service_bench.py needs root (network namespaces)")
    tempfile.tempdir = None
    main()
