#!/usr/bin/env python3
"""Relay path vs the kernel's own loopback TCP, side by side in one run.

Throughput: gridrelay-bench (two relays started by the bench, 4 MiB
messages, K streams, plaintext and TLS) against single-stream iperf3 on
loopback.  Latency: a small message's round trip through both relays
against a direct TCP round trip (gridcoll-tcp-rtt).  The configurations
take turns, round after round, so background noise hits them alike; the
report gives the median and the spread (min..max) of every configuration
and the ratios of the medians.

    bench/relay_loopback.py [--build build] [--rounds 5] [--bytes 2G]
                            [--csv docs/performance/relay-loopback.csv]
"""

import argparse
import csv
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import time


def run(cmd, timeout=300):
    out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True, timeout=timeout)
    if out.returncode != 0:
        sys.exit("command failed: %s\n%s" % (" ".join(cmd), out.stdout))
    return out.stdout


def field(text, name):
    m = re.search(r"\b%s=([0-9.]+)" % name, text)
    if not m:
        sys.exit("no %s= in output:\n%s" % (name, text))
    return float(m.group(1))


def iperf3_mbps(port, nbytes):
    out = run(["iperf3", "-c", "127.0.0.1", "-p", str(port), "-n", str(nbytes),
               "-P", "1", "-J"])
    bits = json.loads(out)["end"]["sum_received"]["bits_per_second"]
    return bits / 8 / 1e6


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--bytes", default="2G")
    ap.add_argument("--streams", type=int, default=4)
    ap.add_argument("--csv", default="docs/performance/relay-loopback.csv")
    args = ap.parse_args()
    bin_dir = os.path.join(args.build, "bin")
    bench = os.path.join(bin_dir, "gridrelay-bench")
    rtt = os.path.join(bin_dir, "gridcoll-tcp-rtt")
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    nbytes = (int(args.bytes[:-1]) * scale[args.bytes[-1].upper()]
              if args.bytes[-1].upper() in scale else int(args.bytes))

    port = 5201 + os.getpid() % 1000
    server = subprocess.Popen(["iperf3", "-s", "-p", str(port)],
                              stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    configs = {
        "iperf3 loopback, 1 stream (MB/s)":
            lambda: iperf3_mbps(port, nbytes),
        "relay plaintext, K=%d, 4 MiB msgs (MB/s)" % args.streams:
            lambda: field(run([bench, "--plaintext", "--streams",
                               str(args.streams), "--msg-size", "4M",
                               "--bytes", args.bytes]), "MBps"),
        "relay TLS 1.3, K=%d, 4 MiB msgs (MB/s)" % args.streams:
            lambda: field(run([bench, "--streams", str(args.streams),
                               "--msg-size", "4M", "--bytes", args.bytes]),
                          "MBps"),
        "direct TCP round trip, 8 B (us)":
            lambda: field(run([rtt, "--size", "8", "--iters", "2000"]),
                          "rtt_us_median"),
        "relay round trip, 8 B, plaintext (us)":
            lambda: field(run([bench, "--plaintext", "--latency",
                               "--msg-size", "8"]), "rtt_us_median"),
    }
    samples = {name: [] for name in configs}
    try:
        for r in range(args.rounds):
            for name, measure in configs.items():
                samples[name].append(measure())
            print("round %d/%d done" % (r + 1, args.rounds), file=sys.stderr)
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait()

    os.makedirs(os.path.dirname(args.csv) or ".", exist_ok=True)
    with open(args.csv, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["configuration", "round", "value"])
        for name, values in samples.items():
            for i, v in enumerate(values):
                w.writerow([name, i + 1, "%.2f" % v])

    med = {name: statistics.median(v) for name, v in samples.items()}
    names = list(configs)
    print("| configuration | median | min .. max |")
    print("|---|---:|---:|")
    for name in names:
        print("| %s | %.1f | %.1f .. %.1f |" % (name, med[name],
                                               min(samples[name]),
                                               max(samples[name])))
    iperf, plain, tls, tcp, relay = (samples[n] for n in names)

    def report(label, per_round, unit=""):
        print("- %s: %.3f%s from the medians; per round: median %.3f%s, "
              "min %.3f, max %.3f" % (
                  label, per_round(statistics.median),
                  unit, statistics.median(rounds(per_round)), unit,
                  min(rounds(per_round)), max(rounds(per_round))))

    def rounds(per_round):
        # The same ratio, round by round: each pair ran back to back.
        return [per_round(lambda v, i=i: v[i]) for i in range(args.rounds)]

    print()
    report("relay plaintext / iperf3", lambda f: f(plain) / f(iperf))
    report("relay TLS / iperf3", lambda f: f(tls) / f(iperf))
    report("latency added per one-way message through both relays "
           "((relay RTT - TCP RTT) / 2)", lambda f: (f(relay) - f(tcp)) / 2,
           " us")


if __name__ == "__main__":
    main()
