#!/usr/bin/env python3
"""The gateway service among tenants (issue 25): a hostile tenant and an
outsider on the network, against two gridrelay services in namespaces
behind gridwan (test_service.Services) and against per-job relays.  Each
case is an attack that worked before the fixes; each asserts that nothing
but the attacker's own request was affected.

- a registration body that includes files is refused before any file is
  opened, whatever the path (a directory, a FIFO, one that exists or not);
- a job id taken by another tenant: the squatter is refused at the second
  site and the victim's job goes on, in either order;
- sanity limits: 16 M ranks, one owner taking every slot, a 46 MiB
  header, idle HTTP connections, a rank that sends PINGs and never reads,
  a flood of connections that never finish their handshake;
- /status and /metrics show a tenant only its own jobs, an outsider only
  aggregates, the operator everything;
- a job registered just after a peer service restarted survives;
- per-job relays: one unauthenticated HELLO with a fresh epoch changes
  nothing; refused WAN streams get an ERROR frame; a certificate naming
  the site only in its CN is refused; a second relay on a live relay's
  configuration leaves its sockets alone; a WAN outage shorter than
  peer_give_up_ms costs a pause, a longer one ends the job naming the link
  and how long it was down;
- a soak: two tenants' ping-pong while a third misbehaves (registrations,
  malformed requests, handshake floods, PING floods) stays within 20 % of
  its quiet latency and every byte arrives.
"""

import json
import os
import re
import signal
import socket
import ssl
import statistics
import subprocess
import tempfile
import threading
import time

from harness import BIN, SANITIZED, Grid, check, finish, main, tail
from test_service import (ADMIN, Services, pingpong_us, shared_services,
                          wait_out)
from wire import (AUTH_OK, ERROR, HELLO, frame, hello_payload, read_frame,
                  rank_session)

PING = 7
ERR_AUTH = 3
ROLE_RELAY = 2


# ASan keeps freed memory resident in a quarantine (256 MiB by default) to
# catch uses after free; this suite bounds the services' resident size, so
# under ASan the processes it starts keep 1 MiB.
if SANITIZED:
    os.environ["ASAN_OPTIONS"] = (os.environ.get("ASAN_OPTIONS", "") +
                                  ":quarantine_size_mb=1")


def body(job_id, token, sites=(("alpha", 0, 2), ("beta", 2, 2)), lease=30):
    return ("job_id = %dL; token = \"%s\"; lease = %d; sites = (%s);"
            % (job_id, token.hex(), lease, ", ".join(
                "{ name = \"%s\"; first_rank = %d; rank_count = %d; }"
                % s for s in sites)))


def rss_kb(pid):
    """Resident memory of the relay under `ip netns exec` (its child)."""
    children = open("/proc/%d/task/%d/children" % (pid, pid)).read().split()
    target = int(children[0]) if children else pid
    with open("/proc/%d/status" % target) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS for %d" % target)


def alive(svc, site):
    check(svc.procs[site].poll() is None, "the %s service exited:\n%s"
          % (site, tail(svc.log(site))))


# ---- the control endpoint ---------------------------------------------------

def registration_cannot_include_files():
    with shared_services() as svc:
        fifo = svc.path("fifo")
        if not os.path.exists(fifo):
            os.mkfifo(fifo)
        answers = set()
        for path in ("/", fifo, "/etc/hostname", "/nonexistent"):
            start = time.time()
            code, reply = svc.control(
                "beta", "POST", "/jobs",
                "@include \"%s\"\n" % path + body(77, os.urandom(16)))
            check(time.time() - start < 3, "@include %s took %.1f s"
                  % (path, time.time() - start))
            check(code == 400 and reply["error"] ==
                  "line 1: '@' directives (such as @include) are not "
                  "accepted in a registration",
                  "@include %s: %d %r" % (path, code, reply))
            answers.add(reply["error"])
        # The same answer whatever the path: nothing tells what exists.
        check(len(answers) == 1, "answers differ: %r" % answers)
        alive(svc, "beta")
        code, _ = svc.control("beta", "GET", "/jobs/77")
        check(code == 404, "a job 77 exists")
        # A long string where the grammar takes none: libconfig leaked it
        # (60 KB a request); the service's own parser holds nothing.
        # The first hundred set the heap's high-water mark (TLS, buffers;
        # under ASan they fill its quarantine).
        leaky = "job_id = 1 \"%s\"" % ("a" * 60000)
        for n in (100, 200):
            rss = rss_kb(svc.procs["beta"].pid)
            for _ in range(n):
                code, reply = svc.control("beta", "POST", "/jobs", leaky)
        check(code == 400 and reply["error"] ==
              "line 1: a string longer than 512 bytes", "%d %r" % (code, reply))
        grown = rss_kb(svc.procs["beta"].pid) - rss
        check(grown < (3072 if SANITIZED else 2048),
              "200 malformed bodies grew beta by %d KiB" % grown)


