#!/usr/bin/env python3
"""gridwan, the WAN emulator: command line, privileges, and two network
namespaces joined through it: ping RTT against the delay, iperf3 against the
rate, ping loss against the loss rate, and teardown (--duration, SIGTERM,
SIGINT, SIGHUP, a closed stdout) that leaves no namespace and no device
behind.

Namespace names carry this process's pid, so parallel runs never clash.
Tests that need devices skip, saying why, without root or /dev/net/tun.
"""

import atexit
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import threading
import time

from harness import BIN, Skip, check, main, need_wan_devices

GRIDWAN = os.path.join(BIN, "gridwan")
# The dash ends the process id: gw12- is no prefix of gw123-'s names, so
# the cleanup below removes only this run's namespaces.
PREFIX = "gw%d-" % os.getpid()
_wans = []


def ns_names(tag, count=2):
    return ["%s%s%d" % (PREFIX, tag, i) for i in range(count)]


def namespaces():
    out = subprocess.run(["ip", "netns", "list"], stdout=subprocess.PIPE,
                         text=True, check=True).stdout
    return {line.split()[0] for line in out.splitlines() if line.strip()}


def links(ns=None):
    args = ["ip"] + (["-n", ns] if ns else []) + ["-o", "link", "show"]
    out = subprocess.run(args, stdout=subprocess.PIPE, text=True,
                         check=True).stdout
    return {line.split(":")[1].strip().split("@")[0]
            for line in out.splitlines()}


def _cleanup():
    # Stop what is still running the way users do (SIGTERM), so gridwan
    # removes its namespaces; then remove any a crash left behind.
    for wan in _wans:
        if wan.proc.poll() is None:
            wan.proc.terminate()
            try:
                wan.proc.wait(10)
            except subprocess.TimeoutExpired:
                wan.proc.kill()
    if shutil.which("ip") and os.geteuid() == 0:
        for ns in namespaces():
            if ns.startswith(PREFIX):
                subprocess.run(["ip", "netns", "delete", ns])


atexit.register(_cleanup)


def need_devices():
    need_wan_devices((("ip", "iproute2"), ("ping", "iputils-ping"),
                      ("iperf3", "iperf3")))


