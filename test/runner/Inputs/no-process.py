#!/usr/bin/env python3
"""Succeeds when no live process's command line contains TEXT.

    no-process.py TEXT [SECONDS]

Looks at /proc/*/cmdline (zombies have none, so dead ranks that nobody has
reaped yet do not count) for up to SECONDS (default 10), so that ranks that
are still being torn down get the time to go; then lists what remains and
exits 1. The fault tests use it to show that nothing outlives a run.
"""

import os
import sys
import time


def remaining(text):
    found = []
    me = os.getpid()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            with open("/proc/%s/cmdline" % entry, "rb") as f:
                args = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in args:
            found.append("%s %s" % (entry, args.strip()))
    return found


def main():
    text = sys.argv[1]
    deadline = time.monotonic() + (float(sys.argv[2]) if len(sys.argv) > 2
                                   else 10.0)
    while True:
        found = remaining(text)
        if not found:
            return 0
        if time.monotonic() >= deadline:
            print("no-process: still running:\n  " + "\n  ".join(found))
            return 1
        time.sleep(0.1)


sys.exit(main())
