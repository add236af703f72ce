#!/bin/sh
# A launcher (TP_RUN_MPIRUN) that starts the real mpirun with tp-run's
# arguments, waits until its ranks have made their vader shared-memory
# segments (in the folder tp-run gives as btl_vader_backing_directory), then
# kills mpirun with SIGKILL, as a user or the OOM killer might: what mpirun
# leaves behind is what run-hangs.test checks.
dir=
prev=
for a in "$@"; do
  [ "$prev" = btl_vader_backing_directory ] && dir=$a
  prev=$a
done
mpirun "$@" &
pid=$!
i=0
while [ $i -lt 600 ]; do
  ls "$dir" 2>/dev/null | grep -q vader_segment && break
  sleep 0.1
  i=$((i + 1))
done
echo "killing mpirun (SIG${KILL_SIGNAL:-KILL})"
kill -${KILL_SIGNAL:-9} $pid
wait $pid
exit 137
