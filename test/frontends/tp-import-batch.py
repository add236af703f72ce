#!/usr/bin/env python3
"""Runs several tp-import commands in one python process (torch is imported
once): each line of FILE that starts with --prefix (default `CASE:`; a lit
test lists its cases in itself) is one command's arguments, with $S and $T
replaced by --var values. Prints, per command, `case: <line>`,
tp-import's own `tp-import: ...` lines (errors, the self-check; the
`stages:` line of seconds and memory only with --stages), `exit: N` and
`written: yes|no` (whether its -o file exists).

  tp-import-batch.py --var S=DIR --var T=DIR FILE
"""

import argparse
import contextlib
import io
import os
import shlex
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "python"))

from tp_opt.importer import cli  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("file")
    p.add_argument("--var", action="append", default=[])
    p.add_argument("--prefix", default="CASE:")
    p.add_argument("--stages", action="store_true",
                   help="also print tp-import's `stages:` line")
    args = p.parse_args()
    subst = dict(v.split("=", 1) for v in args.var)
    status = 0
    with open(args.file) as f:
        lines = [l.strip()[len(args.prefix):].strip() for l in f
                 if l.strip().startswith(args.prefix)]
    for line in lines:
        text = line
        for k, v in subst.items():
            text = text.replace("$" + k, v)
        argv = shlex.split(text)
        out = argv[argv.index("-o") + 1] if "-o" in argv else None
        if out and os.path.exists(out):
            os.remove(out)
        err = io.StringIO()
        code = 0
        with contextlib.redirect_stderr(err):
            try:
                code = cli.main(argv) or 0
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else 1
        print("case: " + line)
        for l in err.getvalue().splitlines():
            # The stages line (seconds, memory) varies from run to run.
            if l.startswith("tp-import:") and (
                    args.stages or not l.startswith("tp-import: stages:")):
                print(l)
        print("exit: %d" % code)
        if out:
            print("written: %s" % ("yes" if os.path.exists(out) else "no"))
        sys.stdout.flush()
        status |= code != 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
