#!/usr/bin/env python3
"""Starts a command and SIGKILLs it once its output says something.

    kill-when.py [--signal NAME [--again SECONDS]] LOG TEXT [SECONDS] -- CMD...

Runs CMD with stdout and stderr to LOG, waits until LOG contains TEXT (for
up to SECONDS, default 60), then sends SIGKILL to CMD's process alone (not
to its children: what they do when their parent dies is what the tests
check, with no-process.py) and reaps it. Exits 0 when it killed CMD; 1 when
CMD ended first or TEXT never came (LOG then says why).

--signal INT (or TERM, ...) sends that signal instead, to CMD alone, waits
up to 60 s for CMD to end and prints "kill-when: exit code N" (N negative:
the signal that ended CMD). --again S sends it a second time S seconds
after the first, if CMD is still running (a second Ctrl-C).
"""

import os
import signal
import subprocess
import sys
import time


def main():
    args = sys.argv[1:]
    sig = signal.SIGKILL
    again = None
    if args[0] == "--signal":
        sig = getattr(signal, "SIG" + args[1])
        args = args[2:]
        if args[0] == "--again":
            again = float(args[1])
            args = args[2:]
    split = args.index("--")
    log, text = args[0], args[1]
    seconds = float(args[2]) if split > 2 else 60.0
    command = args[split + 1:]
    with open(log, "wb") as out:
        child = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with open(log, "rb") as f:
            if text.encode() in f.read():
                os.kill(child.pid, sig)
                if sig == signal.SIGKILL:
                    child.wait()
                    return 0
                if again is not None:
                    try:
                        child.wait(timeout=again)
                    except subprocess.TimeoutExpired:
                        os.kill(child.pid, sig)
                try:
                    child.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    child.kill()
                    child.wait()
                    print("kill-when: the command did not end within 60 s "
                          "of SIG%s" % sig.name[3:])
                    return 1
                print("kill-when: exit code %d" % child.returncode)
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