def squatter_cannot_end_a_job():
    with shared_services() as svc:
        alice, bob = os.urandom(32), os.urandom(32)
        # Alice's launcher registered at alpha; bob takes the id at beta.
        code, _ = svc.control("alpha", "POST", "/jobs", body(501, alice))
        check(code == 201, "alice at alpha: %d" % code)
        time.sleep(0.3)  # alpha's announcement reaches beta
        code, reply = svc.control("beta", "POST", "/jobs", body(501, bob),
                                  user="bob")
        check(code == 409 and reply["error"] ==
              "job id 501 is in use at site alpha by another job (a "
              "different job token): register under another id",
              "bob at beta: %d %r" % (code, reply))
        code, reply = svc.control("alpha", "GET", "/jobs/501")
        check(code == 200 and reply["state"] == "waiting",
              "alice's job after bob's try: %d %r" % (code, reply))
        code, _ = svc.control("beta", "POST", "/jobs", body(501, alice))
        check(code == 201, "alice at beta: %d" % code)
        svc.wait_ready(501)

        # The other way round: bob at beta first; alice's launcher is told
        # at alpha, and bob's job is not touched either.
        code, _ = svc.control("beta", "POST", "/jobs", body(502, bob),
                              user="bob")
        check(code == 201, "bob at beta: %d" % code)
        time.sleep(0.3)
        code, reply = svc.control("alpha", "POST", "/jobs", body(502, alice))
        check(code == 409 and reply["error"].startswith(
            "job id 502 is in use at site beta by another job"),
            "alice at alpha: %d %r" % (code, reply))
        code, reply = svc.control("beta", "GET", "/jobs/502", user="bob")
        check(code == 200 and reply["state"] == "waiting",
              "bob's job 502: %d %r" % (code, reply))
        code, reply = svc.control("alpha", "GET", "/jobs/501")
        check(code == 200 and reply["state"] == "ready",
              "alice's job 501: %d %r" % (code, reply))
        for site in ("alpha", "beta"):
            check("two launchers" not in svc.log(site), "a job was ended")


def sanity_limits():
    with shared_services() as svc:
        rss = rss_kb(svc.procs["beta"].pid)
        start = time.time()
        code, reply = svc.control("beta", "POST", "/jobs", body(
            601, os.urandom(16), sites=(("alpha", 0, 1),
                                        ("beta", 1, 16777215))))
        check(code == 400 and "more than service.max_ranks = 65536" in
              reply["error"] and time.time() - start < 3,
              "16 M ranks: %d %r" % (code, reply))
        check(rss_kb(svc.procs["beta"].pid) < rss + 8192,
              "16 M ranks cost memory")
        # One owner may not take every slot (owner_jobs = 16 by default).
        ids = []
        for i in range(16):
            code, _ = svc.control("beta", "POST", "/jobs",
                                  body(610 + i, os.urandom(16)), user="bob")
            check(code == 201, "bob's job %d: %d" % (i, code))
            ids.append(610 + i)
        code, reply = svc.control("beta", "POST", "/jobs",
                                  body(630, os.urandom(16)), user="bob")
        check(code == 429 and reply["error"] ==
              "bob has 16 jobs registered here: service.owner_jobs",
              "bob's 17th: %d %r" % (code, reply))
        code, _ = svc.control("beta", "POST", "/jobs",
                              body(631, os.urandom(16)), user="carol")
        check(code == 201, "carol after bob's quota: %d" % code)
        metrics = svc.control_text("beta", "/metrics", ADMIN)
        check('gridrelay_owner_jobs{owner="bob"} 16' in metrics,
              "no per-owner metric:\n%s" % metrics[:2000])

        # Headers of any size: refused, the service stays small.
        rss = rss_kb(svc.procs["beta"].pid)
        big = "X-Junk: " + "a" * (46 << 20) + "\r\n"
        r = subprocess.run(
            ["ip", "netns", "exec", svc.ns["beta"], "python3", "-c",
             "import socket,sys; s=socket.create_connection(('127.0.0.1',"
             "7600)); s.settimeout(10)\n"
             "try:\n s.sendall(b'GET /status HTTP/1.1\\r\\n' + sys.stdin"
             ".buffer.read())\nexcept OSError: pass\n"
             "try:\n print(s.recv(100))\nexcept OSError as e: print(e)"],
            input=big.encode(), stdout=subprocess.PIPE, timeout=60)
        check(b"200 OK" not in r.stdout, "a 46 MiB header was read")
        # Reading stops at what one request may hold (13 MB were read
        # before the 400 when only evhttp's header limit applied).
        grown = rss_kb(svc.procs["beta"].pid) - rss
        check(grown < 4096, "a 46 MiB header cost %d KiB" % grown)
        alive(svc, "beta")


