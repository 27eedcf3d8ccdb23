#!/usr/bin/env python3
"""Hostile and broken peers: garbage, truncated and oversized frames on the
rank side and on the WAN side.  The relay answers with an ERROR frame where
it can, closes that one connection, and keeps every other session intact.

Frames are built here independently of the C codec (struct + zlib.crc32),
so a layout mistake in either would show."""

import hashlib
import hmac
import os
import socket
import struct
import time
import zlib

from harness import Grid, check, finish, main

HEADER = struct.Struct("<IBBHIIIIiIQQQQI")  # up to the reserved field
MAGIC = 0x4C4F4347
HELLO, AUTH, AUTH_OK, DATA, ERROR = 1, 2, 3, 4, 9
LAST_CHUNK = 1
ERR_BAD_FRAME, ERR_BAD_RANK, ERR_PROTOCOL = 1, 4, 8


def frame(ftype, job, payload=b"", src=0, dst=0, ctx=0, tag=0, flags=0,
          seq=0, msg_len=0, offset=0, link_seq=0, payload_len=None):
    plen = len(payload) if payload_len is None else payload_len
    head = HEADER.pack(MAGIC, 1, ftype, flags, job, src, dst, ctx, tag, plen,
                       seq, msg_len, offset, link_seq, 0)
    return head + struct.pack("<I", zlib.crc32(head)) + payload


def hello_payload(nonce, role=1):
    return (struct.pack("<HHIIIIIQQ", 1, 1, 1, role, 0, 0, 0, 0, 0) + nonce +
            b"\0" * 64)


def read_frame(sock):
    head = b""
    while len(head) < 72:
        part = sock.recv(72 - len(head))
        if not part:
            return None
        head += part
    fields = HEADER.unpack(head[:68])
    payload = b""
    while len(payload) < fields[9]:
        part = sock.recv(fields[9] - len(payload))
        if not part:
            break
        payload += part
    return fields[2], fields[8], payload  # type, tag (error code), payload


def connect(site):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(10)
    s.connect(site.socket_path)
    return s


def authenticate(g, site, rank):
    s = connect(site)
    nonce = os.urandom(32)
    s.sendall(frame(HELLO, g.job_id, hello_payload(nonce), src=rank))
    ftype, _, payload = read_frame(s)
    check(ftype == HELLO, "no HELLO answer")
    relay_nonce = payload[40:72]
    token = open(g.token_path, "rb").read().strip()
    mac = hmac.new(token, b"gridcoll-v1 initiator" + nonce + relay_nonce +
                   struct.pack("<I", rank), hashlib.sha256).digest()
    s.sendall(frame(AUTH, g.job_id, mac, src=rank))
    ftype, _, _ = read_frame(s)
    check(ftype == AUTH_OK, "authentication failed")
    return s


def expect_error(s, code, text=None):
    reply = read_frame(s)
    check(reply is not None, "connection closed without an ERROR frame")
    ftype, tag, payload = reply
    check(ftype == ERROR and tag == code,
          "expected ERROR %d, got type %d tag %d (%r)" % (code, ftype, tag,
                                                          payload))
    if text:
        check(text in payload.decode(), "error text %r lacks %r" % (payload,
                                                                    text))
    check(read_frame(s) is None, "connection not closed after ERROR")


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
