#!/usr/bin/env python3
"""Every relative link of the tree's Markdown files resolves: the file it
names exists, and an anchor (`page.md#section`, `#section`) names a heading
of that page as GitHub spells it.  Links inside code (fenced blocks,
backtick spans) are text, not links; links with a scheme (https:, mailto:)
are not checked.  Needs no build.
"""

import os
import re
import tempfile

from harness import SOURCE_DIR, check, main

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")


def outside_fences(path):
    """(line number, line) of the file's lines outside fenced code blocks."""
    fenced = False
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if FENCE.match(line):
                fenced = not fenced
            elif not fenced:
                yield number, line


def anchors(path):
    """GitHub's heading ids: lower case, punctuation dropped, spaces to
    hyphens, -1, -2, ... on repeats."""
    seen = {}
    ids = set()
    for _, line in outside_fences(path):
        m = HEADING.match(line)
        if not m:
            continue
        text = re.sub(r"[`*]", "", m.group(1)).lower()
        slug = re.sub(r"[^\w\- ]", "", text).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        ids.add(slug if n == 0 else "%s-%d" % (slug, n))
    return ids


def broken_links(top):
    """(file:line, target) of every relative link under top that does not
    resolve."""
    bad = []
    for root, dirs, files in os.walk(top):
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "build"))
                         and d != "__pycache__"
                         and os.path.join(root, d) !=
                         os.path.join(top, "conf", "tls", "out"))
        for name in sorted(files):
            if not name.endswith(".md"):
                continue
            path = os.path.join(root, name)
            for number, line in outside_fences(path):
                # a link inside a backtick span is text
                for target in LINK.findall(re.sub(r"`[^`]*`", "", line)):
                    if SCHEME.match(target):
                        continue
                    file_part, _, anchor = target.partition("#")
                    dest = os.path.normpath(os.path.join(root, file_part)) \
                        if file_part else path
                    where = "%s:%d" % (os.path.relpath(path, top), number)
                    if not os.path.exists(dest):
                        bad.append((where, target))
                    elif anchor and (not dest.endswith(".md") or
                                     anchor not in anchors(dest)):
                        bad.append((where, target))
    return bad


def links_resolve():
    bad = broken_links(SOURCE_DIR)
    check(not bad, "links that do not resolve:\n" +
          "\n".join("%s: %s" % b for b in bad))


def checker_finds_broken_links():
    with tempfile.TemporaryDirectory() as top:
        os.mkdir(os.path.join(top, "docs"))
        with open(os.path.join(top, "docs", "a.md"), "w") as f:
            f.write("# Page A\n\n## Two words: `code`\n\n## Two words: code\n\n"
                    "[ok](b.md) [ok](#two-words-code-1) [ok](../README.md)\n"
                    "[missing](c.md) [bad anchor](b.md#nowhere)\n"
                    "`[in code](d.md)` [web](https://example.org/x.md)\n"
                    "```\n[fenced](e.md)\n```\n")
        with open(os.path.join(top, "docs", "b.md"), "w") as f:
            f.write("# B\n\n[ok](a.md#two-words-code) ![img](x.png)\n")
        with open(os.path.join(top, "README.md"), "w") as f:
            f.write("[ok](docs/a.md#page-a)\n")
        os.mkdir(os.path.join(top, "build"))
        with open(os.path.join(top, "build", "skipped.md"), "w") as f:
            f.write("[missing](nowhere.md)\n")
        got = broken_links(top)
        want = [("docs/a.md:8", "c.md"), ("docs/a.md:8", "b.md#nowhere"),
                ("docs/b.md:3", "x.png")]
        check(got == want, "broken_links: %r, want %r" % (got, want))


if __name__ == "__main__":
    main([("checker_finds_broken_links", checker_finds_broken_links),
          ("links_resolve", links_resolve)])
