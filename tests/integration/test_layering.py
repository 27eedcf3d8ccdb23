#!/usr/bin/env python3
"""libgridcoll's floors (libgridcoll/README.md), read from the sources.

Each folder of libgridcoll/ is a floor that uses only the floors below it:
a file that includes a header of a higher floor fails here, so the house
stays as built.
MPI entry points live only in the floors that serve the program
(coll/api/, p2p/, comm/, runtime/; the generated wrappers are gen/'s).
"""

import glob
import os
import re
import subprocess

from harness import BUILD_DIR, check, main

SOURCE_DIR = os.environ.get(
    "GRIDCOLL_SOURCE_DIR",
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
LIB = os.path.join(SOURCE_DIR, "libgridcoll")

# Bottom to top.
FLOORS = ["relay_client", "patterns", "core", "p2p", "coll", "comm",
          "runtime", "gen"]
ENTRY_POINT_DIRS = ("coll/api/", "p2p/", "comm/", "runtime/")

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
ENTRY = re.compile(r"^(?:int|double)\s+(MPIX?_\w+)\s*\(", re.M)


def sources():
    for root, _, files in os.walk(LIB):
        for f in sorted(files):
            if f.endswith((".c", ".h")):
                yield os.path.relpath(os.path.join(root, f), LIB)


def floor_of(path):
    top = path.split("/", 1)[0]
    return FLOORS.index(top) if top in FLOORS else None


def headers_by_name():
    by_name = {}
    for path in sources():
        if path.endswith(".h"):
            by_name.setdefault(os.path.basename(path), []).append(path)
    return by_name


def resolve(includer, name, by_name):
    """The library header `name` names, or None for one of elsewhere."""
    if os.path.isfile(os.path.join(LIB, name)):
        return name
    beside = os.path.normpath(os.path.join(os.path.dirname(includer), name))
    if os.path.isfile(os.path.join(LIB, beside)):
        return beside
    found = by_name.get(os.path.basename(name), [])
    return found[0] if len(found) == 1 else None


def ties():
    by_name = headers_by_name()
    found = set()
    for path in sources():
        with open(os.path.join(LIB, path)) as f:
            text = f.read()
        for name in INCLUDE.findall(text):
            header = resolve(path, name, by_name)
            if header is None or floor_of(header) is None:
                continue
            if floor_of(header) > floor_of(path):
                found.add((path, header))
    return found


def every_file_is_on_a_floor():
    stray = [p for p in sources() if floor_of(p) is None]
    check(not stray, "in no floor (%s), put them where their names say: %s"
          % (", ".join(FLOORS), ", ".join(stray)))
    twice = ["%s (%s)" % (n, ", ".join(p))
             for n, p in headers_by_name().items() if len(p) > 1]
    check(not twice, "header names must be unique in the library: %s"
          % "; ".join(twice))


def no_floor_includes_a_higher_one():
    found = ["libgridcoll/%s includes %s (%s is above %s)"
             % (a, b, FLOORS[floor_of(b)], FLOORS[floor_of(a)])
             for a, b in sorted(ties())]
    check(not found, "\n".join(found))


def objects():
    """libgridcoll's object files in the build tree, by source path; not
    those an older build left of a source since moved or removed."""
    root = os.path.join(BUILD_DIR, "libgridcoll", "CMakeFiles",
                        "gridcoll_static.dir")
    current = set(sources())
    for obj in glob.glob(os.path.join(root, "**", "*.c.o"), recursive=True):
        source = os.path.relpath(obj, root)[:-len(".o")]
        if source in current:
            yield source, obj


def symbols():
    """From the linker's view (nm): {symbol: source defining it} and
    {source: symbols it uses}."""
    defined, used = {}, {}
    by_path = dict((obj, source) for source, obj in objects())
    out = subprocess.run(["nm", "-A"] + sorted(by_path), check=True,
                         stdout=subprocess.PIPE, text=True).stdout
    for line in out.splitlines():
        path, _, rest = line.partition(":")
        source, fields = by_path[path], rest.split()
        used.setdefault(source, set())
        if len(fields) == 3 and fields[1] in "TDBR":
            defined[fields[2]] = source
        elif len(fields) == 2 and fields[0] == "U":
            used[source].add(fields[1])
    check(len(used) > 50, "found %d objects under %s" % (len(used), BUILD_DIR))
    return defined, used


def no_floor_calls_a_higher_one():
    # The includes could be right and a call still go up through a
    # declaration written by hand: the linker's view settles it.
    defined, used = symbols()
    up = sorted("libgridcoll/%s uses %s of libgridcoll/%s" % (src, sym, defined[sym])
                for src, syms in used.items() for sym in syms
                if sym in defined and floor_of(defined[sym]) > floor_of(src))
    check(not up, "\n".join(up))


# Folders that still call each other in a circle, to be cut (each set is
# one strongly connected group of folders).  Within coll/: the engine
# packs with coll/'s helpers that build on it, and composite algorithms ask
# the selector which algorithm runs a phase while the selector's tables
# name every algorithm.  A new circle fails the check; a cut one must
# leave the list.
KNOWN_CIRCLES = [
    {"coll", "coll/engine", "coll/select", "coll/allgather", "coll/allreduce",
     "coll/alltoall", "coll/barrier", "coll/bcast", "coll/gather",
     "coll/neighbor", "coll/reduce", "coll/reduce_scatter", "coll/scan",
     "coll/scatter"},
]


def circles(edges):
    """Strongly connected groups of more than one node (Tarjan)."""
    index, low, stack, on, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = set()
            while True:
                w = stack.pop()
                on.discard(w)
                group.add(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(group)

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def no_new_circle_between_folders():
    defined, used = symbols()
    edges = {}
    for src, syms in used.items():
        for sym in syms:
            if sym in defined:
                a, b = os.path.dirname(src), os.path.dirname(defined[sym])
                if a != b:
                    edges.setdefault(a, set()).add(b)
    found = circles(edges)
    new = [sorted(g) for g in found
           if not any(g <= known for known in KNOWN_CIRCLES)]
    check(not new, "folders calling each other in a circle: %r" % new)
    gone = [sorted(k) for k in KNOWN_CIRCLES
            if not any(g == k for g in found)]
    check(not gone, "a known circle changed or was cut (update "
          "KNOWN_CIRCLES to what is left): %r; now: %r"
          % (gone, [sorted(g) for g in found]))


def checker_finds_a_tie():
    # The checker against a tie it must see: the engine's own header is a
    # floor above core/, so core/ including it would be one.
    check(floor_of("p2p/gc_p2p_engine.h") > floor_of("core/gc_progress.c"),
          "p2p/ is not above core/")
    check(resolve("core/gc_progress.c", "p2p/gc_p2p_engine.h",
                  headers_by_name()) == "p2p/gc_p2p_engine.h",
          "the engine's header does not resolve")


def entry_points_where_the_program_calls():
    misplaced = []
    for path in sources():
        if not path.endswith(".c") or path.startswith(ENTRY_POINT_DIRS):
            continue
        with open(os.path.join(LIB, path)) as f:
            misplaced += ["libgridcoll/%s: %s" % (path, fn)
                          for fn in ENTRY.findall(f.read())]
    check(not misplaced, "MPI entry points live in %s, not: %s"
          % (", ".join(ENTRY_POINT_DIRS), ", ".join(misplaced)))


if __name__ == "__main__":
    main([(f.__name__, f) for f in (
        every_file_is_on_a_floor, no_floor_includes_a_higher_one,
        no_floor_calls_a_higher_one, no_new_circle_between_folders,
        checker_finds_a_tie, entry_points_where_the_program_calls)])
