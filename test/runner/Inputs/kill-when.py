#!/usr/bin/env python3
"""Starts a command and SIGKILLs it once its output says something.

    kill-when.py LOG TEXT [SECONDS] -- CMD...

Runs CMD with stdout and stderr to LOG, waits until LOG contains TEXT (for
up to SECONDS, default 60), then sends SIGKILL to CMD's process alone (not
to its children: what they do when their parent dies is what the tests
check, with no-process.py) and reaps it. Exits 0 when it killed CMD; 1 when
CMD ended first or TEXT never came (LOG then says why).
"""

import os
import signal
import subprocess
import sys
import time


def main():
    split = sys.argv.index("--")
    log, text = sys.argv[1], sys.argv[2]
    seconds = float(sys.argv[3]) if split > 3 else 60.0
    command = sys.argv[split + 1:]
    with open(log, "wb") as out:
        child = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with open(log, "rb") as f:
            if text.encode() in f.read():
                os.kill(child.pid, signal.SIGKILL)
                child.wait()
                return 0
        if child.poll() is not None:
            print("kill-when: the command ended (exit code %d) before %r "
                  "appeared in %s" % (child.returncode, text, log))
            return 1
        time.sleep(0.1)
    child.kill()
    child.wait()
    print("kill-when: %r did not appear in %s within %g s" % (text, log,
                                                               seconds))
    return 1


sys.exit(main())
