"""Integration-test harness: real gridrelay processes on loopback.

A Grid is N sites, each with one relay; configs, tokens and certificates
live in a temporary directory that is removed at the end.  Every process
the harness starts is killed on exit, whatever happened.
"""

import atexit
import csv
import fnmatch
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

BUILD_DIR = os.environ.get("GRIDCOLL_BUILD_DIR", "build")
SOURCE_DIR = os.environ.get(
    "GRIDCOLL_SOURCE_DIR",
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
BIN = os.path.join(BUILD_DIR, "bin")
RELAY = os.path.join(BIN, "gridrelay")
TOOL = os.path.join(BIN, "relay_tool")

_children = []


def _kill_children():
    for proc in _children:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


atexit.register(_kill_children)

# A job whose layout has a default model uses it (gridrun --probe,
# docs/model.md): no test may pick up one the developer probed, so the
# tests get an empty model directory of their own.
_model_dir = tempfile.mkdtemp(prefix="gridcoll-models.")
atexit.register(shutil.rmtree, _model_dir, ignore_errors=True)
os.environ["GRIDCOLL_MODEL_DIR"] = _model_dir
signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))


_ports_handed_out = set()
with open("/proc/sys/net/ipv4/ip_local_port_range") as _f:
    _EPHEMERAL_LOW = int(_f.read().split()[0])


def free_port():
    """A loopback TCP port free now for a relay to listen on later.  It lies
    below the kernel's ephemeral range, so no outgoing connection (a relay
    dialling its peer) can take it meanwhile, and this process never hands
    it out twice (a port bound and closed is free again at once)."""
    while True:
        port = random.randrange(10000, _EPHEMERAL_LOW)
        if port in _ports_handed_out:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        _ports_handed_out.add(port)
        return port


def spawn(args, **kwargs):
    proc = subprocess.Popen(args, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, **kwargs)
    _children.append(proc)
    return proc


