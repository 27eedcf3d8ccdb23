#!/usr/bin/env python3
"""gridrelay and gridrelay-bench command lines: exit codes and messages."""

import os
import re
import subprocess
import tempfile

from harness import BIN, RELAY, SOURCE_DIR, Grid, check, main, make_certs

BENCH = os.path.join(BIN, "gridrelay-bench")


def run(args, timeout=120):
    return subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, timeout=timeout)


def help_and_bad_flags():
    r = run([RELAY, "--help"])
    check(r.returncode == 0, "--help failed")
    for key in ("wan.streams", "tls.cert", "flow.rank_credit",
                "tcp.congestion", "peers.connect"):
        check(key in r.stdout, "--help does not document " + key)
    r = run([RELAY, "--no-such-flag"])
    check(r.returncode == 2 and "usage" in r.stderr, "bad flag: %r" % r.stderr)
    r = run([RELAY])
    check(r.returncode == 2, "no config accepted")
    r = run([BENCH, "--streams", "0"])
    check(r.returncode != 0 and r.stderr, "bench accepted --streams 0")
    r = run([BENCH, "--bytes", "12X"])
    check(r.returncode != 0 and "bytes" in r.stderr, "bench bad size: %r"
          % r.stderr)


def check_examples_and_broken_config():
    with tempfile.TemporaryDirectory() as tmp:
        make_certs(os.path.join(SOURCE_DIR, "conf", "tls", "out"),
                   ["alpha", "beta"])
        for name in ("loopback-alpha", "loopback-beta"):
            path = os.path.join(SOURCE_DIR, "conf", "examples", name + ".conf")
            r = run([RELAY, "--check", path])
            check(r.returncode == 0 and "valid" in r.stdout,
                  "%s rejected: %s" % (name, r.stderr))
        broken = os.path.join(tmp, "broken.conf")
        with open(broken, "w") as f:
            f.write('site = "alpha";\n'
                    'rank_count = 2;\n'
                    'token_file = "/nonexistent/token";\n'
                    'wan = { streams = 500; plaintext = true; };\n'
                    'colour = "blue";\n'
                    'local = { unix = "/tmp/x.sock"; };\n')
        r = run([RELAY, "--check", broken])
        check(r.returncode == 1, "broken config accepted")
        lines = r.stderr.strip().splitlines()
        check(all(re.match(re.escape(broken) + r":\d+: ", l) for l in lines),
              "not file:line: messages: %r" % lines)
        text = r.stderr
        check(broken + ":4: " in text and "wan.streams" in text,
              "out-of-range streams not reported at line 4: " + text)
        check(broken + ":5: " in text and "colour" in text,
              "unknown key not reported at line 5: " + text)
        check(broken + ":3: " in text and "token" in text,
              "unreadable token file not reported: " + text)


def unknown_congestion_control_at_start():
    with Grid(sizes=(1, 1), tls=False,
              extra_config='tcp = { congestion = "nosuchcc"; };') as g:
        a = g.sites[0]
        a.write_config()
        r = run([RELAY, "-c", a.config_path])
        check(r.returncode == 1, "relay started with unknown cc")
        check("nosuchcc" in r.stderr and "tcp.congestion" in r.stderr,
              "unclear congestion control error: " + r.stderr)


def bench_spawned_relays():
    for extra in ([], ["--plaintext"]):
        r = run([BENCH, "--bytes", "64M", "--msg-size", "1M", "--streams",
                 "2"] + extra)
        check(r.returncode == 0, "bench failed: %s %s" % (r.stdout, r.stderr))
        last = r.stdout.strip().splitlines()[-1]
        check(re.search(r"MBps=[0-9.]+ verified=yes$", last),
              "bad bench line: " + last)
        check(("tls=off" in last) == bool(extra), "tls flag not shown: " + last)
    r = run([BENCH, "--bytes", "8M", "--msg-size", "256K", "--csv",
             "--plaintext"])
    rows = r.stdout.strip().splitlines()
    check(r.returncode == 0 and rows[-2].startswith("bytes,msg_size,") and
          rows[-1].endswith(",yes"), "bad CSV: %r" % rows)


def bench_external_relays():
    with Grid(sizes=(1, 1)) as g:
        g.start()
        a, b = g.sites
        r = run([BENCH, "--relay-a", a.endpoint, "--relay-b", b.endpoint,
                 "--token", g.token_path, "--job-id", str(g.job_id),
                 "--rank-a", "0", "--rank-b", "1", "--bytes", "32M"])
        check(r.returncode == 0 and r.stdout.strip().endswith("verified=yes"),
              "bench via external relays: %s %s" % (r.stdout, r.stderr))
        check(a.link("beta")["bytes_sent"] >= 32 << 20,
              "the data did not cross the link")


if __name__ == "__main__":
    main([("help_and_bad_flags", help_and_bad_flags),
          ("check_examples_and_broken_config",
           check_examples_and_broken_config),
          ("unknown_congestion_control_at_start",
           unknown_congestion_control_at_start),
          ("bench_spawned_relays", bench_spawned_relays),
          ("bench_external_relays", bench_external_relays)])
