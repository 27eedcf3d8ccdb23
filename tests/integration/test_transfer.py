#!/usr/bin/env python3
"""Data through real relays: exact bytes, sizes, ordering, many sessions."""

import sys

from harness import Grid, check, finish, main

CHUNK = 262144
EDGE_SIZES = "0,1,%d,%d,%d,64M" % (CHUNK - 1, CHUNK, CHUNK + 1)


def transfer(streams, tls):
    def run():
        with Grid(sizes=(1, 1), tls=tls, streams=streams, chunk=CHUNK) as g:
            g.start()
            a, b = g.sites
            for sizes in (EDGE_SIZES, "random:40:3M:%d" % streams):
                count = len(sizes.split(",")) if "random" not in sizes else 40
                recv = g.tool("recv", b, 1, "--expect", count, "--sizes", sizes)
                # Rank 1 said goodbye after the first round: until its next
                # session is up, beta drops what arrives for it.
                b.wait_rank_connected(1, recv)
                send = g.tool("send", a, 0, "--to", 1, "--sizes", sizes)
                finish(send)
                finish(recv)
            dropped = [r for r in b.status()["ranks"] if r["chunks_dropped"]]
            check(not dropped, "chunks dropped: %s" % dropped)
            link = a.link("beta")
            assert link["streams_up"] == streams, link
            # Large messages must really be striped over every stream.
            used = [s for s in link["stream_detail"] if s["bytes_sent"] > 0]
            assert len(used) == streams, link["stream_detail"]
    return run


def ordering_under_striping():
    # 4 KiB chunks over 8 streams: every message of more than one chunk is
    # spread over several streams and its chunks arrive out of order.
    with Grid(sizes=(3, 2), streams=8, chunk=4096) as g:
        g.start()
        a, b = g.sites
        sizes = "random:300:40K:11"
        receivers = [g.tool("recv", b, 3, "--expect", 600, "--sizes", sizes),
                     g.tool("recv", a, 2, "--expect", 300, "--sizes", sizes)]
        senders = [g.tool("send", a, 0, "--to", 3, "--sizes", sizes),
                   g.tool("send", a, 1, "--to", 3, "--sizes", sizes),
                   g.tool("send", b, 4, "--to", 2, "--sizes", sizes)]
        for p in senders + receivers:
            finish(p)


def medium_message_spread():
    # A message that fits in fewer chunks than there are streams is cut
    # into one page-rounded chunk per stream (BBR paces each stream's
    # burst): 64 KiB over 8 streams is 8 KiB on each, 1 MiB 128 KiB on
    # each; 20 KiB is one page on each of 5 (chunks are whole pages).
    for size, want in ((65536, [8192] * 8),
                       (20 * 1024, [4096] * 5 + [0] * 3),
                       (1 << 20, [131072] * 8)):
        with Grid(sizes=(1, 1), streams=8, chunk=CHUNK) as g:
            g.start()
            a, b = g.sites
            recv = g.tool("recv", b, 1, "--expect", 1, "--sizes", size)
            finish(g.tool("send", a, 0, "--to", 1, "--sizes", size))
            finish(recv)
            link = a.link("beta")
            # Loopback loses nothing, so no chunk is worth a second copy.
            check(link["chunks_copied"] == 0, "%d B: %d chunks copied"
                  % (size, link["chunks_copied"]))
            sent = sorted((s["bytes_sent"] for s in link["stream_detail"]),
                          reverse=True)
            check(sent == want, "%d B: bytes per stream %s, want %s"
                  % (size, sent, want))


def many_sessions():
    # One session per rank: half of each site sends, the other half receives.
    n = 12
    with Grid(sizes=(2 * n, 2 * n), streams=4) as g:
        g.start()
        a, b = g.sites
        sizes = "1,1000,300K"
        procs = []
        for r in range(n):
            procs.append(g.tool("recv", b, 3 * n + r, "--expect", 3, "--sizes",
                                sizes))
            procs.append(g.tool("recv", a, n + r, "--expect", 3, "--sizes",
                                sizes))
        for r in range(n):
            procs.append(g.tool("send", a, r, "--to", 3 * n + r, "--sizes",
                                sizes))
            procs.append(g.tool("send", b, 2 * n + r, "--to", n + r, "--sizes",
                                sizes))
        for p in procs:
            finish(p)
        check(a.status()["sessions_refused"] == 0, "a session was refused")


def local_and_three_sites():
    with Grid(sizes=(2, 2, 2), streams=2) as g:
        g.start()
        alpha, beta, gamma = g.sites
        sizes = "0,5,700K"
        receivers = [g.tool("recv", alpha, 1, "--expect", 9, "--sizes", sizes),
                     g.tool("recv", beta, 3, "--expect", 3, "--sizes", sizes),
                     g.tool("recv", gamma, 5, "--expect", 3, "--sizes", sizes)]
        senders = [g.tool("send", alpha, 0, "--to", "1,3,5", "--sizes", sizes),
                   g.tool("send", beta, 2, "--to", 1, "--sizes", sizes),
                   g.tool("send", gamma, 4, "--to", 1, "--sizes", sizes)]
        for p in senders + receivers:
            finish(p)


if __name__ == "__main__":
    main([("k1_tls", transfer(1, True)),
          ("k1_plain", transfer(1, False)),
          ("k2_tls", transfer(2, True)),
          ("k2_plain", transfer(2, False)),
          ("k8_tls", transfer(8, True)),
          ("k8_plain", transfer(8, False)),
          ("ordering_under_striping", ordering_under_striping),
          ("medium_message_spread", medium_message_spread),
          ("many_sessions", many_sessions),
          ("local_and_three_sites", local_and_three_sites)])
