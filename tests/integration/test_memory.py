#!/usr/bin/env python3
"""A receiver that stops reading: the relays' memory stays bounded by their
configured budgets, and every byte still arrives once it reads again."""

import time

from harness import Grid, check, finish, main

LIMITS = """
flow = { rank_credit = "1M"; link_window = "8M"; session_high_watermark = "1M";
         session_low_watermark = "256K"; link_high_watermark = "4M";
         link_low_watermark = "1M"; };
"""
RSS_LIMIT_KIB = 40 * 1024  # budgets above sum to ~15 MiB, plus the binary


def stalled_receiver():
    with Grid(sizes=(1, 1), streams=4, extra_config=LIMITS) as g:
        g.start()
        a, b = g.sites
        sizes = "4M," * 63 + "4M"  # 256 MiB, far beyond every budget
        recv = g.tool("recv", b, 1, "--expect", 64, "--sizes", sizes,
                      "--stall-ms", 6000)
        send = g.tool("send", a, 0, "--to", 1, "--sizes", sizes)
        peak = {"alpha": 0, "beta": 0}
        deadline = time.time() + 5
        while time.time() < deadline:
            for site in g.sites:
                peak[site.name] = max(peak[site.name], site.rss_kib())
            time.sleep(0.05)
        check(send.poll() is None, "sender finished although nobody read")
        # The stalled rank's queue is visible to the operator and bounded by
        # the credit (1 MiB) plus one chunk in the output being written.
        (rank,) = [r for r in b.status()["ranks"] if r["rank"] == 1]
        queued = rank["queue_bytes"] + rank["pending_bytes"]
        check(rank["connected"] and 0 < queued <= (1 << 20) + 262144 + 4096,
              "stalled rank's queue not shown or unbounded: %r" % rank)
        for name, kib in peak.items():
            check(kib < RSS_LIMIT_KIB,
                  "%s RSS %d KiB exceeds %d KiB" % (name, kib, RSS_LIMIT_KIB))
        finish(send, timeout=120)
        finish(recv, timeout=120)
        print("peak RSS KiB: %s" % peak)


if __name__ == "__main__":
    main([("stalled_receiver", stalled_receiver)])
