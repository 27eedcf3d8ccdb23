#!/usr/bin/env python3
"""The performance model on loopback sites (docs/model.md): gridcoll-probe
with small settings writes a model file that parses; jobs with the model
(gridrun --model) choose, per GRIDCOLL_STATS=1, the algorithms
`gridcoll-info --predict` marks chosen for the same sizes; a broken model
file stops the job with file:line; gridrun --model checks the file.
gridrun --probe writes the layout's default model, which later jobs on the
same layout (and only those) use unless --no-model, --model or
GRIDCOLL_MODEL says otherwise; a failed probe leaves none."""

import atexit
import csv
import io
import os
import re
import shutil
import subprocess
import tempfile

from harness import BIN, check, gridrun, gridrun_usage_errors, main

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


def used_algorithms(model, coll, nbytes, env=None):
    """The algorithms GRIDCOLL_STATS=1 reports for `coll` in a
    gridcoll-bench run of the automatic choice; `model` None: no --model."""
    rc, out, err = gridrun((["--model", model] if model else []) + LAYOUT,
                           [BENCH, coll, "--sizes", str(nbytes), "--algos",
                            "auto", "--iters", "2", "--warmup", "0"],
                           env=dict(env or {}, GRIDCOLL_STATS="1"),
                           timeout=60)
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
    # Both curves at exactly the --wan-sizes, with times a loopback
    # transfer can take.
    for curve in ("one_way", "exchange"):
        m = re.search(r"\b%s = \(([^)]*)\);" % curve, text)
        check(m is not None, "model file lacks %s:\n%s" % (curve, text))
        pairs = re.findall(r"\[([0-9.e+-]+), ([0-9.e+-]+)\]", m.group(1))
        sizes = [float(b) for b, _ in pairs]
        check(sizes == [8.0, 65536.0], "%s sizes %s, want 8, 64k" %
              (curve, sizes))
        check(all(0 < float(t) < 1 for _, t in pairs),
              "%s times out of range: %s" % (curve, pairs))
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


SHOW_MODEL = ["sh", "-c", 'echo "model=$GRIDCOLL_MODEL"']


def models_seen(layout, model_dir, env=None):
    """Run a shell job (no MPI: --no-join-check); the GRIDCOLL_MODEL values
    its ranks saw, and gridrun's stderr."""
    rc, out, err = gridrun(layout + ["--no-join-check"], SHOW_MODEL, timeout=30,
                           env=dict(env or {}, GRIDCOLL_MODEL_DIR=model_dir))
    check(rc == 0, "%s: exit %d:\n%s\n%s" % (layout, rc, out, err))
    seen = set(re.findall(r"^model=(.*)$", out, re.M))
    check(len(re.findall(r"^model=", out, re.M)) == sum(
        int(n) for n in layout[layout.index("--site-sizes") + 1].split(",")),
        "not every rank printed its model:\n" + out)
    return seen, err


def probe_default(model_dir, probe_options=SMALL, env=None, extra=()):
    return gridrun(["--probe"] + list(extra) + LAYOUT, probe_options,
                   timeout=60, env=dict(env or {}, GRIDCOLL_MODEL_DIR=model_dir))


def test_default_model():
    model_dir = os.path.join(workdir, "cache", "gridcoll")
    rc, out, err = probe_default(model_dir)
    check(rc == 0, "gridrun --probe exited %d:\n%s\n%s" % (rc, out, err))
    names = os.listdir(model_dir)
    check(len(names) == 1, "one model file expected: %s" % names)
    model = os.path.join(model_dir, names[0])
    check("gridrun: model written to %s\n" % model in out,
          "no 'model written to' line:\n" + out)
    check(os.stat(model_dir).st_mode & 0o777 == 0o700 and
          os.stat(os.path.dirname(model_dir)).st_mode & 0o777 == 0o700,
          "the model directories should be made with mode 0700")
    check("# layout: alpha:2,beta:2\n" in open(model).read(),
          "the model does not record its layout:\n" + open(model).read())
    predicted_choice(model, "alltoall", 65536)  # gc_model parses it

    seen, err = models_seen(LAYOUT, model_dir)
    check(seen == {model}, "same layout: the ranks saw %s" % seen)
    check(model not in err, "the default model is only reported with "
          "--verbose:\n" + err)
    seen, err = models_seen(["--verbose"] + LAYOUT, model_dir)
    check(seen == {model} and
          len([l for l in err.splitlines() if model in l]) == 1,
          "--verbose should name the default model in one line:\n" + err)
    seen, _ = models_seen(["--site-sizes", "1,3"], model_dir)
    check(seen == {""}, "another layout: the ranks saw %s" % seen)
    seen, _ = models_seen(["--no-model"] + LAYOUT, model_dir)
    check(seen == {""}, "--no-model: the ranks saw %s" % seen)
    slow = write("slow.cfg", SLOW_MESSAGES)
    seen, _ = models_seen(["--model", slow] + LAYOUT, model_dir)
    check(seen == {slow}, "--model: the ranks saw %s" % seen)
    seen, _ = models_seen(LAYOUT, model_dir, env={"GRIDCOLL_MODEL": slow})
    check(seen == {slow}, "GRIDCOLL_MODEL: the ranks saw %s" % seen)

    # libgridcoll chooses by it: with the slow-message model in the
    # default place, alltoall takes hier where the rules take lg.
    shutil.copy(slow, model)
    got = used_algorithms(None, "alltoall", 1024,
                          env={"GRIDCOLL_MODEL_DIR": model_dir})
    check(got == {"hier"}, "alltoall 1024 with the default model ran %s"
          % got)

    with open(model, "w") as f:
        f.write(SLOW_MESSAGES.replace("gamma = 1.0;", "gamma = 1e9;", 1))
    rc, out, err = gridrun(LAYOUT, SHOW_MODEL, timeout=30,
                           env={"GRIDCOLL_MODEL_DIR": model_dir})
    check(rc == 2, "a broken default model: exit %d:\n%s" % (rc, out))
    check("gridrun: default model: %s:3: sites[0].gamma = 1e+09 is out of "
          "bounds" % model in err and "--probe" in err and
          "--no-model" in err,
          "no file:line error naming the model and the way out:\n" + err)
    seen, _ = models_seen(["--no-model"] + LAYOUT, model_dir)
    check(seen == {""}, "--no-model with a broken default model")
    rc, out, err = probe_default(model_dir)
    check(rc == 0 and os.listdir(model_dir) == names,
          "re-probing over a broken model: exit %d, %s:\n%s" %
          (rc, os.listdir(model_dir), err))
    predicted_choice(model, "alltoall", 65536)


