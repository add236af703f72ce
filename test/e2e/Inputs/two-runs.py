#!/usr/bin/env python3
"""Starts a tp-run (FIRST... up to --), waits until its output says TEXT,
then runs a second command (after --) while the first still runs, prints
the second's output and exit code, and stops the first (SIGTERM, as Ctrl-C
would). For run-files.test: two tp-run on one --work-dir.

    two-runs.py TEXT FIRST... -- SECOND...
"""
import signal
import subprocess
import sys
import tempfile
import time

text = sys.argv[1]
split = sys.argv.index("--")
first, second = sys.argv[2:split], sys.argv[split + 1:]
with tempfile.TemporaryFile() as log:
    p = subprocess.Popen(first, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.time() + 120
    while time.time() < deadline and p.poll() is None:
        log.seek(0)
        if text.encode() in log.read():
            break
        time.sleep(0.2)
    else:
        log.seek(0)
        sys.exit("two-runs: the first command never said %r:\n%s"
                 % (text, log.read().decode(errors="replace")))
    r = subprocess.run(second, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    sys.stdout.write(r.stdout.decode(errors="replace"))
    print("second: exit code %d" % r.returncode)
    p.send_signal(signal.SIGTERM)
    p.wait(timeout=60)
