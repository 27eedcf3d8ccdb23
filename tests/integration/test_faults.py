#!/usr/bin/env python3
"""Broken streams, killed and restarted peer relays."""

import re
import signal
import threading
import time

from harness import Grid, check, finish, main


def break_streams_mid_transfer():
    with Grid(sizes=(1, 1), streams=4) as g:
        g.start()
        a, b = g.sites
        sizes = "random:120:6M:5"
        recv = g.tool("recv", b, 1, "--expect", 120, "--sizes", sizes)
        send = g.tool("send", a, 0, "--to", 1, "--sizes", sizes)
        breaks = {"alpha": 0, "beta": 0}
        stop = threading.Event()

        def breaker():
            # Alternate sides: the dialer re-dials, the listener is re-dialled.
            side = 0
            while not stop.is_set():
                site = g.sites[side % 2]
                try:
                    site.http("/admin/break-stream", method="POST")
                    breaks[site.name] += 1
                except OSError:
                    pass  # no stream up at this instant
                side += 1
                time.sleep(0.08)

        t = threading.Thread(target=breaker)
        t.start()
        try:
            finish(send, timeout=240)
            finish(recv, timeout=240)
        finally:
            stop.set()
            t.join()
        check(breaks["alpha"] >= 2 and breaks["beta"] >= 2,
              "too few breaks injected: %s" % breaks)
        resent = a.link("beta")["chunks_resent"] + b.link("alpha")["chunks_resent"]
        check(resent > 0, "no chunk was re-sent")
        check("broken on purpose" in a.log(), "fault not logged")
        a.wait_links_up()  # every stream came back


def kill_beta_mid_transfer(g):
    """Start 1000 MiB from alpha to beta, then kill -9 beta's relay."""
    g.start()
    a, b = g.sites
    recv = g.tool("recv", b, 1, "--expect", 1000, "--sizes", "1M")
    send = g.tool("send", a, 0, "--to", 1, "--sizes", "1M," * 999 + "1M")
    time.sleep(0.5)
    b.stop(signal.SIGKILL)
    return a, b, send, recv


def peer_killed_for_good():
    with Grid(sizes=(1, 1), streams=2, give_up_ms=1500) as g:
        a, b, send, recv = kill_beta_mid_transfer(g)
        out = finish(send, timeout=30, expect_ok=False)
        check(send.returncode != 0, "sender did not fail: " + out)
        check("peer-unreachable" in out and "beta" in out,
              "unclear error for the sender: " + out)
        out = finish(recv, timeout=30, expect_ok=False)
        check(recv.returncode != 0 and "FAIL" in out,
              "receiver did not notice its relay died: " + out)
        check(re.search(r"link beta down for [0-9.]+ s \(liveness.peer_give_up_ms "
                        r"= 1500\); giving the peer up", a.log()),
              "give-up not logged:\n" + a.log())


def peer_restarted():
    with Grid(sizes=(1, 1), streams=2) as g:
        a, b, send, recv = kill_beta_mid_transfer(g)
        finish(recv, timeout=30, expect_ok=False)
        b.start()
        out = finish(send, timeout=30, expect_ok=False)
        check("peer-unreachable" in out and "restarted" in out,
              "unclear error after a peer restart: " + out)
        # The link serves new traffic with the new incarnation.
        a.wait_links_up()
        recv = g.tool("recv", b, 1, "--expect", 3, "--sizes", "0,7,3M")
        send = g.tool("send", a, 0, "--to", 1, "--sizes", "0,7,3M")
        finish(send)
        finish(recv)


def relay_gone_while_idle():
    """The sender's own relay dies while its session is idle: the next
    send finds the socket closed in its first write and fails with a
    clear error (the ASan build also checks it leaks nothing)."""
    with Grid(sizes=(1, 1), streams=2) as g:
        g.start()
        a, _ = g.sites
        send = g.tool("send", a, 0, "--to", 1, "--sizes", "7",
                      "--stall-ms", 2000)
        a.wait_rank_connected(0, send)  # not sending yet: --stall-ms
        a.stop(signal.SIGKILL)
        out = finish(send, timeout=30, expect_ok=False)
        check(send.returncode == 1 and "FAIL: send:" in out,
              "sender on a dead relay: exit %d, %r" % (send.returncode, out))


def sigterm_drains():
    with Grid(sizes=(1, 1), streams=2) as g:
        g.start()
        a, b = g.sites
        recv = g.tool("recv", b, 1, "--expect", 3, "--sizes", "1,2M,3")
        send = g.tool("send", a, 0, "--to", 1, "--sizes", "1,2M,3")
        finish(send)
        finish(recv)
        waiting = g.tool("recv", a, 0, "--expect", 1, "--sizes", "1")
        a.wait_rank_connected(0, waiting)
        check(a.stop(signal.SIGTERM) == 0, "SIGTERM exit status not 0")
        check("drained; exiting" in a.log(), "drain not logged")
        out = finish(waiting, timeout=10, expect_ok=False)
        check("shutdown" in out and "relay is shutting down" in out,
              "connected rank not told about the shutdown: " + out)
        check(b.proc.poll() is None, "beta died with its peer")


if __name__ == "__main__":
    main([("break_streams_mid_transfer", break_streams_mid_transfer),
          ("peer_killed_for_good", peer_killed_for_good),
          ("peer_restarted", peer_restarted),
          ("relay_gone_while_idle", relay_gone_while_idle),
          ("sigterm_drains", sigterm_drains)])
