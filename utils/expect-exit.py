#!/usr/bin/env python3
"""Runs a command and succeeds only if it exits with exactly the given code.

    expect-exit.py CODE COMMAND [ARGS...]

The command's stdout and stderr pass through, so a test can pipe them into
FileCheck. A death by signal (a crash) never matches, whatever CODE is.
"""
import subprocess
import sys

if len(sys.argv) < 3:
    sys.stderr.write("usage: expect-exit.py CODE COMMAND [ARGS...]\n")
    sys.exit(2)
expected = int(sys.argv[1])
proc = subprocess.run(sys.argv[2:])
if proc.returncode < 0:
    sys.stderr.write("expect-exit: %s died of signal %d\n"
                     % (sys.argv[2], -proc.returncode))
    sys.exit(1)
if proc.returncode != expected:
    sys.stderr.write("expect-exit: %s exited with %d, expected %d\n"
                     % (sys.argv[2], proc.returncode, expected))
    sys.exit(1)
sys.exit(0)
