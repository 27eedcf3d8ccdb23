#!/usr/bin/env python3
"""What plain TCP gives for one burst: the transport's own bound.

A collective over the WAN moves a burst of M bytes and then waits; its
time is the one-way delay plus the burst's time on the wire, plus what
TCP adds: congestion-control ramp after the pause, and the round trip a
lost segment costs when it falls in the burst's last round trip.  This
tool measures that on the same link, with nothing of GridColl in the way:
K TCP connections (like the relay's WAN streams: TCP_NODELAY, chosen
congestion control, kept open and warmed up between bursts), each round
the client writes M/K bytes on every connection at once and the server
takes the time from the client's start (CLOCK_MONOTONIC, which every
network namespace of one host shares) until the last byte of all K
shares is in; then it answers one byte, and the client pauses before the
next round, as a benchmark does between calls.

    tcp_burst.py server --bind ADDR [--port P] [--csv FILE]
    tcp_burst.py client --connect ADDR [--port P] --streams K
                 --bytes LIST [--rounds N[,N...]] [--warmup N] [--cc NAME]
                 [--pause MS]
    tcp_burst.py pair [--address ADDR] [server and client options]

pair is for a program of `gridrun --site-sizes 1,1 --wan ...
--no-join-check` (it is no MPI program, so its ranks never join the grid):
the rank at site index 1 ($GRIDCOLL_SITE_INDEX) serves on ADDR (default
10.77.0.2, gridwan's address of that site), the one at site 0 is the client.

The client sends the plan (sizes, rounds) ahead so the server knows what
to expect; the server prints CSV, one row per timed round:
streams,cc,bytes,round,seconds.  Both sides stop after --timeout seconds
whatever happens.
"""
import argparse
import json
import os
import selectors
import signal
import socket
import struct
import sys
import time

HEADER = struct.Struct("!dQ")  # client's start time, bytes on this connection


def parse_size(text):
    scale = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    text = text.strip().lower()
    if text and text[-1] in scale:
        return int(text[:-1]) * scale[text[-1]]
    return int(text)


def recv_exact(conn, count):
    chunks = []
    while count:
        chunk = conn.recv(min(count, 1 << 20))
        if not chunk:
            raise ConnectionError("peer closed the connection")
        chunks.append(chunk)
        count -= len(chunk)
    return b"".join(chunks)


def serve(args):
    listener = socket.create_server((args.bind, args.port), backlog=64)
    ctrl, _ = listener.accept()
    plan = json.loads(recv_exact(ctrl, struct.unpack("!I", recv_exact(ctrl, 4))[0]))
    streams = [listener.accept()[0] for _ in range(plan["streams"])]
    out = open(args.csv, "w") if args.csv else sys.stdout
    print("streams,cc,bytes,round,seconds", file=out)
    buf = bytearray(1 << 20)
    for size, rounds in plan["points"]:
        for rnd in range(-plan["warmup"], rounds):
            sel = selectors.DefaultSelector()
            left = {}
            for conn in streams:
                start, count = HEADER.unpack(recv_exact(conn, HEADER.size))
                left[conn] = count
                sel.register(conn, selectors.EVENT_READ)
            while left:
                for key, _ in sel.select():
                    conn = key.fileobj
                    got = conn.recv_into(buf, min(len(buf), left[conn]))
                    if got == 0:
                        raise ConnectionError("peer closed the connection")
                    left[conn] -= got
                    if left[conn] == 0:
                        sel.unregister(conn)
                        del left[conn]
            seconds = time.monotonic() - start
            sel.close()
            if rnd >= 0:
                print("%d,%s,%d,%d,%.6f" % (len(streams), plan["cc"], size,
                                            rnd, seconds), file=out)
            ctrl.sendall(b"k")
    out.flush()


def client(args):
    sizes = [parse_size(s) for s in args.bytes.split(",")]
    rounds = [int(r) for r in args.rounds.split(",")]
    if len(rounds) == 1:
        rounds *= len(sizes)
    if len(rounds) != len(sizes):
        sys.exit("tcp_burst: --rounds needs one count or one per size")
    for _ in range(100):
        try:
            ctrl = socket.create_connection((args.connect, args.port))
            break
        except OSError:
            time.sleep(0.1)  # the server may not listen yet
    else:
        sys.exit("tcp_burst: cannot connect to %s:%d" % (args.connect, args.port))
    plan = json.dumps({"streams": args.streams, "cc": args.cc,
                       "warmup": args.warmup,
                       "points": list(zip(sizes, rounds))}).encode()
    ctrl.sendall(struct.pack("!I", len(plan)) + plan)
    streams = []
    for _ in range(args.streams):
        conn = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if args.cc:
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION,
                            args.cc.encode())
        conn.connect((args.connect, args.port))
        conn.setblocking(False)
        streams.append(conn)
    for size, count in zip(sizes, rounds):
        # Shares differ by at most one byte when K does not divide M; made
        # before the clock starts, sent with their header in one sendmsg.
        shares = [memoryview(bytes(size // args.streams +
                                   (i < size % args.streams)))
                  for i in range(args.streams)]
        for _ in range(args.warmup + count):
            start = time.monotonic()
            sel = selectors.DefaultSelector()
            pending = {}
            for conn, share in zip(streams, shares):
                pending[conn] = [memoryview(HEADER.pack(start, len(share))),
                                 share]
                sel.register(conn, selectors.EVENT_WRITE)
            while pending:
                for key, _ in sel.select():
                    conn = key.fileobj
                    parts = pending[conn]
                    sent = conn.sendmsg(parts)
                    while sent >= len(parts[0]) and len(parts) > 1:
                        sent -= len(parts.pop(0))
                    parts[0] = parts[0][sent:]
                    if len(parts) == 1 and not parts[0]:
                        sel.unregister(conn)
                        del pending[conn]
            sel.close()
            recv_exact(ctrl, 1)
            time.sleep(args.pause / 1000)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("role", choices=("server", "client", "pair"))
    parser.add_argument("--address", default="10.77.0.2")
    parser.add_argument("--bind")
    parser.add_argument("--connect")
    parser.add_argument("--port", type=int, default=5299)
    parser.add_argument("--streams", type=int, default=8)
    parser.add_argument("--cc", default="")
    parser.add_argument("--bytes", default="16M")
    parser.add_argument("--rounds", default="9")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--pause", type=float, default=20.0)
    parser.add_argument("--csv")
    parser.add_argument("--timeout", type=int, default=120)
    args = parser.parse_args()
    signal.alarm(args.timeout)
    if args.role == "pair":
        site = os.environ.get("GRIDCOLL_SITE_INDEX")
        if site not in ("0", "1"):
            sys.exit("tcp_burst: pair needs GRIDCOLL_SITE_INDEX 0 or 1 "
                     "(run it under gridrun --site-sizes 1,1 --wan ... "
                     "--no-join-check)")
        args.role = "server" if site == "1" else "client"
        args.bind = args.connect = args.address
    if args.role == "server":
        if not args.bind:
            sys.exit("tcp_burst: server needs --bind")
        serve(args)
    else:
        if not args.connect:
            sys.exit("tcp_burst: client needs --connect")
        client(args)


if __name__ == "__main__":
    main()