def connection_floods():
    """Idle HTTP connections, handshakes never finished, and a rank that
    sends PINGs and never reads: each bounded, none stalls a real job."""
    with shared_services() as svc:
        # Idle connections to the operations endpoint are closed.
        script = (
            "import socket,time\n"
            "socks=[socket.create_connection(('127.0.0.1',7600)) "
            "for _ in range(100)]\n"
            "time.sleep(13)\n"
            "closed=0\n"
            "for s in socks:\n"
            " s.settimeout(0.2)\n"
            " try:\n  closed += s.recv(1) == b''\n"
            " except OSError: pass\n"
            "print(closed)\n")
        idle = subprocess.Popen(["ip", "netns", "exec", svc.ns["beta"],
                                 "python3", "-c", script],
                                stdout=subprocess.PIPE, text=True)
        # Handshakes never finished, on the ranks' socket.
        waiting = []
        for _ in range(300):
            s = socket.socket(socket.AF_UNIX)
            s.connect(svc.path("beta.sock"))
            waiting.append(s)
        time.sleep(0.5)
        metrics = svc.control_text("beta", "/metrics", ADMIN)
        m = re.search(r"^gridrelay_connections_refused_total (\d+)$",
                      metrics, re.M)
        check(m and int(m.group(1)) >= 44, "no handshake refused:\n%s"
              % metrics[:1500])
        for s in waiting:
            s.close()
        # A rank that sends PINGs and never reads.
        token, tfile = svc.token_file("ping")
        svc.register(701, token)
        flood = socket.socket(socket.AF_UNIX)
        flood.connect(svc.path("beta.sock"))
        reply = rank_session(flood, 701, token, 2)
        check(reply[0] == AUTH_OK, "flooder not admitted: %r" % (reply,))
        rss = rss_kb(svc.procs["beta"].pid)
        ping = frame(PING, 701)
        flood.setblocking(False)

        def pings_for(seconds):
            sent = 0
            deadline = time.time() + seconds
            while time.time() < deadline:
                try:
                    sent += flood.send(ping * 256) // len(ping)
                except BlockingIOError:
                    time.sleep(0.01)
            return sent

        sent = pings_for(4)
        first = rss_kb(svc.procs["beta"].pid) - rss
        sent += pings_for(3)
        grown = rss_kb(svc.procs["beta"].pid) - rss
        # The answers stop at flow.session_high_watermark (16 MiB) and
        # stay there, however long the rank goes on.  Seen: 17.5 MiB; under
        # ASan up to 32.5 MiB (shadow memory, redzones, the quarantine).
        bound = (48 if SANITIZED else 32) << 10
        check(grown < bound and grown - first < 1024,
              "%d PINGs unread grew the service by %d KiB (%d after 4 s)"
              % (sent, grown, first))
        flood.close()
        out = idle.communicate(timeout=30)[0]
        # The first limits.http_connections (64) were taken and closed
        # after 10 s idle; the rest waited in the backlog meanwhile.
        check(int(out.strip() or 0) >= 64, "idle connections kept: %s closed"
              % out)
        alive(svc, "beta")
        # And a real job still runs.
        rc, out = wait_out(svc.gridrun("carol", "coll_check"))
        check(rc == 0 and "FAIL" not in out, "carol's job after the floods:"
              "\n%s" % tail(out))


