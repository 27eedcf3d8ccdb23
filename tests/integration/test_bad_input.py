#!/usr/bin/env python3
"""Hostile and broken peers: garbage, truncated and oversized frames on the
rank side and on the WAN side.  The relay answers with an ERROR frame where
it can, closes that one connection, and keeps every other session intact.

Frames are built here independently of the C codec (struct + zlib.crc32),
so a layout mistake in either would show."""

import os
import socket
import time

from harness import Grid, check, finish, main
from wire import (AUTH_OK, DATA, ERR_BAD_FRAME, ERR_BAD_RANK, ERR_PROTOCOL,
                  HELLO, LAST_CHUNK, expect_error, frame, hello_payload,
                  rank_session)

def connect(site):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(10)
    s.connect(site.socket_path)
    return s


def authenticate(g, site, rank):
    s = connect(site)
    token = open(g.token_path, "rb").read().strip()
    reply = rank_session(s, g.job_id, token, rank)
    check(reply is not None and reply[0] == AUTH_OK, "authentication failed")
    return s


def hostile_rank_sessions():
    with Grid(sizes=(2, 1), chunk=65536) as g:
        g.start()
        a, b = g.sites
        # A good transfer runs through everything below.
        sizes = "random:60:2M:3"
        recv = g.tool("recv", b, 2, "--expect", 60, "--sizes", sizes)
        send = g.tool("send", a, 0, "--to", 2, "--sizes", sizes)

        s = connect(a)
        s.sendall(os.urandom(200))
        expect_error(s, ERR_BAD_FRAME, "bad frame")

        s = connect(a)
        good = frame(HELLO, g.job_id, hello_payload(os.urandom(32)), src=1)
        s.sendall(good[:40])  # truncated, then gone
        s.close()

        s = connect(a)
        corrupt = bytearray(good)
        corrupt[20] ^= 0x40  # checksum no longer matches
        s.sendall(bytes(corrupt))
        expect_error(s, ERR_BAD_FRAME, "checksum")

        s = connect(a)
        s.sendall(frame(DATA, g.job_id, src=1, dst=2, flags=LAST_CHUNK))
        expect_error(s, ERR_PROTOCOL)  # DATA before HELLO

        s = connect(a)
        s.sendall(frame(HELLO, g.job_id, hello_payload(os.urandom(32)), src=2))
        expect_error(s, ERR_BAD_RANK, "not served")

        s = authenticate(g, a, 1)
        big = 65536 * 4
        s.sendall(frame(DATA, g.job_id, src=1, dst=2, msg_len=big,
                        payload_len=big, flags=LAST_CHUNK))
        expect_error(s, ERR_BAD_FRAME, "exceeds")

        s = authenticate(g, a, 1)
        s.sendall(frame(DATA, g.job_id, src=1, dst=2, msg_len=1 << 30,
                        payload_len=(16 << 20) + 1))
        expect_error(s, ERR_BAD_FRAME, "payload length")

        s = authenticate(g, a, 1)
        s.sendall(frame(DATA, g.job_id, b"x", src=0, dst=2, msg_len=1,
                        flags=LAST_CHUNK))
        expect_error(s, ERR_BAD_RANK, "claims source rank 0")

        s = authenticate(g, a, 1)
        s.sendall(frame(DATA, g.job_id, b"x", src=1, dst=999, msg_len=1,
                        flags=LAST_CHUNK))
        expect_error(s, ERR_BAD_RANK, "not in the job")

        finish(send)
        finish(recv)
        check(a.status()["frames_rejected"] >= 2, "rejections not counted")
        check(a.proc.poll() is None, "relay died")


def hostile_wan_connections():
    for tls in (False, True):
        with Grid(sizes=(1, 1), tls=tls) as g:
            g.start()
            a, b = g.sites
            sizes = "random:40:2M:9"
            recv = g.tool("recv", b, 1, "--expect", 40, "--sizes", sizes)
            send = g.tool("send", a, 0, "--to", 1, "--sizes", sizes)
            for junk in (os.urandom(500), b"GET / HTTP/1.0\r\n\r\n",
                         frame(DATA, g.job_id, b"x", src=0, dst=1, msg_len=1,
                               flags=LAST_CHUNK, link_seq=1)):
                s = socket.create_connection(("127.0.0.1", b.wan_port), 5)
                s.sendall(junk)
                try:
                    while s.recv(4096):
                        pass
                except OSError:
                    pass
                s.close()
            # A connection that never says anything is dropped, not kept.
            idle = socket.create_connection(("127.0.0.1", b.wan_port), 5)
            finish(send)
            finish(recv)
            idle.close()
            check(b.proc.poll() is None, "relay died on WAN junk")
            check(b.link("alpha")["state"] == "up", "real link disturbed")
            time.sleep(0.1)


if __name__ == "__main__":
    main([("hostile_rank_sessions", hostile_rank_sessions),
          ("hostile_wan_connections", hostile_wan_connections)])
