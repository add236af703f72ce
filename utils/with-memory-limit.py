#!/usr/bin/env python3
"""Runs a command with its address space limited, as `ulimit -v KB` does in
a shell (RLIMIT_AS, inherited by its children): the tests of tp-import's
memory (test/frontends/tp-import-meta.test) run it under a limit smaller
than the model's weights.

  with-memory-limit.py SIZE COMMAND [ARGS...]

SIZE is bytes, or a number with K, M or G (powers of 1024). Exits with the
command's exit code (128 + N for a signal N).
"""

import os
import resource
import sys


def parse(size):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    try:
        if size[-1:].upper() in units:
            return int(float(size[:-1]) * units[size[-1:].upper()])
        return int(size)
    except ValueError:
        sys.exit("with-memory-limit.py: %r is not a size (bytes, or a number "
                 "with K, M or G)" % size)


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__.strip())
    limit = parse(sys.argv[1])
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    try:
        os.execvp(sys.argv[2], sys.argv[2:])
    except OSError as e:
        sys.exit("with-memory-limit.py: cannot run %s: %s" % (sys.argv[2],
                                                             e.strerror))


if __name__ == "__main__":
    main()
