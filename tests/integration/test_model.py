#!/usr/bin/env python3
"""The performance model on loopback sites (docs/model.md): gridcoll-probe
with small settings writes a model file that parses; jobs with the model
(gridrun --model) choose, per GRIDCOLL_STATS=1, the algorithms
`gridcoll-info --predict` marks chosen for the same sizes; a broken model
file stops the job with file:line; gridrun --model checks the file."""

import atexit
import csv
import io
import os
import re
import shutil
import subprocess
import tempfile

from harness import BIN, check, gridrun, main

PROBE = os.path.join(BIN, "gridcoll-probe")
BENCH = os.path.join(BIN, "gridcoll-bench")
INFO = os.path.join(BIN, "gridcoll-info")
LAYOUT = ["--site-sizes", "2,2"]
SMALL = ["--iters", "3", "--wan-iters", "2", "--local-sizes", "8,64k",
         "--wan-sizes", "8,64k", "--alltoall-sizes", "256,1k,4k,16k",
         "--burst", "8", "--bulk-count", "2", "--bulk-bytes", "64k"]

# Every WAN message costs a second: model mode must take alltoall hier
# (one message per pair of sites) where the rules take lg.
SLOW_MESSAGES = """version = 1;
sites = (
  { name = "alpha"; size = 2; alpha = 1e-5; beta = 1e-9; gamma = 1.0;
    delta = 0.0; threshold = 0.0; },
  { name = "beta"; size = 2; alpha = 1e-5; beta = 1e-9; gamma = 1.0;
    delta = 0.0; threshold = 0.0; }
);
links = (
  { sites = ["alpha", "beta"]; alpha = 0.02; beta = 1e-8; gap = 1.0;
    beta_bulk = 1e-8; }
);
"""

workdir = tempfile.mkdtemp(prefix="test_model.")
atexit.register(shutil.rmtree, workdir, ignore_errors=True)


def write(name, text):
    path = os.path.join(workdir, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def predicted_choice(model, coll, nbytes):
    r = subprocess.run([INFO, "--model", model, "--predict", coll,
                        "--site-sizes", "2,2", "--bytes", str(nbytes),
                        "--csv"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=30)
    check(r.returncode == 0, "gridcoll-info --predict %s: %s" %
          (coll, r.stderr))
    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    chosen = [row["algo"] for row in rows if row["chosen"] == "1"]
    check(len(chosen) == 1, "one chosen row expected:\n" + r.stdout)
    return chosen[0]


def used_algorithms(model, coll, nbytes):
    """The algorithms GRIDCOLL_STATS=1 reports for `coll` in a
    gridcoll-bench run of the automatic choice."""
    rc, out, err = gridrun(["--model", model] + LAYOUT,
                           [BENCH, coll, "--sizes", str(nbytes), "--algos",
                            "auto", "--iters", "2", "--warmup", "0"],
                           env={"GRIDCOLL_STATS": "1"}, timeout=60)
    check(rc == 0, "bench %s with the model exited %d:\n%s\n%s" %
          (coll, rc, out, err))
    return set(re.findall(r"gridcoll-stats: site=\S+ coll=%s algo=(\S+)"
                          % coll, err))


def probe_model():
    path = os.path.join(workdir, "probed.cfg")
    if not os.path.exists(path):
        rc, out, err = gridrun(LAYOUT, [PROBE, "--output", path] + SMALL,
                               timeout=60)
        check(rc == 0, "gridcoll-probe exited %d:\n%s\n%s" % (rc, out, err))
        for word in ("site alpha (2 ranks): alpha=", "site beta",
                     "link alpha-beta: alpha_w=", "fit residual",
                     "gamma=", "beta_bulk=", "wrote " + path):
            check(word in out, "probe output lacks %r:\n%s" % (word, out))
    return path


def test_probe_writes_a_model_that_parses():
    model = probe_model()
    text = open(model).read()
    for key in ("version = 1;", 'name = "alpha"', 'name = "beta"',
                'sites = ["alpha", "beta"]', "gamma =", "beta_bulk ="):
        check(key in text, "model file lacks %r:\n%s" % (key, text))
    predicted_choice(model, "alltoall", 65536)


def test_choices_match_predict_probed():
    model = probe_model()
    for coll, nbytes in (("bcast", 1 << 20), ("alltoall", 65536)):
        want = predicted_choice(model, coll, nbytes)
        got = used_algorithms(model, coll, nbytes)
        check(got == {want}, "%s %d: ran %s, gridcoll-info --predict chose "
              "%s" % (coll, nbytes, got, want))


def test_choices_match_predict_slow_messages():
    model = write("slow.cfg", SLOW_MESSAGES)
    want = predicted_choice(model, "alltoall", 1024)
    check(want == "hier", "a second per WAN message should favour hier, "
          "not %s" % want)
    got = used_algorithms(model, "alltoall", 1024)
    check(got == {"hier"}, "alltoall 1024 ran %s, predicted hier" % got)


def test_broken_model_stops_the_job():
    broken = write("broken.cfg", SLOW_MESSAGES.replace("gamma = 1.0;",
                                                       "gamma = 1e9;", 1))
    rc, out, err = gridrun(["--model", broken] + LAYOUT,
                           [BENCH, "barrier", "--iters", "1"], timeout=60)
    check(rc == 2, "gridrun --model with a broken model: exit %d:\n%s" %
          (rc, out))
    check("gridrun: --model: %s:3: sites[0].gamma = 1e+09 is out of "
          "bounds" % broken in err,
          "no file:line error:\n" + err)


def test_gridrun_checks_the_file():
    missing = os.path.join(workdir, "missing.cfg")
    rc, out, err = gridrun(["--model", missing] + LAYOUT, ["true"])
    check(rc == 2 and "--model: cannot read '%s'" % missing in err,
          "gridrun --model on a missing file: %d\n%s" % (rc, err))


if __name__ == "__main__":
    main([(name[len("test_"):], fn) for name, fn in sorted(globals().items())
          if name.startswith("test_")])
