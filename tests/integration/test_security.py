#!/usr/bin/env python3
"""Wrong tokens, wrong certificates, plaintext peers: refused, logged, and
the relay keeps serving everyone else."""

import os
import time

from harness import Grid, check, finish, main, make_certs, spawn, TOOL


def wait_for(predicate, what, timeout=10):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError("timed out waiting for " + what)


def good_transfer(g, src_site, src, dst_site, dst):
    recv = g.tool("recv", dst_site, dst, "--expect", 2, "--sizes", "1,300K")
    send = g.tool("send", src_site, src, "--to", dst, "--sizes", "1,300K")
    finish(send)
    finish(recv)


def wrong_token():
    with Grid(sizes=(2, 1)) as g:
        g.start()
        a, b = g.sites
        bad = os.path.join(g.dir, "wrong.token")
        with open(bad, "w") as f:
            f.write("not-the-job-token\n")
        proc = spawn([TOOL, "send", a.endpoint, bad, str(g.job_id), "0",
                      "--to", "2", "--sizes", "1"])
        out = finish(proc, expect_ok=False)
        check(proc.returncode != 0, "wrong token accepted: " + out)
        check("relay refused" in out and "auth" in out and
              "wrong job token" in out, "unclear client error: " + out)
        check("session from local-unix refused: auth: wrong job token" in
              a.log(), "refusal not logged:\n" + a.log())
        check(a.status()["sessions_refused"] == 1, "refusal not counted")
        good_transfer(g, a, 0, b, 2)
        good_transfer(g, a, 0, a, 1)


def duplicate_and_foreign_rank():
    with Grid(sizes=(1, 1)) as g:
        g.start()
        a, b = g.sites
        proc = g.tool("send", a, 1, "--to", 0, "--sizes", "1")
        out = finish(proc, expect_ok=False)
        check("bad-rank" in out and "not served by site alpha" in out,
              "foreign rank not refused clearly: " + out)
        holder = g.tool("recv", a, 0, "--expect", 1, "--sizes", "5")
        a.wait_rank_connected(0, holder)
        dup = g.tool("send", a, 0, "--to", 1, "--sizes", "1")
        out = finish(dup, expect_ok=False)
        check("duplicate-rank" in out, "duplicate rank accepted: " + out)
        send = g.tool("send", b, 1, "--to", 0, "--sizes", "5")
        finish(send)
        finish(holder)


def wrong_ca_certificate():
    with Grid(sizes=(2, 1)) as g:
        a, b = g.sites
        # beta gets a certificate for its own name from a foreign CA.
        rogue = os.path.join(g.dir, "rogue")
        make_certs(rogue, ["beta"])
        b.write_config()
        text = open(b.config_path).read().replace(g.cert_dir, rogue)
        a.write_config()
        with open(b.config_path, "w") as f:
            f.write(text)
        a.start()
        b.start()
        wait_for(lambda: "certificate verify failed" in a.log() + b.log(),
                 "a certificate failure in the logs")
        check(a.link("beta")["streams_up"] == 0, "link up with a rogue cert")
        check(a.proc.poll() is None and b.proc.poll() is None,
              "a relay died")
        good_transfer(g, a, 0, a, 1)  # alpha still serves its ranks


def certificate_for_other_site():
    with Grid(sizes=(1, 1), names=["alpha", "beta"]) as g:
        a, b = g.sites
        make_certs(g.cert_dir, ["gamma"])  # same CA, wrong name
        b.write_config()
        text = open(b.config_path).read().replace("/beta.crt", "/gamma.crt")
        text = text.replace("/beta.key", "/gamma.key")
        a.write_config()
        with open(b.config_path, "w") as f:
            f.write(text)
        a.start()
        b.start()
        wait_for(lambda: "certificate verify failed" in a.log(),
                 "hostname mismatch refusal")
        check(a.link("beta")["streams_up"] == 0, "impostor accepted")


def plaintext_peer_against_tls():
    with Grid(sizes=(1, 1)) as g:
        a, b = g.sites
        a.write_config()
        b.write_config()
        text = open(a.config_path).read().replace("plaintext = false",
                                                  "plaintext = true")
        with open(a.config_path, "w") as f:
            f.write(text)
        a.start()
        b.start()
        # alpha dials in plaintext; beta expects a TLS ClientHello.
        wait_for(lambda: "WAN connection from 127.0.0.1" in b.log() and
                 "TLS" in b.log(), "beta to log the failed TLS handshake")
        check("NOT encrypted" in a.log(), "plaintext not warned about")
        check(b.link("alpha")["streams_up"] == 0, "plaintext link accepted")
        check(a.proc.poll() is None and b.proc.poll() is None,
              "a relay died")


if __name__ == "__main__":
    main([("wrong_token", wrong_token),
          ("duplicate_and_foreign_rank", duplicate_and_foreign_rank),
          ("wrong_ca_certificate", wrong_ca_certificate),
          ("certificate_for_other_site", certificate_for_other_site),
          ("plaintext_peer_against_tls", plaintext_peer_against_tls)])