class Wan:
    """One gridwan run; its output lines are collected as they come."""

    def __init__(self, ns, *args):
        self.ns = ns
        self.lines = []
        self.proc = subprocess.Popen(
            [GRIDWAN, "--ns", ",".join(ns)] + [str(a) for a in args],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        _wans.append(self)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.addrs = self._wait_ready()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def output(self):
        return "\n".join(self.lines)

    def _wait_ready(self, timeout=20):
        deadline = time.time() + timeout
        while time.time() < deadline:
            for line in self.lines:
                m = re.match(r"gridwan: ready .*addrs=(\S+)", line)
                if m:
                    return m.group(1).split(",")
            check(self.proc.poll() is None,
                  "gridwan exited with %s:\n%s" % (self.proc.returncode,
                                                   self.output()))
            time.sleep(0.02)
        raise AssertionError("gridwan not ready:\n" + self.output())

    def stop(self, sig=signal.SIGTERM, timeout=15):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        status = self.proc.wait(timeout)
        self._reader.join(5)
        return status

    def counters(self):
        """{(src, dst): {name: value}} from the lines printed on exit."""
        result = {}
        for line in self.lines:
            m = re.match(r"gridwan: (\S+)->(\S+) (.*)", line)
            if m:
                result[(m.group(1), m.group(2))] = {
                    k: float(v) for k, v in re.findall(r"(\w+)=([\d.]+)",
                                                       m.group(3))}
        return result

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        status = self.stop()
        check(status == 0, "gridwan exited with %s on SIGTERM:\n%s"
              % (status, self.output()))
        return False


def in_ns(ns, *args, **kwargs):
    return subprocess.run(["ip", "netns", "exec", ns] + [str(a) for a in args],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, **kwargs)


def resolve(ns, addr):
    """ARP through the emulated link (its frames can be lost too)."""
    for _ in range(10):
        if in_ns(ns, "ping", "-n", "-c", "1", "-W", "1", addr,
                 timeout=10).returncode == 0:
            return
    raise AssertionError("%s cannot reach %s" % (ns, addr))


def check_gone(names, wan):
    left = namespaces() & set(names)
    check(not left, "namespaces left behind: %s\n%s" % (sorted(left),
                                                        wan.output()))


# ---- no devices needed ---------------------------------------------------

def run(args, timeout=30):
    return subprocess.run([GRIDWAN] + args, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=timeout)


def help_and_bad_arguments():
    r = run(["--help"])
    check(r.returncode == 0, "--help failed: %s" % r.stderr)
    for option in ("--ns", "--delay", "--jitter", "--rate", "--loss",
                   "--queue", "--queue-ms", "--mtu", "--subnet", "--seed",
                   "--duration", "--rt-priority"):
        check(option in r.stdout, "--help does not document " + option)
    cases = [
        (["--ns", "a"], "--ns"),
        ([], "--ns"),
        (["--ns", "a,b", "--delay", "20"], "--delay"),
        (["--ns", "a,b", "--rate", "fast"], "--rate"),
        (["--ns", "a,b", "--loss", "200%"], "--loss"),
        (["--ns", "a,b", "--jitter", "5ms", "--delay", "1ms"], "--jitter"),
        (["--ns", "a,b", "--queue-ms", "10"], "--queue-ms"),
        (["--ns", "a,b", "--mtu", "10"], "--mtu"),
        (["--ns", "a,b", "--subnet", "10.0.0.1/24"], "--subnet"),
        (["--ns", "a,b", "--duration"], "--duration"),
        (["--ns", "a,b", "--no-such-option"], "--no-such-option"),
    ]
    for args, option in cases:
        r = run(args)
        lines = r.stderr.strip().splitlines()
        check(r.returncode == 2 and len(lines) == 1 and option in lines[0]
              and lines[0].startswith("gridwan: "),
              "%s: exit %d, stderr %r" % (args, r.returncode, r.stderr))


def no_privileges():
    """Without CAP_NET_ADMIN: one clear line, exit 1, nothing created."""
    names = ns_names("p")
    if os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            raise Skip("setpriv is not installed (Debian package util-linux)")
        prefix = ["setpriv", "--bounding-set", "-net_admin,-sys_admin"]
    else:
        prefix = []
    r = subprocess.run(prefix + [GRIDWAN, "--ns", ",".join(names)],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=30)
    check(r.returncode == 1 and "CAP_NET_ADMIN" in r.stderr and
          "root" in r.stderr,
          "exit %d, stderr %r" % (r.returncode, r.stderr))
    if os.geteuid() == 0:
        check(not namespaces() & set(names), "namespaces were created")


# ---- two namespaces through gridwan ----------------------------------------

def ping_rtt_is_twice_the_delay():
    need_devices()
    names = ns_names("d")
    with Wan(names, "--delay", "10ms") as wan:
        resolve(names[0], wan.addrs[1])
        r = in_ns(names[0], "ping", "-n", "-c", 20, "-i", 0.05, wan.addrs[1],
                  timeout=30)
        rtts = [float(x) for x in re.findall(r"time=([\d.]+) ms", r.stdout)]
        check(len(rtts) == 20, "lost pings without loss:\n" + r.stdout)
        median = statistics.median(rtts)
        check(abs(median - 20.0) <= 20.0 * 0.1 + 1.0,
              "median RTT %.3f ms for 2 x 10 ms: %s" % (median, rtts))
        check(min(rtts) >= 20.0, "an RTT below 2 x delay: %s" % rtts)
    check_gone(names, wan)


def jumbo_frames():
    """--mtu 9000: a 9000-byte IP packet crosses whole (DF set)."""
    need_devices()
    names = ns_names("j")
    with Wan(names, "--mtu", 9000, "--delay", "1ms") as wan:
        resolve(names[0], wan.addrs[1])
        r = in_ns(names[0], "ping", "-n", "-c", 3, "-i", 0.05, "-M", "do",
                  "-s", 9000 - 28, wan.addrs[1], timeout=20)
        check(r.returncode == 0 and "3 received" in r.stdout,
              "jumbo ping failed:\n" + r.stdout)
    c = wan.counters()[(names[0], names[1])]
    check(c["bytes"] >= 3 * 9014, "counters: %s" % c)


def iperf3_gets_the_rate():
    need_devices()
    names = ns_names("r")
    with Wan(names, "--delay", "5ms", "--rate", "100mbit") as wan:
        server = subprocess.Popen(
            ["ip", "netns", "exec", names[1], "iperf3", "--server", "--one-off",
             "--bind", wan.addrs[1]],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            # Slow start over a 10 ms RTT takes a few hundred ms: --omit
            # keeps it out of the figure, as in any iperf3 rate check.
            for _ in range(50):
                r = in_ns(names[0], "iperf3", "--client", wan.addrs[1],
                          "--time", 4, "--omit", 1, "--json", timeout=30)
                if "Connection refused" not in r.stdout:
                    break
                time.sleep(0.1)
            check(r.returncode == 0, "iperf3 failed:\n" + r.stdout)
            bps = json.loads(r.stdout)["end"]["sum_received"]["bits_per_second"]
        finally:
            server.kill()
            server.wait()
        check(85e6 <= bps <= 105e6,
              "iperf3 %.1f Mbit/s through a 100 Mbit/s link\n%s"
              % (bps / 1e6, wan.output()))
    c = wan.counters()[(names[0], names[1])]
    check(c["forwarded"] * 1514 >= 4 * 85e6 / 8 and
          c["queue_max"] <= 151400,
          "counters: %s" % c)


def ping_loss_matches():
    need_devices()
    names = ns_names("l")
    with Wan(names, "--delay", "1ms", "--loss", "5%", "--seed", 7) as wan:
        resolve(names[0], wan.addrs[1])
        r = in_ns(names[0], "ping", "-n", "-q", "-c", 400, "-i", 0.01,
                  wan.addrs[1], timeout=60)
        m = re.search(r"(\d+) packets transmitted, (\d+) received", r.stdout)
        check(m is not None, "no ping summary:\n" + r.stdout)
        sent, received = int(m.group(1)), int(m.group(2))
    # A round trip survives two 5 % draws: 9.75 % lost, 1.48 % standard
    # deviation over 400; four of them either side.
    lost = 1 - received / sent
    check(0.0975 - 0.06 <= lost <= 0.0975 + 0.06,
          "%.1f %% of %d round trips lost with 5 %% loss per direction"
          % (100 * lost, sent))
    for (src, dst), c in wan.counters().items():
        frames = c["forwarded"] + c["dropped_loss"]
        check(frames >= 300 and
              abs(c["dropped_loss"] / frames - 0.05) <= 4 * (0.05 * 0.95 /
                                                            frames) ** 0.5,
              "%s->%s: %s" % (src, dst, c))


def teardown_leaves_nothing():
    need_devices()
    # --duration: gridwan stops by itself.
    names = ns_names("t")
    start = time.time()
    wan = Wan(names, "--duration", "1")
    status = wan.proc.wait(15)
    wan._reader.join(5)
    check(status == 0 and time.time() - start < 10,
          "--duration 1: exit %s after %.1f s\n%s"
          % (status, time.time() - start, wan.output()))
    check(len(wan.counters()) == 2, "no counters:\n" + wan.output())
    check_gone(names, wan)

    # SIGTERM, SIGINT and SIGHUP, with traffic in flight on a slow link.
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        names = ns_names("s%d" % sig)
        wan = Wan(names, "--delay", "50ms", "--rate", "1mbit")
        in_ns(names[0], "ping", "-n", "-c", 3, "-i", 0.01, "-s", 1400,
              "-W", 1, wan.addrs[1], timeout=20)
        status = wan.stop(sig)
        check(status == 0, "exit %s on %s:\n%s"
              % (status, sig.name, wan.output()))
        check_gone(names, wan)

    # A reader that went away (`gridwan ... | head -1`): the counters
    # written on exit must not kill gridwan before it has cleaned up.
    names = ns_names("h")
    proc = subprocess.Popen([GRIDWAN, "--ns", ",".join(names)],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True)
    ready = proc.stdout.readline()
    proc.stdout.close()
    proc.terminate()
    status = proc.wait(15)
    check(ready.startswith("gridwan: ready") and status == 0,
          "closed stdout: exit %s, first line %r" % (status, ready))
    check(not namespaces() & set(names), "namespaces left behind with a "
          "closed stdout")

    # An existing namespace is used and kept, without the device.
    names = ns_names("e")
    subprocess.run(["ip", "netns", "add", names[0]], check=True)
    try:
        with Wan(names) as wan:
            check("wan0" in links(names[0]), "no wan0 in " + names[0])
        check(names[0] in namespaces(), "existing namespace deleted")
        check("wan0" not in links(names[0]), "wan0 left in " + names[0])
        check(names[1] not in namespaces(), "created namespace kept")
    finally:
        subprocess.run(["ip", "netns", "delete", names[0]])
    # Other jobs may add and remove devices meanwhile; gridwan's are all
    # named wan0.
    check("wan0" not in links(), "a wan0 device in the root namespace")


if __name__ == "__main__":
    main([
        ("help_and_bad_arguments", help_and_bad_arguments),
        ("no_privileges", no_privileges),
        ("ping_rtt_is_twice_the_delay", ping_rtt_is_twice_the_delay),
        ("jumbo_frames", jumbo_frames),
        ("iperf3_gets_the_rate", iperf3_gets_the_rate),
        ("ping_loss_matches", ping_loss_matches),
        ("teardown_leaves_nothing", teardown_leaves_nothing),
    ])