def tenants_see_only_their_jobs():
    with shared_services() as svc:
        tok_a, tok_b = os.urandom(32), os.urandom(32)
        svc.register(801, tok_a, user="alice")
        svc.register(802, tok_b, user="bob")
        public = json.loads(svc.http("beta", "/status"))
        check(public["jobs"] == [] and public["job_count"] == 2,
              "the open endpoint lists jobs: %r" % public)
        text = svc.http("beta", "/metrics")
        check("job=" not in text and "alice" not in text and "bob" not in
              text and re.search(r"^gridrelay_jobs 2$", text, re.M),
              "the open /metrics shows tenants:\n%s" % text[:2000])
        code, st = svc.control("beta", "GET", "/status", user="bob")
        check(code == 200 and [j["job_id"] for j in st["jobs"]] == [802],
              "bob's /status: %r" % st.get("jobs"))
        text = svc.control_text("beta", "/metrics", "bob")
        check('job="802"' in text and 'job="801"' not in text and
              "alice" not in text, "bob's /metrics:\n%s" % text[:2000])
        code, st = svc.control("beta", "GET", "/jobs", user=ADMIN)
        check(sorted(j["job_id"] for j in st["jobs"]) == [801, 802],
              "the operator's GET /jobs: %r" % st)
        code, _ = svc.control("beta", "DELETE", "/jobs/801", user="bob")
        check(code == 404, "bob removed alice's job: %d" % code)
        code, reply = svc.control("beta", "DELETE", "/jobs/801", user=ADMIN)
        check(code == 200, "the operator's DELETE: %d" % code)
        time.sleep(0.3)
        code, reply = svc.control("alpha", "GET", "/jobs/801")
        check(code == 404 and "removed by the site's operator (ops)" in
              reply["error"], "alice at alpha: %d %r" % (code, reply))


def job_after_peer_restart():
    with Services() as svc:
        svc.stop("beta", signal.SIGKILL)
        svc.start("beta")
        svc.wait_control("beta")
        token, tfile = svc.token_file("r")
        # Registered as soon as beta answers, while alpha may still hold
        # the old link.
        svc.register(901, token)
        time.sleep(2)
        code, reply = svc.control("alpha", "GET", "/jobs/901")
        check(code == 200 and reply["state"] == "ready",
              "job 901 after beta's restart: %d %r" % (code, reply))
        recv = svc.tool("beta", tfile, 901, 2, "recv", "--expect", 4,
                        "--sizes", "random:4:1M:3")
        send = svc.tool("alpha", tfile, 901, 0, "send", "--to", 2,
                        "--sizes", "random:4:1M:3")
        out = send.communicate(timeout=60)[0]
        check(send.returncode == 0, "sender: %s" % out)
        out = recv.communicate(timeout=60)[0]
        check(recv.returncode == 0, "receiver: %s" % out)


# ---- per-job relays ---------------------------------------------------------

def relay_hello(name, nonce, epoch, index=0, count=4):
    payload = bytearray(hello_payload(nonce, role=ROLE_RELAY))
    # version_min, version_max, caps, role, index, count, chunk, epoch
    payload[12:16] = index.to_bytes(4, "little")
    payload[16:20] = count.to_bytes(4, "little")
    payload[24:32] = epoch.to_bytes(8, "little")
    raw = name.encode()
    payload[72:72 + len(raw)] = raw
    return bytes(payload)


def small_transfer(g):
    a, b = g.sites
    recv = g.tool("recv", b, 1, "--expect", 3, "--sizes", "random:3:1M:9")
    send = g.tool("send", a, 0, "--to", 1, "--sizes", "random:3:1M:9")
    finish(send)
    finish(recv)


def unauthenticated_hello_changes_nothing():
    with Grid(sizes=(1, 1), tls=False) as g:
        g.start()
        a, b = g.sites
        before = b.status()["links"][0]
        # beta listens (alpha dials): one HELLO as alpha, a fresh epoch,
        # and no AUTH.
        s = socket.create_connection(("127.0.0.1", b.wan_port))
        s.sendall(frame(HELLO, g.job_id, relay_hello("alpha", os.urandom(32),
                                                     12345, 0, 4)))
        reply = read_frame(s)
        check(reply is not None and reply[0] == HELLO, "no HELLO back")
        time.sleep(0.5)
        link = b.status()["links"][0]
        check(link["streams_up"] == before["streams_up"] == 4 and
              all(d["breaks"] == 0 for d in link["stream_detail"]),
              "an unauthenticated HELLO changed the link: %r" % link)
        # A wrong AUTH: refused with an ERROR, still nothing changed.
        s.sendall(frame(2, g.job_id, b"\0" * 32))
        reply = read_frame(s)
        check(reply is not None and reply[0] == ERROR and reply[1] ==
              ERR_AUTH, "wrong AUTH answered %r" % (reply,))
        s.close()
        check("restarted" not in b.log(), "beta saw a restart:\n%s"
              % tail(b.log()))
        small_transfer(g)
        # An unknown site gets an ERROR frame too.
        s = socket.create_connection(("127.0.0.1", b.wan_port))
        s.sendall(frame(HELLO, g.job_id, relay_hello("gamma", os.urandom(32),
                                                     7)))
        reply = read_frame(s)
        check(reply is not None and reply[0] == ERROR and b"unknown site" in
              reply[2], "unknown site answered %r" % (reply,))
        s.close()