FAKE_PROBE = """#!/bin/sh
# Writes half a model to its --output, as a probe dying mid-way would.
while [ $# -gt 0 ]; do
    [ "$1" = --output ] && out=$2
    shift
done
if [ "$GRIDCOLL_SITE_INDEX$PMI_RANK" = 00 ]; then
    printf 'version = 1;\nsites = (\n  { name = "alpha";' > "$out"
fi
exit $FAKE_PROBE_STATUS
"""


def test_failed_probe_leaves_no_model():
    model_dir = os.path.join(workdir, "failed")
    rc, out, err = probe_default(model_dir, ["--iters", "0"])
    check(rc == 2 and os.listdir(model_dir) == [],
          "probe with a bad option: exit %d, left %s:\n%s" %
          (rc, os.listdir(model_dir), err))
    # The fake probe is a shell script: its ranks never join the grid.
    fake = write("fake-probe.sh", FAKE_PROBE)
    os.chmod(fake, 0o755)
    for status, want_rc, want_err in (
            (3, 3, "exited with status 3"),
            (0, 1, "gridrun: --probe: gridcoll-probe wrote no valid model: ")):
        rc, out, err = probe_default(
            model_dir, [], env={"GRIDCOLL_PROBE_BIN": fake,
                                "FAKE_PROBE_STATUS": str(status)},
            extra=["--no-join-check"])
        # Every rank exits 3 at once; hydra's mpiexec (MPICH 4.0.2) at the
        # other site now and then dies of SIGPIPE writing to its exited
        # proxy before the first site's status is in (seen once in CI
        # under load): gridrun then rightly reports that one.
        if status == 3 and rc == 141:
            want_rc, want_err = 141, "mpiexec killed by signal SIGPIPE"
        check(rc == want_rc and want_err in err and
              os.listdir(model_dir) == [],
              "half a model, probe status %d: exit %d, left %s:\n%s" %
              (status, rc, os.listdir(model_dir), err))


def test_probe_option_errors():
    model_dir = os.path.join(workdir, "bad-options")
    for options, message in (
            (["--local-sizes", "8,2g"], "sizes up to 2 GiB - 1"),
            (["--wan-sizes", "2g,8"], "sizes up to 2 GiB - 1"),
            (["--wan-sizes", "8,64k,8"], "--wan-sizes: 8 twice")):
        rc, out, err = probe_default(model_dir, options)
        check(rc == 2 and "gridcoll-probe: %s\n" % message in err and
              os.listdir(model_dir) == [],
              "probe %s: exit %d, left %s:\n%s"
              % (" ".join(options), rc, os.listdir(model_dir), err))


def test_probe_usage():
    gridrun_usage_errors([
        (["--probe", "--sites", "1", "-n", "2"],
         "--probe needs at least two sites"),
        (["--probe", "--model", "/dev/null"] + LAYOUT,
         "--model and --native do not apply"),
        (["--probe"] + LAYOUT + ["x"],
         "put '--' before gridcoll-probe's options"),
        (["--no-model", "--model", "/dev/null"] + LAYOUT + ["--", "true"],
         "--model and --no-model exclude each other"),
    ], timeout=30)


if __name__ == "__main__":
    main([(name[len("test_"):], fn) for name, fn in sorted(globals().items())
          if name.startswith("test_")])