def make_certs(directory, sites, ca_name="ca"):
    script = os.path.join(SOURCE_DIR, "conf", "tls", "make-certs.sh")
    subprocess.run(["bash", script, directory] + list(sites), check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


class Failure(Exception):
    pass


class Skip(Exception):
    """Raised by a test that cannot run in this build; says why."""


SANITIZED = os.environ.get("GRIDCOLL_SANITIZED") == "1"


def check(condition, message):
    if not condition:
        raise Failure(message)


class Site:
    def __init__(self, grid, name, first_rank, rank_count):
        self.grid = grid
        self.name = name
        self.first_rank = first_rank
        self.rank_count = rank_count
        self.wan_port = free_port()
        self.http_port = free_port()
        self.socket_path = os.path.join(grid.dir, name + ".sock")
        self.endpoint = "unix:" + self.socket_path
        self.config_path = os.path.join(grid.dir, name + ".conf")
        self.log_path = os.path.join(grid.dir, name + ".log")
        self.stderr_path = os.path.join(grid.dir, name + ".stderr")
        self.proc = None
        self.stopped_on_purpose = False
        self.local_tcp = ""     # "127.0.0.1:PORT" adds a TCP endpoint for ranks
        self.connect = "auto"   # direction towards every peer

    def write_config(self, extra=""):
        g = self.grid
        peers = []
        for other in g.sites:
            if other is self:
                continue
            peers.append(
                '{ name = "%s"; first_rank = %d; rank_count = %d; '
                'address = "127.0.0.1:%d"; connect = "%s"; }' %
                (other.name, other.first_rank, other.rank_count,
                 other.wan_port, self.connect))
        tls = ('tls = { cert = "%s/%s.crt"; key = "%s/%s.key"; ca = "%s/ca.crt"; };'
               % (g.cert_dir, self.name, g.cert_dir, self.name, g.cert_dir)
               if g.tls else "")
        text = """
site = "{name}"; job_id = {job}; first_rank = {first}; rank_count = {count};
token_file = "{token}";
local = {{ unix = "{sock}"; tcp = "{local_tcp}"; }};
wan = {{ listen = "127.0.0.1:{wan}"; streams = {streams}; chunk_size = {chunk};
        plaintext = {plain}; }};
{tls}
http = {{ listen = "127.0.0.1:{http}"; admin = true; }};
log = {{ level = "info"; file = "{log}"; }};
liveness = {{ reconnect_min_ms = 50; reconnect_max_ms = 500;
             peer_give_up_ms = {give_up}; {liveness} }};
{extra}
peers = ( {peers} );
""".format(name=self.name, job=g.job_id, first=self.first_rank,
           count=self.rank_count, token=g.token_path, sock=self.socket_path,
           local_tcp=self.local_tcp,
           wan=self.wan_port, streams=g.streams, chunk=g.chunk,
           plain="false" if g.tls else "true", tls=tls, http=self.http_port,
           log=self.log_path, give_up=g.give_up_ms, liveness=g.liveness,
           extra=g.extra_config + extra, peers=", ".join(peers))
        with open(self.config_path, "w") as f:
            f.write(text)

    def start(self):
        if not os.path.exists(self.config_path):
            self.write_config()
        # stderr holds what the log file cannot: sanitizer reports, crashes.
        with open(self.stderr_path, "a") as err:
            self.proc = subprocess.Popen([RELAY, "-c", self.config_path],
                                         stdout=err, stderr=err)
        _children.append(self.proc)
        self.stopped_on_purpose = False
        return self

    def stop(self, sig=signal.SIGTERM, timeout=15):
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else None
        self.stopped_on_purpose = True
        self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()

    def http(self, path, method="GET"):
        req = urllib.request.Request(
            "http://127.0.0.1:%d%s" % (self.http_port, path), method=method,
            data=b"" if method == "POST" else None)
        with urllib.request.urlopen(req, timeout=5) as resp:
            return resp.read().decode()

    def status(self):
        return json.loads(self.http("/status"))

    def link(self, peer_name):
        for link in self.status()["links"]:
            if link["peer"] == peer_name:
                return link
        raise Failure("no link to %s" % peer_name)

    def log(self):
        text = ""
        for path in (self.log_path, self.stderr_path):
            try:
                with open(path) as f:
                    text += f.read()
            except FileNotFoundError:
                pass
        return text

    def rss_kib(self):
        with open("/proc/%d/status" % self.proc.pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    def wait_rank_connected(self, rank, tool, timeout=20):
        """Wait until `rank` (run by the process `tool`) has a session."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            if tool.poll() is not None:
                raise Failure("rank %d exited before connecting:\n%s"
                              % (rank, tool.communicate()[0]))
            if any(r["rank"] == rank and r["connected"]
                   for r in self.status()["ranks"]):
                return
            time.sleep(0.02)
        raise Failure("rank %d did not connect to %s" % (rank, self.name))

    def wait_links_up(self, timeout=20):
        deadline = time.time() + timeout
        while time.time() < deadline:
            check(self.proc.poll() is None,
                  "relay %s exited:\n%s" % (self.name, self.log()))
            try:
                links = self.status()["links"]
                if all(l["state"] == "up" and
                       l["streams_up"] == self.grid.streams_expected(l)
                       for l in links):
                    return
            except OSError:
                pass
            time.sleep(0.05)
        raise Failure("links of %s not up:\n%s" % (self.name, self.log()))


class Grid:
    """Sites with `sizes[i]` ranks each, rank numbers assigned in order."""

    def __init__(self, sizes=(1, 1), names=None, tls=True, streams=4,
                 chunk=262144, give_up_ms=30000, extra_config="", job_id=7,
                 liveness=""):
        self.dir = tempfile.mkdtemp(prefix="gridrelay-test-")
        self.tls = tls
        self.streams = streams
        self.chunk = chunk
        self.give_up_ms = give_up_ms
        self.liveness = liveness  # more liveness.* settings
        self.extra_config = extra_config
        self.job_id = job_id
        self.token_path = os.path.join(self.dir, "job.token")
        with open(self.token_path, "w") as f:
            f.write(os.urandom(32).hex() + "\n")
        names = names or ["alpha", "beta", "gamma", "delta"][:len(sizes)]
        self.sites = []
        first = 0
        for name, size in zip(names, sizes):
            self.sites.append(Site(self, name, first, size))
            first += size
        self.cert_dir = os.path.join(self.dir, "tls")
        if tls:
            make_certs(self.cert_dir, names)

    def streams_expected(self, link):
        return self.streams

    def start(self):
        for site in self.sites:
            site.write_config()
        for site in self.sites:
            site.start()
        for site in self.sites:
            site.wait_links_up()
        return self

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        # Every relay must still be running and must exit cleanly on SIGTERM:
        # this runs the drain and free paths, under sanitizers in CI.
        problems = []
        for site in self.sites:
            if site.proc is None:
                continue
            if site.proc.poll() is not None and not site.stopped_on_purpose:
                problems.append("relay %s died (status %s)" %
                                (site.name, site.proc.returncode))
                continue
            earlier_stop = site.stopped_on_purpose
            try:
                status = site.stop(signal.SIGTERM, timeout=20)
            except subprocess.TimeoutExpired:
                status = "timeout"
            if status not in (0, None) and not earlier_stop:
                problems.append("relay %s exited with %s on SIGTERM" %
                                (site.name, status))
            site.stopped_on_purpose = True
        if exc[0] is None and problems:
            for site in self.sites:
                sys.stderr.write("---- log of %s ----\n%s" % (site.name,
                                                              site.log()))
            shutil.rmtree(self.dir, ignore_errors=True)
            raise Failure("; ".join(problems))
        if exc[0] is not None:
            for site in self.sites:
                sys.stderr.write("---- log of %s ----\n%s" % (site.name,
                                                              site.log()))
        shutil.rmtree(self.dir, ignore_errors=True)
        return False

    def tool(self, mode, site, rank, *args):
        return spawn([TOOL, mode, site.endpoint, self.token_path,
                      str(self.job_id), str(rank)] + [str(a) for a in args])


def finish(proc, timeout=120, expect_ok=True):
    """Wait for a tool process; return its output, raise on failure."""
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
        raise Failure("tool timed out; output:\n" + out)
    if expect_ok:
        check(proc.returncode == 0 and "ok " in out,
              "tool failed (exit %d):\n%s" % (proc.returncode, out))
    return out


def tail(text, lines=40):
    """The last `lines` lines of a program's output, for failure messages."""
    return "\n".join(text.splitlines()[-lines:])


STATS_LINE = re.compile(r"gridcoll-stats: site=(\S+) coll=(\S+) algo=(\S+) "
                        r"calls=(\d+) wan_bytes=(\d+) wan_messages=(\d+)")


def wan_stats(text):
    """GRIDCOLL_STATS=1 lines: {(site, coll, algo): (calls, bytes, messages)}."""
    return {(m.group(1), m.group(2), m.group(3)):
            tuple(int(m.group(i)) for i in (4, 5, 6))
            for m in STATS_LINE.finditer(text)}


# How often a site's phases chose a site algorithm (the site level of the
# tables): coll is the table whose GRIDCOLL_<COLL>_LOCAL forces it.
SITE_STATS_LINE = re.compile(r"gridcoll-stats: site=(\S+) coll=(\S+) "
                             r"level=site algo=(\S+) calls=(\d+)")


def site_stats(text):
    """GRIDCOLL_STATS=1 site-level lines: {(site, coll, algo): calls}."""
    return {(m.group(1), m.group(2), m.group(3)): int(m.group(4))
            for m in SITE_STATS_LINE.finditer(text)}


def algorithm_rows():
    """`gridcoll-info --algorithms --csv`: one dict per table entry (coll,
    level, algo, description, restrictions, blocking)."""
    r = subprocess.run([os.path.join(BIN, "gridcoll-info"), "--algorithms",
                        "--csv"], stdout=subprocess.PIPE, text=True,
                       check=True, timeout=30)
    return list(csv.DictReader(r.stdout.splitlines()))


def algorithms(coll, level="grid"):
    """The algorithm names of one level of a collective's table."""
    return [row["algo"] for row in algorithm_rows()
            if row["coll"] == coll and row["level"] == level]


def run_self_checking(program, sizes, args, env, timeout, site_level=False):
    """Run a self-checking program of tests/mpi under gridrun --site-sizes
    SIZES with exactly `env`; it must print no FAIL line, not hang and exit
    0.  Returns its "OK <case>" names and its WAN stats, with `site_level`
    also its site-level stats (site_stats)."""
    name = os.path.basename(program)
    # gridrun's own --timeout tears the job down cleanly.
    r = subprocess.run([os.path.join(BIN, "gridrun"), "--timeout",
                        str(timeout), "--site-sizes",
                        ",".join(map(str, sizes)), "--", program] + args,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=timeout + 30, env=env)
    out, err = r.stdout, r.stderr
    failures = [l for l in (out + err).splitlines() if "FAIL" in l]
    check(not failures, "%s reported:\n%s\n--- stderr:\n%s" %
          (name, "\n".join(failures[:10]), tail(err)))
    check(r.returncode != 124, "%s hung; output:\n%s\n%s" %
          (name, tail(out), tail(err)))
    check(r.returncode == 0, "%s exited %d:\n%s\n--- stderr:\n%s"
          % (name, r.returncode, tail(out), tail(err)))
    ok = [l[3:] for l in out.splitlines() if re.match(r"OK \S+$", l)]
    if site_level:
        return ok, wan_stats(err), site_stats(err)
    return ok, wan_stats(err)


def run_cases(program, layout, cases, env=None, args=(), timeout=120):
    """Run BIN/PROGRAM ARGS of tests/mpi under gridrun LAYOUT (`env` added
    to the environment); it must not hang, must exit 0 with no FAIL line,
    and its "OK <case>" lines must be `cases`, in order."""
    rc, out, err = gridrun(layout, [os.path.join(BIN, program)] + list(args),
                           env, timeout)
    both = out + err
    check(rc != 124, "%s hung:\n%s" % (program, tail(both, 30)))
    check(rc == 0 and "FAIL" not in both,
          "%s exited %d:\n%s" % (program, rc, tail(both, 30)))
    ok = re.findall(r"^OK (\S+)$", out, re.M)
    check(ok == cases, "%s: OK lines %s, want %s" % (program, ok, cases))


def machine_file(text):
    """Write `text` (WAN1, WAN2, ... replaced by free loopback addresses)
    to a file in a new directory; returns (directory, path)."""
    d = tempfile.mkdtemp(prefix="gr-mf-")
    text = re.sub(r"\bWAN\d\b", lambda m: "127.0.0.1:%d" % free_port(), text)
    path = os.path.join(d, "job.machines")
    with open(path, "w") as f:
        f.write(text)
    return d, path


def need_wan_devices(tools):
    """Skip unless this process may make network namespaces and TAP
    devices, and every (TOOL, DEBIAN PACKAGE) of `tools` is installed."""
    if os.geteuid() != 0:
        raise Skip("needs root (network namespaces and TAP devices)")
    if not os.path.exists("/dev/net/tun"):
        raise Skip("/dev/net/tun is missing (no TUN/TAP support)")
    for tool, package in tools:
        if shutil.which(tool) is None:
            raise Skip("%s is not installed (Debian package %s)"
                       % (tool, package))


def gridrun_usage_errors(cases, timeout=10):
    """Each (ARGS, TEXT): `gridrun ARGS` must refuse to start, with exit
    status 2 and TEXT in its standard error."""
    for args, text in cases:
        r = subprocess.run([os.path.join(BIN, "gridrun")] + args,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, timeout=timeout)
        check(r.returncode == 2 and text in r.stderr,
              "%r: exit %d, %r" % (args, r.returncode, r.stderr))


def gridrun(layout, program, env=None, timeout=90):
    """Run `gridrun --timeout T LAYOUT -- PROGRAM...`; (rc, stdout, stderr).
    gridrun's own --timeout tears the job down cleanly (killing gridrun from
    here would orphan its relays and ranks).  The directory gridrun keeps
    after a failed job is removed: callers check failures themselves."""
    r = subprocess.run([os.path.join(BIN, "gridrun"), "--timeout",
                        str(timeout)] + layout + ["--"] + program,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=timeout + 30,
                       env=None if env is None else dict(os.environ, **env))
    for line in r.stderr.splitlines():
        if line.startswith("gridrun: job directory kept: "):
            shutil.rmtree(line.split(": ", 2)[2], ignore_errors=True)
    return r.returncode, r.stdout, r.stderr


def main(tests):
    """Run (name, function) pairs, or those whose names match one of the
    command line's shell patterns; print a summary line CTest can read."""
    passed = failed = skipped = 0
    only = sys.argv[1:]
    for name, fn in tests:
        if only and not any(fnmatch.fnmatchcase(name, p) for p in only):
            continue
        start = time.time()
        try:
            fn()
            passed += 1
            print("PASS %s (%.1fs)" % (name, time.time() - start), flush=True)
        except Skip as e:
            skipped += 1
            print("SKIP %s: %s" % (name, e), flush=True)
        except Exception as e:  # report every kind of failure, then go on
            failed += 1
            print("FAIL %s: %s: %s" % (name, type(e).__name__, e), flush=True)
    print("%d passed, %d failed%s" % (passed, failed,
                                       ", %d skipped" % skipped if skipped
                                       else ""))
    sys.exit(1 if failed or passed == 0 else 0)
