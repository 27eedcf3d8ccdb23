#!/usr/bin/env python3
"""gridrun --wan: namespace sites behind gridwan, and gridrun --native, the
plain-MPICH baseline over the same emulated WAN.

A 5 ms one-way delay must show in cross-site ping-pong round trips (at least
10 ms) through GridColl and through native MPICH alike: the traffic crosses
gridwan.  Every exit path (success, rank failure, SIGTERM, timeout, gridwan
dying) must leave no namespace, no gridwan, no relay and no rank behind.
Without CAP_NET_ADMIN gridrun refuses --wan with exit 2.

Namespaces are named gr<gridrun's pid>-<site>; the tests look for those of
the gridrun processes they started.  Tests that need devices skip, saying
why, without root or /dev/net/tun.
"""

import atexit
import glob
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import uuid

from harness import BIN, Skip, check, main, need_wan_devices

GRIDRUN = os.path.join(BIN, "gridrun")
DELAY_MS = 5
WAN = "delay=%dms" % DELAY_MS
_pids = []


def namespaces():
    out = subprocess.run(["ip", "netns", "list"], stdout=subprocess.PIPE,
                         text=True, check=True).stdout
    return {line.split()[0] for line in out.splitlines() if line.strip()}


def _cleanup():
    # Whatever a failed test left: this run's gridruns and their namespaces.
    for pid in _pids:
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    if shutil.which("ip") and os.geteuid() == 0:
        for ns in namespaces():
            if any(ns.startswith("gr%d-" % pid) for pid in _pids):
                subprocess.run(["ip", "netns", "delete", ns])


atexit.register(_cleanup)


def need_devices():
    need_wan_devices((("ip", "iproute2"), ("unshare", "util-linux")))


class Job:
    """One gridrun run in its own TMPDIR; output collected as it comes, so
    a test can wait for a line while the job runs."""

    def __init__(self, args, prefix=(), marker=""):
        # An argument of the ranks (grid_hello ignores extra ones), to find
        # them after gridrun exited.
        self.marker = marker or "wan-test-" + uuid.uuid4().hex
        self.tmp = tempfile.mkdtemp(prefix="grw-")
        self.out = []
        self.err = []
        self.proc = subprocess.Popen(
            list(prefix) + [GRIDRUN] + args, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, start_new_session=True,
            env=dict(os.environ, TMPDIR=self.tmp))
        _pids.append(self.proc.pid)
        self._readers = [
            threading.Thread(target=self._read, args=(f, lines), daemon=True)
            for f, lines in ((self.proc.stdout, self.out),
                             (self.proc.stderr, self.err))]
        for t in self._readers:
            t.start()

    @staticmethod
    def _read(f, lines):
        for line in f:
            lines.append(line)

    def stdout(self):
        return "".join(self.out)

    def stderr(self):
        return "".join(self.err)

    def wait_output(self, pattern, count=1, timeout=30):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if len(re.findall(pattern, self.stdout())) >= count:
                return
            check(self.proc.poll() is None,
                  "gridrun exited with %s before printing %r:\n%s"
                  % (self.proc.returncode, pattern, self.stderr()))
            time.sleep(0.05)
        raise AssertionError("no %r after %d s; stderr:\n%s"
                             % (pattern, timeout, self.stderr()))

    def wait(self, timeout=60):
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
            raise AssertionError("gridrun hung; stderr:\n" + self.stderr())
        for t in self._readers:
            t.join(5)
        return self.proc.returncode

    def leftovers(self):
        """Namespaces and processes of this job alive after gridrun."""
        prefix = "gr%d-" % self.proc.pid
        found = sorted(ns for ns in namespaces() if ns.startswith(prefix))
        for pattern in (self.marker, "gridrelay -c " + self.tmp,
                        "gridwan --ns " + prefix):
            r = subprocess.run(["pgrep", "-af", pattern],
                               stdout=subprocess.PIPE, text=True)
            found += [l for l in r.stdout.splitlines() if "pgrep" not in l]
        return found

    def finish(self):
        deadline = time.time() + 2
        while self.leftovers() and time.time() < deadline:
            time.sleep(0.1)
        left = self.leftovers()
        shutil.rmtree(self.tmp, ignore_errors=True)
        check(not left, "left behind: %r" % left)


