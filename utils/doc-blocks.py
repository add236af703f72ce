#!/usr/bin/env python3
"""Keeps the code in a Markdown page the code that the tests run.

A fenced code block preceded by an HTML comment is tied to the tests:

    <!-- run: NAME -->        a shell block that a lit test runs as written
    <!-- excerpt: PATH -->    a block that must appear verbatim, as a run of
                              whole lines, in PATH (relative to the root)

    doc-blocks.py extract PAGE NAME   print the block `run: NAME` of PAGE
    doc-blocks.py check PAGE ROOT     check every excerpt of PAGE; print one
                                      line per block, exit 1 on a mismatch
"""
import re
import sys

MARKER = re.compile(r"^<!--\s*(run|excerpt):\s*(\S+)\s*-->\s*$")
FENCE = re.compile(r"^(```+|~~~+)")


def blocks(page):
    """Yields (kind, argument, line number, text) for each tied block."""
    with open(page) as f:
        lines = f.read().split("\n")
    i = 0
    while i < len(lines):
        m = MARKER.match(lines[i])
        if not m:
            i += 1
            continue
        start = i + 1
        fence = FENCE.match(lines[start]) if start < len(lines) else None
        if not fence:
            sys.exit("%s:%d: '%s' is not followed by a code block"
                     % (page, i + 1, lines[i]))
        end = start + 1
        while end < len(lines) and not lines[end].startswith(fence.group(1)):
            end += 1
        if end == len(lines):
            sys.exit("%s:%d: unterminated code block" % (page, start + 1))
        yield m.group(1), m.group(2), start + 1, "\n".join(lines[start + 1:end])
        i = end + 1


def extract(page, name):
    found = [text for kind, arg, _, text in blocks(page)
             if kind == "run" and arg == name]
    if len(found) != 1:
        sys.exit("%s: %d blocks 'run: %s', expected 1" % (page, len(found), name))
    print(found[0])


def check(page, root):
    failed = 0
    for kind, arg, line, text in blocks(page):
        if kind != "excerpt":
            continue
        try:
            with open("%s/%s" % (root, arg)) as f:
                source = "\n" + f.read() + "\n"
        except OSError as e:
            print("%s:%d: cannot read %s: %s" % (page, line, arg, e.strerror))
            failed += 1
            continue
        if ("\n" + text + "\n") in source:
            print("%s:%d: excerpt of %s: ok" % (page, line, arg))
        else:
            print("%s:%d: excerpt of %s: not found there verbatim"
                  % (page, line, arg))
            failed += 1
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "extract":
        extract(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 4 and sys.argv[1] == "check":
        check(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)
