#!/usr/bin/env python3
"""gridrelay as the sites' gateway service (docs/gridrelay.md, "Service
mode"): two services in network namespaces behind gridwan, TLS on the WAN,
configured as an operator would (conf/gridrelay.conf.example), and jobs of
different users registered with them by gridrun or by hand.

- three jobs of three users at once through the same two services, each
  checking its data byte for byte; the links stay up between jobs;
- one job killed mid-transfer while another's transfer completes intact;
- a rank of job A cannot reach job B (ERROR, session closed, nothing
  delivered), nor join it with A's token;
- the control endpoint refuses launchers without a certificate or with
  one from another CA, malformed registrations (with the line), another
  user's job, a taken job id; a job whose launcher vanished ends when its
  lease runs out, at both sites;
- a service that stops ends its jobs with a message at every site; one
  killed and restarted ends the jobs it carried (its peer names the
  restart) and serves new jobs at once.

Ranks run in the root namespace and reach the services over Unix sockets
(a file system path crosses namespaces); the WAN between the services
crosses gridwan.  Alpha's control endpoint is TCP inside its namespace, so
gridrun talks to it from there, as from a login node of the site.
"""

import atexit
import contextlib
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import time
import uuid

from harness import (BIN, SOURCE_DIR, TOOL, Failure, check, main,
                     make_certs, need_wan_devices, spawn, tail)
from wire import (DATA, ERR_BAD_FRAME, ERROR, LAST_CHUNK, frame, read_frame,
                  rank_session)

GRIDRUN = os.path.join(BIN, "gridrun")
FAKE_RSH = os.path.join(SOURCE_DIR, "tests", "integration", "gridrun",
                        "fake-rsh.sh")
USERS = ("alice", "bob", "carol")
ADMIN = "ops"  # service.admins: the site's operator
JOB_MEMORY = 16 << 20  # service.job_memory
CHUNK = 64 << 10       # wan.chunk_size
AUTH_OK, ERR_AUTH = 3, 3