def run(args, timeout=60):
    job = Job(args)
    try:
        rc = job.wait(timeout)
    finally:
        job.finish()
    return rc, job.stdout(), job.stderr()


def pingpong_us(out):
    """usec_median of the one pingpong row of gridcoll-mpibench --csv."""
    rows = [l.split(",") for l in out.splitlines() if l.startswith("pingpong,")]
    check(len(rows) == 1, "no pingpong row in:\n" + out)
    return float(rows[0][9])


def bad_options():
    """Usage errors, found before anything starts (no root needed)."""
    cases = [
        (["--site-sizes", "1,1", "--wan", "delay=5"], "--wan: --delay"),
        (["--site-sizes", "1,1", "--wan", "speed=1gbit"], "unknown key"),
        (["--site-sizes", "1,1", "--wan", "delay"], "KEY=VALUE"),
        (["--site-sizes", "1,1", "--wan", "delay=1ms,delay=2ms"], "twice"),
        (["--site-sizes", "1,1", "--wan", "jitter=5ms"],
         "--jitter: larger than --delay"),
        (["--sites", "1", "-n", "2", "--wan", WAN], "at least two sites"),
        (["--site-sizes", "1,1", "--native"], "--native needs --wan"),
        (["--site-sizes", "1,1", "--wan", WAN, "--native", "--preload"],
         "--preload"),
    ]
    for args, message in cases:
        r = subprocess.run([GRIDRUN] + args + ["--", "true"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, timeout=30)
        check(r.returncode == 2 and message in r.stderr,
              "%r: exit %d, stderr %r" % (args, r.returncode, r.stderr))


def no_privileges():
    """Without CAP_NET_ADMIN: one clear line, exit 2, nothing made."""
    if os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            raise Skip("setpriv is not installed (Debian package util-linux)")
        prefix = ["setpriv", "--bounding-set", "-net_admin,-sys_admin"]
    else:
        prefix = []
    job = Job(["--site-sizes", "1,1", "--wan", WAN, "--", "true"], prefix)
    try:
        rc = job.wait(30)
        check(rc == 2 and "CAP_NET_ADMIN" in job.stderr() and
              "root" in job.stderr(),
              "exit %d, stderr %r" % (rc, job.stderr()))
        check(not os.listdir(job.tmp), "a job directory was made")
    finally:
        if os.geteuid() == 0:
            job.finish()
        else:
            shutil.rmtree(job.tmp, ignore_errors=True)


def coll_check_over_wan():
    need_devices()
    rc, out, err = run(["--site-sizes", "2,2", "--wan", WAN, "--timeout",
                        "60", "--", os.path.join(BIN, "coll_check")])
    check(rc == 0, "exit %d:\n%s%s" % (rc, out, err))
    check("OK alltoall" in out, "coll_check output:\n" + out)


def pingpong_crosses_the_wan():
    """Grid ranks 0 and 2 sit on different sites: a round trip through the
    relays is at least two WAN delays."""
    need_devices()
    rc, out, err = run(["--site-sizes", "2,2", "--wan", WAN, "--timeout",
                        "60", "--", os.path.join(BIN, "gridcoll-mpibench"),
                        "pingpong", "--peer", "2", "--iters", "30", "--csv"])
    check(rc == 0, "exit %d:\n%s%s" % (rc, out, err))
    one_way = pingpong_us(out)
    check(one_way >= DELAY_MS * 1000,
          "cross-site one-way %.0f us < %d ms" % (one_way, DELAY_MS))


def pingpong_link_summaries(wan, relay_sets, size):
    """Run a 1+1 gridcoll-mpibench pingpong of `size` over `wan` with the
    relay settings given; each relay's exit summary of its link:
    {site: (sent, copies, received, duplicates, bbr restarts)}."""
    tmp = tempfile.mkdtemp(prefix="grw-")
    try:
        sets = [a for kv in relay_sets for a in ("--relay-set", kv)]
        rc, out, err = run(
            ["--site-sizes", "1,1", "--wan", wan] + sets +
            ["--keep-job-dir", "--job-dir", tmp, "--timeout", "60", "--",
             os.path.join(BIN, "gridcoll-mpibench"), "pingpong", "--bytes",
             size, "--peer", "1", "--iters", "30", "--csv"])
        check(rc == 0, "exit %d:\n%s%s" % (rc, out, err))
        pingpong_us(out)
        found = glob.glob(os.path.join(tmp, "gridrun-*"))
        check(len(found) == 1, "job directories in %s: %r" % (tmp, found))
        counts = {}
        for site, peer in (("alpha", "beta"), ("beta", "alpha")):
            log = open(os.path.join(found[0], site + ".log")).read()
            m = re.search(r"link %s: sent (\d+) chunks \((\d+) copies, "
                          r"\d+ re-sent\), received (\d+) "
                          r"\((\d+) duplicates\), (\d+) bbr restarts" % peer,
                          log)
            check(m, "%s's relay log has no link summary:\n%s"
                  % (site, log[-2000:]))
            counts[site] = tuple(int(v) for v in m.groups())
        return counts
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def lossy_link_sends_copies():
    """On a link that loses segments the relays send each chunk of a burst
    twice (wan.redundant_bytes) and drop the later copy; the data arrive
    exactly once and intact (gridcoll-mpibench checks every byte and fails
    otherwise): messages from wan.redundant_min_message on, and messages
    of one small segment.  With wan.redundant_bytes = 0 no chunk goes
    twice."""
    need_devices()
    for redundant, size, want_copies in (("1M", "256k", True),
                                         ("1M", "8", True),
                                         ("0", "256k", False)):
        counts = pingpong_link_summaries(
            WAN + ",loss=2%", ["wan.redundant_bytes=" + redundant], size)
        sent, copies = counts["alpha"][:2]
        received, duplicates = counts["beta"][2:4]
        if want_copies:
            # The warm-up rounds see the loss; the timed ones copy.
            check(copies > 0 and duplicates > 0,
                  "redundant %s, %s B: %r" % (redundant, size, counts))
        else:
            check(copies == 0 and duplicates == 0,
                  "redundant 0 copied: %r" % counts)
        # No chunk was taken twice, and only copies were dropped (re-sends
        # aside: none without broken streams).  Equalities would race the
        # relays' shutdown: the last chunks may still be on their way when
        # the peer's relay counts.
        check(received <= sent - copies and duplicates <= copies,
              "alpha sent %d chunks (%d copies), beta took %d and dropped %d"
              % (sent, copies, received, duplicates))


def idle_bbr_streams_restart():
    """A bbr stream that idled restarts its congestion control before the
    next burst (tcp.restart_after_idle); not when that is off, and never
    for another congestion control."""
    need_devices()
    available = "/proc/sys/net/ipv4/tcp_available_congestion_control"
    if "bbr" not in open(available).read().split():
        subprocess.run(["modprobe", "tcp_bbr"], stderr=subprocess.DEVNULL)
        if "bbr" not in open(available).read().split():
            raise Skip("this kernel has no bbr (module tcp_bbr)")
    for sets, want in ((["tcp.congestion=bbr"], True),
                       (["tcp.congestion=bbr", "tcp.restart_after_idle=false"],
                        False),
                       (["tcp.congestion=cubic"], False)):
        counts = pingpong_link_summaries(WAN, sets, "64k")
        restarts = counts["alpha"][4] + counts["beta"][4]
        check((restarts > 0) == want, "%r: %d bbr restarts" % (sets, restarts))


def native_pingpong_crosses_the_wan():
    """The baseline: one MPICH job over the same WAN; UCX's log shows
    shared memory between ranks of a site and TCP alone across sites."""
    need_devices()
    if not os.path.exists(os.path.join(BIN, "..", "lib",
                                       "libgridrun-native.so")):
        raise Skip("libgridrun-native.so was not built (UCX headers, Debian "
                   "libucx-dev, missing)")
    job = Job(["--site-sizes", "2,2", "--wan", WAN, "--native", "--timeout",
               "60", "--", "env", "UCX_LOG_LEVEL=info",
               os.path.join(BIN, "gridcoll-mpibench-plain"), "pingpong",
               "--peer", "2", "--iters", "30", "--csv"])
    try:
        rc = job.wait(70)
    finally:
        job.finish()
    out, err = job.stdout(), job.stderr()
    check(rc == 0, "exit %d:\n%s%s" % (rc, out, err))
    one_way = pingpong_us(out)
    check(one_way >= DELAY_MS * 1000,
          "cross-site one-way %.0f us < %d ms" % (one_way, DELAY_MS))
    lanes = re.findall(r"ep_cfg\[\d+\]: tag\(([^)]*)\)", out + err)
    check(any("sysv" in l or "posix" in l for l in lanes),
          "no shared-memory endpoint: %r" % lanes)
    check("tcp/wan0" in lanes, "no TCP-only endpoint: %r" % lanes)
    check(not any("cma" in l or "tcp/lo" in l for l in lanes),
          "an endpoint bypasses the WAN: %r" % lanes)


def rank_failure_leaves_nothing():
    """A rank of the last site fails: GridColl's ranks learn it through the
    relays; plain MPICH would leave the others waiting for a rank that just
    exited, so the baseline's rank calls MPI_Abort instead."""
    need_devices()
    for extra, prog, how in (([], "grid_hello", "die"),
                             (["--native"], "grid_hello_plain", "abort")):
        marker = "wan-test-" + uuid.uuid4().hex
        job = Job(["--site-sizes", "2,2", "--wan", WAN, "--timeout", "60"] +
                  extra + ["--", os.path.join(BIN, prog), how, "3", marker],
                  marker=marker)
        try:
            rc = job.wait(70)
        finally:
            job.finish()
        check(rc == 3, "%r: exit %d:\n%s" % (extra, rc, job.stderr()))


def sigterm_leaves_nothing():
    need_devices()
    marker = "wan-test-" + uuid.uuid4().hex
    job = Job(["--site-sizes", "2,2", "--wan", WAN, "--timeout", "60", "--",
               os.path.join(BIN, "grid_hello"), "hang", marker], marker=marker)
    try:
        job.wait_output(r"rank \d of 4", count=4)
        os.kill(job.proc.pid, signal.SIGTERM)
        rc = job.wait(30)
    finally:
        job.finish()
    check(rc == 143 and "gridrun: interrupted" in job.stderr(),
          "exit %d:\n%s" % (rc, job.stderr()))


def timeout_leaves_nothing():
    need_devices()
    start = time.time()
    marker = "wan-test-" + uuid.uuid4().hex
    job = Job(["--site-sizes", "1,1", "--wan", WAN, "--native", "--timeout",
               "3", "--", os.path.join(BIN, "grid_hello_plain"), "hang",
               marker], marker=marker)
    try:
        rc = job.wait(30)
    finally:
        job.finish()
    check(rc == 124 and "timeout after 3 s" in job.stderr(),
          "exit %d:\n%s" % (rc, job.stderr()))
    check(time.time() - start < 15, "took %.1f s" % (time.time() - start))


def gridwan_dies():
    """gridwan is supervised like a relay: its death ends the job."""
    need_devices()
    marker = "wan-test-" + uuid.uuid4().hex
    job = Job(["--site-sizes", "1,1", "--wan", WAN, "--timeout", "60", "--",
               os.path.join(BIN, "grid_hello"), "hang", marker],
              marker=marker)
    try:
        job.wait_output(r"rank \d of 2", count=2)
        r = subprocess.run(["pgrep", "-f", "gridwan --ns gr%d-"
                            % job.proc.pid], stdout=subprocess.PIPE,
                           text=True)
        check(r.stdout.strip(), "gridwan not found")
        os.kill(int(r.stdout.split()[0]), signal.SIGKILL)
        rc = job.wait(30)
    finally:
        job.finish()
    check(rc == 1 and re.search(r"gridrun: gridwan died while ranks ran "
                                r"\(killed by signal SIGKILL\)",
                                job.stderr()) and
          "which gridwan left behind" in job.stderr(),
          "exit %d:\n%s" % (rc, job.stderr()))


if __name__ == "__main__":
    main([
        ("bad_options", bad_options),
        ("no_privileges", no_privileges),
        ("coll_check_over_wan", coll_check_over_wan),
        ("pingpong_crosses_the_wan", pingpong_crosses_the_wan),
        ("lossy_link_sends_copies", lossy_link_sends_copies),
        ("idle_bbr_streams_restart", idle_bbr_streams_restart),
        ("native_pingpong_crosses_the_wan", native_pingpong_crosses_the_wan),
        ("rank_failure_leaves_nothing", rank_failure_leaves_nothing),
        ("sigterm_leaves_nothing", sigterm_leaves_nothing),
        ("timeout_leaves_nothing", timeout_leaves_nothing),
        ("gridwan_dies", gridwan_dies),
    ])