def per_job_relay_http_limits():
    """The operations endpoint of a per-job relay under gridrun keeps the
    service's bounds: idle connections close, the listener pauses at
    limits.http_connections, oversized headers are refused, and the job's
    data goes on meanwhile."""
    with Grid(sizes=(1, 1), tls=False) as g:
        g.start()
        a, b = g.sites
        idle = [socket.create_connection(("127.0.0.1", b.http_port))
                for _ in range(100)]
        # One request with 9 KiB of headers on a connection of its own.
        big = socket.create_connection(("127.0.0.1", a.http_port))
        big.sendall(b"GET /status HTTP/1.1\r\nHost: x\r\nX-Pad: " +
                    b"p" * 9216 + b"\r\n\r\n")
        big.settimeout(5)
        answer = big.recv(200)
        check(answer.startswith(b"HTTP/1.1 400 "),
              "9 KiB of headers answered %r" % answer[:80])
        big.close()
        # Below the limit, the open connections show in alpha's metrics.
        few = [socket.create_connection(("127.0.0.1", a.http_port))
               for _ in range(30)]
        time.sleep(0.3)
        m = re.search(r'^gridrelay_http_connections\{endpoint="operations"\} '
                      r'(\d+)$', a.http("/metrics"), re.M)
        check(m and int(m.group(1)) == 31, "alpha's HTTP connections: %s"
              % (m and m.group(0)))
        for s in few:
            s.close()
        small_transfer(g)
        # The first limits.http_connections (64) were taken and close after
        # 10 s idle; then the listener takes the backlog and answers again.
        time.sleep(11)
        closed = 0
        for s in idle:
            s.settimeout(0.2)
            try:
                closed += s.recv(1) == b""
            except OSError:
                pass
            s.close()
        check(closed >= 64, "idle connections kept: %d of 100 closed" % closed)
        check(b.status()["links"][0]["streams_up"] == 4,
              "beta's link after the idle connections: %r"
              % b.status()["links"][0])