class Services:
    """gridwan between two namespaces, a gridrelay service in each."""

    def __init__(self, delay="5ms", rate="500mbit", streams=4, chunk=CHUNK,
                 job_memory=JOB_MEMORY, extra=""):
        need_wan_devices([("ip", "iproute2")])
        tag = uuid.uuid4().hex[:6]
        self.ns = {"alpha": "gs%s-a" % tag, "beta": "gs%s-b" % tag}
        self.dir = tempfile.mkdtemp(prefix="gr-svc-")
        self.delay, self.rate = delay, rate
        self.streams, self.chunk, self.job_memory = streams, chunk, job_memory
        self.extra = extra  # more configuration text, e.g. "tcp = {...};"
        self.wan = None
        self.procs = {}
        self.addr = {}

    # -- files an operator writes ----------------------------------------

    def path(self, *parts):
        return os.path.join(self.dir, *parts)

    def write_configs(self):
        make_certs(self.path("wan"), ["alpha", "beta"])
        make_certs(self.path("users"), USERS + (ADMIN,))
        make_certs(self.path("others"), ["mallory"])
        for site, peer in (("alpha", "beta"), ("beta", "alpha")):
            control = ("%s:7443" % self.addr[site] if site == "alpha" else
                       "unix:" + self.path("beta-control.sock"))
            with open(self.path(site + ".conf"), "w") as f:
                f.write("""site = "%(site)s";
local = { unix = "%(dir)s/%(site)s.sock"; };
service = {
  control = "%(control)s";
  client_ca = "users/ca.crt";
  lease = 30;
  job_memory = %(job_memory)d;
  admins = "%(admin)s";
};
wan = { listen = "%(me)s:7500"; streams = %(streams)d;
        chunk_size = %(chunk)d; };
tls = { cert = "wan/%(site)s.crt"; key = "wan/%(site)s.key";
        ca = "wan/ca.crt"; };
http = { listen = "127.0.0.1:7600"; };
peers = ( { name = "%(peer)s"; address = "%(them)s:7500"; } );
%(extra)s
""" % {"site": site, "peer": peer, "dir": self.dir, "control": control,
                    "me": self.addr[site], "them": self.addr[peer],
                    "job_memory": self.job_memory, "streams": self.streams,
                    "admin": ADMIN,
                    "chunk": self.chunk, "extra": self.extra})

    # -- processes -------------------------------------------------------

    def __enter__(self):
        self.wan = subprocess.Popen(
            [os.path.join(BIN, "gridwan"), "--ns",
             "%s,%s" % (self.ns["alpha"], self.ns["beta"]), "--delay",
             self.delay, "--rate", self.rate],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        line = self.wan.stdout.readline()
        m = re.match(r"gridwan: ready .*addrs=(\S+)", line)
        check(m is not None, "gridwan not ready: %r" % line)
        a, b = m.group(1).split(",")[:2]
        self.addr = {"alpha": a, "beta": b}
        self.write_configs()
        for site in ("alpha", "beta"):
            self.start(site)
        self.wait_links()
        return self

    def __exit__(self, *exc):
        for site in list(self.procs):
            self.stop(site)
        if self.wan is not None and self.wan.poll() is None:
            self.wan.send_signal(signal.SIGTERM)
            self.wan.communicate(timeout=20)
        shutil.rmtree(self.dir, ignore_errors=True)

    def start(self, site):
        log = open(self.path(site + ".log"), "a")
        self.procs[site] = subprocess.Popen(
            ["ip", "netns", "exec", self.ns[site],
             os.path.join(BIN, "gridrelay"), "-c", self.path(site + ".conf")],
            stdout=log, stderr=subprocess.STDOUT)
        log.close()

    def stop(self, site, sig=signal.SIGTERM):
        proc = self.procs.pop(site)
        if proc.poll() is None:
            proc.send_signal(sig)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        return proc.returncode

    def log(self, site):
        with open(self.path(site + ".log")) as f:
            return f.read()

    def http(self, site, path):
        """GET an operations endpoint inside the site's namespace."""
        r = subprocess.run(["ip", "netns", "exec", self.ns[site], "curl",
                            "-sS", "--max-time", "5",
                            "http://127.0.0.1:7600" + path],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, timeout=15)
        check(r.returncode == 0, "curl %s %s: %s" % (site, path, r.stderr))
        return r.stdout

    def status(self, site):
        """/status as the site's operator sees it (every job)."""
        code, st = self.control(site, "GET", "/status", user=ADMIN)
        check(code == 200, "GET /status as %s at %s: %d" % (ADMIN, site, code))
        return st

    def wait_control(self, site, timeout=20):
        """Until a (re)started service answers on its control endpoint."""
        deadline = time.time() + timeout
        while True:
            try:
                self.status(site)
                return
            except OSError:  # not listening yet
                if time.time() > deadline:
                    raise Failure("%s's control endpoint not up:\n%s"
                                         % (site, tail(self.log(site))))
            time.sleep(0.1)

    def wait_links(self, timeout=20):
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                if all(self.status(s)["links"][0]["streams_up"] ==
                       self.streams
                       for s in ("alpha", "beta")):
                    return
            except Exception:  # not listening yet
                pass
            time.sleep(0.2)
        raise AssertionError("links not up:\n" + tail(self.log("alpha")) +
                             "\n" + tail(self.log("beta")))

    # -- launchers ---------------------------------------------------------

    def control_text(self, site, path, user):
        """GET `path` from a site's control endpoint as `user`: the body."""
        code, text = self.control(site, "GET", path, user=user, as_text=True)
        check(code == 200, "GET %s as %s at %s: %d" % (path, user, site, code))
        return text

    def control(self, site, method, path, body=None, user="alice",
                ca_dir="users", as_text=False):
        """One HTTPS request to a site's control endpoint with `user`'s
        client certificate (None: no certificate); (status, JSON), or
        (status, text) when `as_text`."""
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.load_verify_locations(self.path("wan", "ca.crt"))
        if user is not None:
            ctx.load_cert_chain(self.path(ca_dir, user + ".crt"),
                                self.path(ca_dir, user + ".key"))
        if site == "alpha":
            # TCP inside alpha's namespace: through a helper there.
            return self._control_in_ns(site, method, path, body, user, ca_dir,
                                       as_text)
        raw = socket.socket(socket.AF_UNIX)
        raw.settimeout(10)
        raw.connect(self.path("beta-control.sock"))
        with ctx.wrap_socket(raw, server_hostname=site) as s:
            data = (body or "").encode()
            s.sendall(("%s %s HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n"
                       "Connection: close\r\n\r\n" % (method, path, site,
                                                      len(data))).encode()
                      + data)
            reply = b""
            while True:
                part = s.recv(65536)
                if not part:
                    break
                reply += part
        head, _, payload = reply.partition(b"\r\n\r\n")
        if as_text:
            return int(head.split()[1]), payload.decode()
        return int(head.split()[1]), json.loads(payload or b"{}")

    def _control_in_ns(self, site, method, path, body, user, ca_dir,
                       as_text):
        args = ["ip", "netns", "exec", self.ns[site], "curl", "-sS",
                "--max-time", "10", "-o", "-", "-w", "\n%{http_code}",
                "--cacert", self.path("wan", "ca.crt"), "-X", method,
                "--resolve", "%s:7443:%s" % (site, self.addr[site])]
        if user is not None:
            args += ["--cert", self.path(ca_dir, user + ".crt"), "--key",
                     self.path(ca_dir, user + ".key")]
        if body is not None:
            args += ["--data-binary", body]
        r = subprocess.run(args + ["https://%s:7443%s" % (site, path)],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, timeout=20)
        if r.returncode != 0:
            raise ssl.SSLError(r.stderr.strip())
        payload, _, code = r.stdout.rpartition("\n")
        if as_text:
            return int(code), payload
        return int(code), json.loads(payload or "{}")

    def register(self, job_id, token, sizes=(2, 2), user="alice", lease=30,
                 sites=None):
        body = ("job_id = %dL; token = \"%s\"; lease = %d; sites = (%s);"
                % (job_id, token.hex(), lease, ", ".join(
                    "{ name = \"%s\"; first_rank = %d; rank_count = %d; }"
                    % (name, first, count) for name, first, count in
                    sites or (("alpha", 0, sizes[0]),
                              ("beta", sizes[0], sizes[1])))))
        for site in ("alpha", "beta"):
            code, reply = self.control(site, "POST", "/jobs", body, user)
            check(code == 201, "register %d at %s: %d %r" % (job_id, site,
                                                              code, reply))
        self.wait_ready(job_id, user)

    def wait_ready(self, job_id, user="alice", timeout=10):
        deadline = time.time() + timeout
        while time.time() < deadline:
            states = [self.control(s, "GET", "/jobs/%d" % job_id, user=user)
                      for s in ("alpha", "beta")]
            if all(code == 200 and j["state"] == "ready"
                   for code, j in states):
                return
            time.sleep(0.1)
        raise AssertionError("job %d not ready: %r" % (job_id, states))

    def clear_jobs(self, timeout=10):
        """End every job still registered, as its owner."""
        for site in ("alpha", "beta"):
            for job in self.status(site)["jobs"]:
                self.control(site, "DELETE", "/jobs/%d" % job["job_id"],
                             user=job["owner"])
        deadline = time.time() + timeout
        while any(self.status(s)["jobs"] for s in ("alpha", "beta")):
            check(time.time() < deadline, "jobs left: %r"
                  % [self.status(s)["jobs"] for s in ("alpha", "beta")])
            time.sleep(0.05)

    def wait_sessions(self, site, job_id, count, user="alice", timeout=10):
        deadline = time.time() + timeout
        while time.time() < deadline:
            code, st = self.control(site, "GET", "/jobs/%d" % job_id, user=user)
            if code == 200 and st["sessions"] == count:
                return
            time.sleep(0.05)
        raise AssertionError("job %d: %d sessions at %s, want %d"
                             % (job_id, st.get("sessions", -1), site, count))

    def machine_file(self, user):
        path = self.path("%s.machines" % user)
        with open(path, "w") as f:
            f.write("node-a cluster=alpha slots=2\n"
                    "gw-a cluster=alpha relay service=%s:7443\n"
                    "node-b cluster=beta slots=2\n"
                    "gw-b cluster=beta relay service=unix:%s\n"
                    % (self.addr["alpha"], self.path("beta-control.sock")))
        return path

    def gridrun(self, user, program, *args, np=4, timeout=120):
        """gridrun of `user` in alpha's namespace (its TCP control
        endpoint); returns the process (stdout and stderr together)."""
        return spawn(["ip", "netns", "exec", self.ns["alpha"], GRIDRUN,
                      "--timeout", str(timeout), "-f", self.machine_file(user),
                      "-n", str(np), "--rsh", FAKE_RSH,
                      "--service-cert", self.path("users", user + ".crt"),
                      "--service-key", self.path("users", user + ".key"),
                      "--service-ca", self.path("wan", "ca.crt"), "--",
                      os.path.join(BIN, program)] + list(args))

    def tool(self, site, token_file, job_id, rank, *args):
        return spawn([TOOL, args[0], "unix:" + self.path(site + ".sock"),
                      token_file, str(job_id), str(rank)] +
                     [str(a) for a in args[1:]])

    def token_file(self, name):
        token = os.urandom(32).hex().encode()
        path = self.path(name + ".token")
        with open(path, "wb") as f:
            f.write(token + b"\n")
        return token, path


_shared = None


@contextlib.contextmanager
def shared_services():
    """The services the cases that leave them as they found them share
    (setting them up costs seconds); each case starts with no job."""
    global _shared
    if _shared is None:
        _shared = Services().__enter__()
        atexit.register(_shared.__exit__)
    _shared.clear_jobs()
    yield _shared


def wait_out(proc, timeout=150):
    out, _ = proc.communicate(timeout=timeout)
    return proc.returncode, out


# ---- the tests ------------------------------------------------------------

def three_users_at_once():
    with shared_services() as svc:
        before = {s: svc.status(s)["links"][0] for s in ("alpha", "beta")}
        jobs = [svc.gridrun("alice", "coll_check"),
                svc.gridrun("bob", "p2p_check", "send_recv", "nonblocking",
                            "non_overtaking", "datatypes", "large"),
                svc.gridrun("carol", "coll_check")]
        for user, proc in zip(USERS, jobs):
            rc, out = wait_out(proc)
            check(rc == 0 and "FAIL" not in out and "OK " in out,
                  "%s's job exited %d:\n%s" % (user, rc, tail(out)))
        log = svc.log("alpha")
        for user in USERS:
            check(re.search(r"job \d+ \(%s\): ready" % user, log),
                  "alpha's log does not name %s's job:\n%s" % (user,
                                                               tail(log)))
            check(re.search(r"job \d+ \(%s\): ended: removed by its "
                            r"launcher \(%s\)" % (user, user), log),
                  "%s's job was not removed:\n%s" % (user, tail(log)))
        for site in ("alpha", "beta"):
            st = svc.status(site)
            link = st["links"][0]
            check(st["mode"] == "service" and st["jobs"] == [],
                  "%s still has jobs: %r" % (site, st["jobs"]))
            # One set of warm streams carried all three jobs.
            check(link["state"] == "up" and link["streams_up"] == 4 and
                  all(d["breaks"] == 0 for d in link["stream_detail"]) and
                  link["bytes_sent"] > before[site]["bytes_sent"],
                  "%s's link: %r" % (site, link))


def one_job_killed_mid_transfer():
    with shared_services() as svc:
        tok_a, file_a = svc.token_file("a")
        tok_b, file_b = svc.token_file("b")
        svc.register(1001, tok_a)
        svc.register(1002, tok_b, user="bob")
        sizes = "random:40:4M:7"
        recv_b = svc.tool("beta", file_b, 1002, 2, "recv", "--expect", 40,
                          "--sizes", sizes)
        recv_a = svc.tool("beta", file_a, 1001, 2, "recv", "--expect", 40,
                          "--sizes", sizes)
        send_a = svc.tool("alpha", file_a, 1001, 0, "send", "--to", 2,
                          "--sizes", sizes)
        send_b = svc.tool("alpha", file_b, 1002, 0, "send", "--to", 2,
                          "--sizes", sizes)
        time.sleep(0.5)
        send_a.kill()
        code, reply = svc.control("alpha", "DELETE", "/jobs/1001")
        check(code == 200 and reply["state"] == "ended", "DELETE: %r" % reply)
        out_a = recv_a.communicate(timeout=30)[0]
        check(recv_a.returncode != 0 and "job-ended" in out_a,
              "job 1001's receiver: %s" % out_a)
        out_b = send_b.communicate(timeout=120)[0]
        check(send_b.returncode == 0, "job 1002's sender: %s" % out_b)
        out_b = recv_b.communicate(timeout=120)[0]
        check(recv_b.returncode == 0 and out_b.rstrip().splitlines()[-1]
              .startswith("ok"), "job 1002's receiver: %s" % out_b)
        code, reply = svc.control("beta", "GET", "/jobs/1001")
        check(code == 404 and "ended at site alpha: removed by its launcher"
              in reply["error"], "beta on job 1001: %d %r" % (code, reply))
        code, reply = svc.control("beta", "GET", "/jobs/1002", user="bob")
        check(code == 200 and reply["state"] == "ready" and
              reply["bytes_to_ranks"] > 0, "job 1002 at beta: %r" % reply)


def pingpong_us(svc, user):
    """8-byte ping-pong between grid ranks 0 (alpha) and 2 (beta): the
    median half round trip in microseconds."""
    rc, out = wait_out(svc.gridrun(user, "gridcoll-mpibench", "pingpong",
                                   "--peer", "2", "--bytes", "8", "--iters",
                                   "100", "--csv"))
    rows = [l.split(",") for l in out.splitlines()
            if l.startswith("pingpong,")]
    check(rc == 0 and len(rows) == 1, "ping-pong exited %d:\n%s"
          % (rc, tail(out)))
    return float(rows[0][9])


def flood_does_not_stall_others():
    """Job F floods two ranks that do not read; its data stops at the
    budget (service.job_memory at the receiving service), and job P's
    ping-pong keeps within twice its solo latency."""
    with shared_services() as svc:
        solo = pingpong_us(svc, "bob")
        tok, tok_file = svc.token_file("f")
        svc.register(6001, tok)
        stalled = [svc.tool("beta", tok_file, 6001, r, "recv", "--expect",
                            1000, "--stall-ms", 120000) for r in (2, 3)]
        svc.wait_sessions("beta", 6001, 2)
        floods = [svc.tool("alpha", tok_file, 6001, r, "send", "--to", "2,3",
                           "--sizes", ",".join(["4M"] * 100)) for r in (0, 1)]
        held = 0
        deadline = time.time() + 30
        while time.time() < deadline:
            code, st = svc.control("beta", "GET", "/jobs/6001")
            if st["queue_bytes"] >= JOB_MEMORY - 2 * (CHUNK + 72):
                break
            time.sleep(0.2)
        time.sleep(1)  # whatever was still moving has landed
        code, st = svc.control("beta", "GET", "/jobs/6001")
        held = st["queue_bytes"]
        # The lone-chunk rule lets one chunk past a full budget.
        check(JOB_MEMORY // 2 <= held <= JOB_MEMORY + CHUNK + 72,
              "flood held %d bytes at beta (budget %d)" % (held, JOB_MEMORY))
        loaded = pingpong_us(svc, "carol")
        check(loaded <= 2 * solo, "ping-pong %.1f us during the flood, %.1f "
              "us alone" % (loaded, solo))
        for p in floods + stalled:
            p.kill()
            p.wait()
        print("flood: %d bytes held; ping-pong %.1f us alone, %.1f us "
              "beside the flood" % (held, solo, loaded))


def jobs_are_isolated():
    with shared_services() as svc:
        tok_a, file_a = svc.token_file("a")
        tok_b, file_b = svc.token_file("b")
        svc.register(2001, tok_a)
        svc.register(2002, tok_b, user="bob")
        # Job B's rank 2 waits for exactly one message, from its rank 0.
        recv_b = svc.tool("beta", file_b, 2002, 2, "recv", "--expect", 1,
                          "--sizes", "1K")
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(10)
        s.connect(svc.path("alpha.sock"))
        reply = rank_session(s, 2001, tok_a, 0)
        check(reply is not None and reply[0] == AUTH_OK, "A's rank 0: %r"
              % (reply,))
        s.sendall(frame(DATA, 2002, b"x" * 16, src=0, dst=2, msg_len=16,
                        flags=LAST_CHUNK))
        reply = read_frame(s)
        check(reply is not None and reply[0] == ERROR and
              reply[1] == ERR_BAD_FRAME and
              b"this session is job 2001" in reply[2],
              "cross-job frame: %r" % (reply,))
        check(read_frame(s) is None, "session not closed")
        # A's token does not open a session of B.
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(10)
        s.connect(svc.path("alpha.sock"))
        reply = rank_session(s, 2002, tok_a, 1)
        check(reply is not None and reply[0] == ERROR and
              reply[1] == ERR_AUTH and b"wrong job token" in reply[2],
              "B joined with A's token: %r" % (reply,))
        s.close()
        # Nothing reached B's rank 2: the one message it gets is B's own.
        send_b = svc.tool("alpha", file_b, 2002, 0, "send", "--to", 2,
                          "--sizes", "1K")
        check(send_b.communicate(timeout=30)[0] is not None and
              send_b.returncode == 0, "B's sender failed")
        out = recv_b.communicate(timeout=30)[0]
        check(recv_b.returncode == 0, "B's receiver: %s" % out)
        code, st = svc.control("beta", "GET", "/jobs/2002", user="bob")
        check(st["bytes_to_ranks"] == 1024, "B's rank got %r bytes"
              % st["bytes_to_ranks"])


def control_endpoint_refusals():
    with shared_services() as svc:
        tok, _ = svc.token_file("a")
        good = ("job_id = 3001; token = \"%s\"; sites = ( { name = \"alpha\";"
                " first_rank = 0; rank_count = 2; }, { name = \"beta\"; "
                "first_rank = 2; rank_count = 2; } );" % tok.hex())
        for site in ("alpha", "beta"):
            for user, ca_dir in ((None, "users"), ("mallory", "others")):
                try:
                    code, reply = svc.control(site, "POST", "/jobs", good,
                                              user, ca_dir)
                except (ssl.SSLError, OSError) as e:
                    continue  # the handshake failed: refused
                raise AssertionError("%s accepted %s: %d %r"
                                     % (site, user, code, reply))
        check(svc.status("beta")["jobs"] == [], "a job got in")
        cases = [
            ("job_id = 3001;\ntoken = 12;", 400, "line 2: 'token'"),
            ("job_id = 3001; token = \"%s\"; sites = ( { name = \"alpha\"; "
             "first_rank = 0; rank_count = 2; }, { name = \"gamma\"; "
             "first_rank = 2; rank_count = 2; } );" % tok.hex(), 400,
             "site gamma is not a peer of site beta"),
            ("job_id = 3001; token = \"%s\"; sites = ( { name = \"alpha\"; "
             "first_rank = 0; rank_count = 3; }, { name = \"beta\"; "
             "first_rank = 2; rank_count = 2; } );" % tok.hex(), 400,
             "must not overlap"),
            ("job_id = 3001;\ntoken = \"%s\";\nsites = ( { name = \"alpha\";"
             " first_rank = 0; rank_count = 2; } );" % tok.hex(), 400,
             "no ranks at site beta"),
        ]
        for body, want, text in cases:
            code, reply = svc.control("beta", "POST", "/jobs", body)
            check(code == want and text in reply.get("error", ""),
                  "%r: %d %r" % (body, code, reply))
        code, reply = svc.control("beta", "POST", "/jobs", good)
        check(code == 201 and reply["local"].startswith("unix:"),
              "good registration: %d %r" % (code, reply))
        code, reply = svc.control("beta", "POST", "/jobs", good, "bob")
        check(code == 409 and "already registered" in reply["error"],
              "taken job id: %d %r" % (code, reply))
        for method, path in (("GET", "/jobs/3001"), ("DELETE", "/jobs/3001"),
                             ("POST", "/jobs/3001/renew")):
            code, reply = svc.control("beta", method, path, user="bob")
            check(code == 404 and "no job 3001 of bob" in reply["error"],
                  "bob %s %s: %d %r" % (method, path, code, reply))
        code, reply = svc.control("beta", "GET", "/jobs", user="bob")
        check(code == 200 and reply["jobs"] == [], "bob sees %r" % reply)


def launcher_vanishes():
    with shared_services() as svc:
        tok, _ = svc.token_file("a")
        svc.register(4001, tok, lease=1)
        time.sleep(1.5)  # the services' tick checks leases every 100 ms
        for site in ("alpha", "beta"):
            code, reply = svc.control(site, "GET", "/jobs/4001")
            check(code == 404 and "did not renew the job within 1 s" in
                  reply["error"], "%s: %d %r" % (site, code, reply))


def fingerprint(pem):
    r = subprocess.run(["openssl", "x509", "-noout", "-fingerprint",
                        "-sha256"], input=pem, stdout=subprocess.PIPE,
                       text=True, check=True)
    return r.stdout.strip()


def wan_certificate(svc, site, peer):
    """The certificate `site` presents to a new WAN connection now."""
    r = subprocess.run(["ip", "netns", "exec", svc.ns[peer], "openssl",
                        "s_client", "-connect", "%s:7500" % svc.addr[site],
                        "-cert", svc.path("wan", peer + ".crt"), "-key",
                        svc.path("wan", peer + ".key"), "-CAfile",
                        svc.path("wan", "ca.crt")],
                       stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL, text=True, timeout=20)
    m = re.search(r"-----BEGIN CERTIFICATE-----.*?-----END CERTIFICATE-----",
                  r.stdout, re.S)
    check(m is not None, "no certificate from %s: %s" % (site, r.stdout))
    return fingerprint(m.group(0))


def sighup_during_a_job():
    """SIGHUP with a renewed certificate, a new peer and a new log level
    while a job streams: the job goes on untouched, new connections get the
    new certificate; a broken file changes nothing."""
    with Services() as svc:
        tok, tok_file = svc.token_file("a")
        svc.register(7001, tok)
        sizes = "random:60:2M:11"
        recv = svc.tool("beta", tok_file, 7001, 2, "recv", "--expect", 60,
                        "--sizes", sizes)
        send = svc.tool("alpha", tok_file, 7001, 0, "send", "--to", 2,
                        "--sizes", sizes)
        old = wan_certificate(svc, "alpha", "beta")
        for ext in (".crt", ".key"):
            os.unlink(svc.path("wan", "alpha" + ext))
        make_certs(svc.path("wan"), ["alpha"])
        with open(svc.path("wan", "alpha.crt")) as f:
            new = fingerprint(f.read())
        check(new != old, "the certificate was not renewed")
        conf = svc.path("alpha.conf")
        with open(conf) as f:
            text = f.read()
        with open(conf, "w") as f:
            f.write(text.replace("peers = (", "log = { level = \"debug\"; };\n"
                                 "peers = ( { name = \"gamma\"; connect = "
                                 "\"listen\"; },"))
        svc.procs["alpha"].send_signal(signal.SIGHUP)
        out = send.communicate(timeout=120)[0]
        check(send.returncode == 0, "sender: %s" % out)
        out = recv.communicate(timeout=120)[0]
        check(recv.returncode == 0, "receiver: %s" % out)
        log = svc.log("alpha")
        check("SIGHUP: new peer gamma" in log and "SIGHUP: reloaded" in log
              and "(log level debug, certificates re-read, 2 peer(s), 1 "
              "job(s) kept)" in log, tail(log))
        check(wan_certificate(svc, "alpha", "beta") == new,
              "a new connection still gets the old certificate")
        links = {l["peer"]: l for l in svc.status("alpha")["links"]}
        check(links["beta"]["streams_up"] == 4 and "gamma" in links,
              "links after SIGHUP: %r" % links)
        with open(conf, "w") as f:
            f.write(text + "\nwan = { streams = 0; };\n")
        svc.procs["alpha"].send_signal(signal.SIGHUP)
        deadline = time.time() + 10
        while "nothing changed" not in svc.log("alpha"):
            check(time.time() < deadline, "no reaction to a broken file")
            time.sleep(0.1)
        log = svc.log("alpha")
        check(re.search(r"SIGHUP: %s:\d+: " % re.escape(conf), log),
              "the error does not name file:line:\n%s" % tail(log))
        code, st = svc.control("alpha", "GET", "/jobs/7001")
        check(code == 200 and st["state"] == "ready", "job after: %r" % st)


def service_stops_and_restarts():
    with Services() as svc:
        tok, tok_file = svc.token_file("a")
        svc.register(5001, tok)
        recv = svc.tool("beta", tok_file, 5001, 2, "recv", "--expect", 1)
        svc.wait_sessions("beta", 5001, 1)
        svc.stop("alpha")
        out = recv.communicate(timeout=30)[0]
        check(recv.returncode != 0 and "the gridrelay service of site alpha "
              "is stopping" in out, "beta's rank: %s" % out)
        check("job 5001 (alice): ended: ended at site alpha: the gridrelay "
              "service of site alpha is stopping" in svc.log("beta"),
              tail(svc.log("beta")))
        svc.start("alpha")
        svc.wait_links()
        # Killed and restarted: the peer sees a new incarnation and ends
        # the jobs it carried; new jobs run at once.
        svc.register(5002, tok)
        recv = svc.tool("beta", tok_file, 5002, 2, "recv", "--expect", 1)
        svc.wait_sessions("beta", 5002, 1)
        svc.stop("alpha", signal.SIGKILL)
        svc.start("alpha")
        out = recv.communicate(timeout=60)[0]
        check(recv.returncode != 0 and "peer relay restarted" in out,
              "beta's rank after alpha's restart: %s" % out)
        svc.wait_links()
        rc, out = wait_out(svc.gridrun("alice", "grid_hello"))
        check(rc == 0 and "rank 3 of 4" in out, "job after the restart: %s"
              % tail(out))


def unlinked_program_never_joins():
    """The join check in service mode: a program without libgridcoll runs
    as one MPICH job per site and never opens a session with its site's
    service; gridrun asks each service's /jobs/ID, exits 125 naming the
    ranks, and no job is left registered."""
    with shared_services() as svc:
        rc, out = wait_out(svc.gridrun("alice", "grid_hello_plain"))
        named = re.findall(r"^gridrun: site (alpha|beta): ranks (\S+) never "
                           r"joined the grid \(no session with the site's "
                           r"relay from MPI_Init\)$", out, re.M)
        check(rc == 125 and named and
              set(named) <= {("alpha", "0-1"), ("beta", "2-3")},
              "exit %d: %s" % (rc, tail(out)))
        check(not any(svc.status(site)["jobs"] for site in ("alpha", "beta")),
              "jobs left: %r" % [svc.status(site)["jobs"]
                                 for site in ("alpha", "beta")])


if __name__ == "__main__":
    main([("three_users_at_once", three_users_at_once),
          ("one_job_killed_mid_transfer", one_job_killed_mid_transfer),
          ("jobs_are_isolated", jobs_are_isolated),
          ("flood_does_not_stall_others", flood_does_not_stall_others),
          ("control_endpoint_refusals", control_endpoint_refusals),
          ("launcher_vanishes", launcher_vanishes),
          ("sighup_during_a_job", sighup_during_a_job),
          ("service_stops_and_restarts", service_stops_and_restarts),
          ("unlinked_program_never_joins", unlinked_program_never_joins)])
