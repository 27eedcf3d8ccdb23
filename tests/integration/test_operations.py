#!/usr/bin/env python3
"""Operator-facing behaviour: metrics, log reopening, the TCP endpoint for
ranks, and connection direction set per peer (firewalled sites)."""

import os
import re
import signal
import time

from harness import TOOL, Grid, check, finish, free_port, main, spawn


def metrics_match_traffic():
    with Grid(sizes=(1, 1), streams=2) as g:
        g.start()
        a, b = g.sites
        recv = g.tool("recv", b, 1, "--expect", 3, "--sizes", "1M,2M,0")
        send = g.tool("send", a, 0, "--to", 1, "--sizes", "1M,2M,0")
        finish(send)
        finish(recv)
        text = a.http("/metrics")
        values = {}
        for line in text.splitlines():
            if line.startswith("#") or not line.strip():
                continue
            name, value = line.rsplit(" ", 1)
            values[name] = float(value)
        check(values['gridrelay_link_up{peer="beta"}'] == 1, "link_up")
        check(values['gridrelay_link_streams_up{peer="beta"}'] == 2,
              "streams_up")
        check(values['gridrelay_link_bytes_sent_total{peer="beta"}'] ==
              3 << 20, "bytes sent does not match the 3 MiB sent")
        # 1 MiB and 2 MiB in 256 KiB chunks, plus one empty message.
        check(values['gridrelay_link_chunks_sent_total{peer="beta"}'] == 13,
              "chunk count")
        check('gridrelay_stream_rtt_seconds{peer="beta",stream="1"}' in values,
              "per-stream RTT missing")
        check(re.search(r"^# TYPE gridrelay_sessions gauge$", text, re.M),
              "no TYPE line")
        status = b.status()
        check(status["links"][0]["bytes_received"] == 3 << 20,
              "status bytes_received")
        check(values['gridrelay_link_acks_received_total{peer="beta"}'] >= 1,
              "no ACK counted")
        check(a.status()["ranks"] == [], "departed ranks still listed")


def sighup_reopens_log():
    with Grid(sizes=(1, 1)) as g:
        g.start()
        a = g.sites[0]
        rotated = a.log_path + ".1"
        os.rename(a.log_path, rotated)
        a.proc.send_signal(signal.SIGHUP)
        deadline = time.time() + 5
        while time.time() < deadline and not os.path.exists(a.log_path):
            time.sleep(0.05)
        check(os.path.exists(a.log_path), "log file not reopened")
        time.sleep(0.2)
        check("SIGHUP: log file reopened" in open(a.log_path).read(),
              "reopen not logged in the new file")


def tcp_endpoint_for_ranks():
    with Grid(sizes=(1, 1), streams=2) as g:
        a, b = g.sites
        a.local_tcp = "127.0.0.1:%d" % free_port()
        g.start()
        recv = g.tool("recv", b, 1, "--expect", 2, "--sizes", "5,600K")
        send = spawn([TOOL, "send", a.local_tcp, g.token_path, str(g.job_id),
                      "0", "--to", "1", "--sizes", "5,600K"])
        finish(send)
        finish(recv)
        check("rank 0 connected from 127.0.0.1:" in a.log(),
              "session did not come over TCP")


def explicit_connection_direction():
    # beta sits behind a firewall that allows outbound connections only:
    # beta dials, alpha listens, the opposite of what names would choose.
    with Grid(sizes=(1, 1), streams=3) as g:
        a, b = g.sites
        a.connect, b.connect = "listen", "dial"
        g.start()
        check(a.link("beta")["role"] == "listen" and
              b.link("alpha")["role"] == "dial", "directions not as set")
        check("link alpha: dialling" in b.log() and
              "link beta: waiting for the peer to dial" in a.log(),
              "logs do not show the direction")
        recv = g.tool("recv", a, 0, "--expect", 2, "--sizes", "1,3M")
        send = g.tool("send", b, 1, "--to", 0, "--sizes", "1,3M")
        finish(send)
        finish(recv)


if __name__ == "__main__":
    main([("metrics_match_traffic", metrics_match_traffic),
          ("sighup_reopens_log", sighup_reopens_log),
          ("tcp_endpoint_for_ranks", tcp_endpoint_for_ranks),
          ("explicit_connection_direction", explicit_connection_direction)])