def certificate_without_san_is_refused():
    with Grid(sizes=(1, 1), tls=True) as g:
        g.start()
        a, b = g.sites
        d = tempfile.mkdtemp(prefix="gr-cn-", dir=g.dir)
        ca = os.path.join(g.cert_dir, "ca")
        subprocess.run(["openssl", "req", "-new", "-newkey", "ec",
                        "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                        "-subj", "/CN=alpha", "-keyout", d + "/k.pem",
                        "-out", d + "/r.csr"], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        subprocess.run(["openssl", "x509", "-req", "-in", d + "/r.csr",
                        "-CA", ca + ".crt", "-CAkey", ca + ".key",
                        "-CAcreateserial", "-days", "1", "-out",
                        d + "/c.pem"], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.load_verify_locations(ca + ".crt")
        ctx.load_cert_chain(d + "/c.pem", d + "/k.pem")
        raw = socket.create_connection(("127.0.0.1", b.wan_port))
        with ctx.wrap_socket(raw) as s:
            s.sendall(frame(HELLO, g.job_id,
                            relay_hello("alpha", os.urandom(32), 99)))
            reply = read_frame(s)
        check(reply is not None and reply[0] == ERROR and reply[1] ==
              ERR_AUTH and b"certificate does not match site" in reply[2],
              "CN-only certificate answered %r" % (reply,))
        small_transfer(g)


def second_relay_leaves_sockets_alone():
    with Grid(sizes=(1, 1), tls=False) as g:
        g.start()
        a = g.sites[0]
        r = subprocess.run([os.path.join(BIN, "gridrelay"), "-c",
                            a.config_path], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=20)
        log = r.stdout + a.log()
        check(r.returncode != 0 and "another relay is listening there" in
              log, "second relay: %d\n%s" % (r.returncode, tail(log)))
        check(os.path.exists(a.socket_path), "the live socket is gone")
        small_transfer(g)


def outage_within_give_up():
    with Grid(sizes=(1, 1), tls=False, give_up_ms=6000,
              liveness="stream_timeout_ms = 1000; ping_interval_ms = 300;"
              ) as g:
        g.start()
        a, b = g.sites
        sizes = "random:6:2M:5"
        recv = g.tool("recv", b, 1, "--expect", 6, "--sizes", sizes)
        send = g.tool("send", a, 0, "--to", 1, "--sizes", sizes)
        time.sleep(0.3)
        b.proc.send_signal(signal.SIGSTOP)
        time.sleep(3)  # longer than stream_timeout_ms, shorter than give-up
        b.proc.send_signal(signal.SIGCONT)
        finish(send, timeout=60)
        finish(recv, timeout=60)
        check("stream 0 down" in a.log() or "down: no traffic" in a.log(),
              "no stream timed out: the outage was not one:\n%s"
              % tail(a.log()))
        check("giving the peer up" not in a.log(), "alpha gave up:\n%s"
              % tail(a.log()))
        # Longer than peer_give_up_ms: the ranks learn which link and for
        # how long.
        recv = g.tool("recv", a, 0, "--expect", 1, "--sizes", "random:1:8:1")
        a.wait_rank_connected(0, recv)
        b.proc.send_signal(signal.SIGSTOP)
        try:
            out = finish(recv, timeout=30, expect_ok=False)
        finally:
            b.proc.send_signal(signal.SIGCONT)
        check(recv.returncode != 0 and re.search(
            r"link beta down for [0-9.]+ s \(liveness.peer_give_up_ms = "
            r"6000\)", out), "rank 0 after a long outage:\n%s" % out)


# ---- a soak ----------------------------------------------------------------

def misbehave(svc, stop):
    """bob, the whole time: registrations over quota, malformed bodies,
    includes, handshake floods, PINGs he never reads."""
    token = os.urandom(16)
    i = 0
    while not stop.is_set():
        i += 1
        svc.control("beta", "POST", "/jobs",
                    "@include \"/\"\n" if i % 3 == 0 else
                    body(5000 + i % 40, token), user="bob")
        socks = []
        for _ in range(20):
            s = socket.socket(socket.AF_UNIX)
            try:
                s.connect(svc.path("beta.sock"))
                s.sendall(frame(PING, 5000) * 64)
            except OSError:
                pass
            socks.append(s)
        # Paced: the machine running the test has two cores, and what is
        # measured is the service's isolation, not CPU contention.
        time.sleep(0.2)
        for s in socks:
            s.close()


def soak_with_a_misbehaving_tenant():
    with shared_services() as svc:
        # Quiet and busy rounds take turns, so that the load of whatever
        # else runs on the machine (CI runs three build trees side by side)
        # falls on both alike.
        quiet, busy = [], []
        for last in (False, False, True):
            quiet.append(pingpong_us(svc, "alice"))
            stop = threading.Event()
            bad = threading.Thread(target=misbehave, args=(svc, stop))
            bad.start()
            try:
                busy.append(pingpong_us(svc, "alice"))
                if last:
                    rc, out = wait_out(svc.gridrun("carol", "coll_check"))
            finally:
                stop.set()
                bad.join(60)
        check(rc == 0 and "FAIL" not in out, "carol's job beside bob:\n%s"
              % tail(out))
        ratio = statistics.median(busy) / statistics.median(quiet)
        print("soak: 8-byte half round trip quiet %s us, beside bob %s us, "
              "ratio %.3f" % (quiet, busy, ratio))
        check(ratio <= 1.2, "latency beside bob %.2f x quiet" % ratio)
        alive(svc, "alpha")
        alive(svc, "beta")


if __name__ == "__main__":
    main([("registration_cannot_include_files",
           registration_cannot_include_files),
          ("squatter_cannot_end_a_job", squatter_cannot_end_a_job),
          ("sanity_limits", sanity_limits),
          ("connection_floods", connection_floods),
          ("tenants_see_only_their_jobs", tenants_see_only_their_jobs),
          ("job_after_peer_restart", job_after_peer_restart),
          ("unauthenticated_hello_changes_nothing",
           unauthenticated_hello_changes_nothing),
          ("per_job_relay_http_limits", per_job_relay_http_limits),
          ("certificate_without_san_is_refused",
           certificate_without_san_is_refused),
          ("second_relay_leaves_sockets_alone",
           second_relay_leaves_sockets_alone),
          ("outage_within_give_up", outage_within_give_up),
          ("soak_with_a_misbehaving_tenant", soak_with_a_misbehaving_tenant)])
