#!/bin/sh
# A launcher (TP_RUN_MPIRUN) that ignores SIGTERM and never ends by itself:
# tp-run's first interrupt passes SIGTERM on and waits; only a second
# interrupt (or SIGKILL 10 s later) ends the run. The disposition is kept
# across exec, so the sleep is the launcher's own process, and keeps tp-run's
# arguments (the work folder) on its command line for no-process.py.
trap '' TERM
echo "launcher started"
exec python3 -c 'import time; time.sleep(120)' "$@"
