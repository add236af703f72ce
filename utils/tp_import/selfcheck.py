"""The importer checks itself: the exported module, compiled and run by the
project's own tools (`tp-run --tp 1`, the CPU lowering), must compute
PyTorch's outputs on the same inputs (docs/tp-import.md, "The self-check").

tp-run reads the parameters from the Hugging Face folder the model came from
(so the check also proves that the argument names are the folder's keys) or
from a safetensors file of the stored parameters, and the inputs and
expected outputs from the reference file; tp-runner compares each output by
the relative error of docs/model-abi.md ("References") with the limit that
follows the output's element type (1e-5 for f32, 2e-2 for bf16 and f16)
unless a tolerance is given.
"""

import os
import re
import shutil
import subprocess

from .models import TPImportError

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


class CheckFailed(TPImportError):
    pass


def find_tp_run(explicit=None):
    """--tp-run, else $TP_RUN, else this checkout's build/bin/tp-run, else
    tp-run on PATH; None when there is none."""
    def runnable(path):
        return path and os.path.isfile(path) and os.access(path, os.X_OK)

    if explicit:
        if not runnable(explicit):
            raise TPImportError("--tp-run %s: no such executable" % explicit)
        return explicit
    for cand in (os.environ.get("TP_RUN"),
                 os.path.join(ROOT, "build", "bin", "tp-run"),
                 shutil.which("tp-run")):
        if runnable(cand):
            return cand
    return None


LINE = re.compile(r"^(\S+): (matches reference to|differs from reference by) "
                  r"(\S+) \(relative, limit (\S+)\)")


def run(tp_run, module_path, checkpoint, reference, work_dir, tolerance=None,
        timeout=600):
    """Runs tp-run at tp=1. Returns the per-output lines ("logits: 2.8e-07
    (limit 1e-05)"); raises CheckFailed with the error and the largest
    difference when an output differs, or with tp-run's own error."""
    cmd = [tp_run, module_path, "--tp", "1", "--checkpoint", checkpoint,
           "--reference", reference, "--work-dir", work_dir,
           "--timeout", str(timeout)]
    if tolerance is not None:
        cmd += ["--reference-tol", repr(float(tolerance))]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True,
                           timeout=timeout + 60)
    except subprocess.TimeoutExpired:
        raise CheckFailed("self-check: tp-run did not finish in %d s (pass "
                          "--no-check to skip the check)" % timeout)
    results, differs = [], []
    for line in r.stdout.splitlines():
        m = LINE.match(line)
        if m:
            ok = m.group(2).startswith("matches")
            results.append((m.group(1), ok, m.group(3), m.group(4)))
            if not ok:
                differs.append(m)
    if r.returncode == 0 and results and not differs:
        return ["%s: %s (relative, limit %s)" % (n, e, l)
                for n, _, e, l in results]
    if differs:
        worst = [l for l in r.stderr.splitlines() if "worst at index" in l]
        detail = "; ".join(
            "%s differs by %s (relative, limit %s)" % (m.group(1), m.group(3),
                                                        m.group(4))
            for m in differs)
        if worst:
            w = re.search(r"worst at index (.*)$", worst[0])
            detail += "; worst at index " + w.group(1)
        raise CheckFailed(
            "self-check failed: the exported module does not compute "
            "PyTorch's outputs (tp-run at tp=1 on the CPU): %s. The export "
            "is wrong: nothing was written (--no-check writes it anyway)"
            % detail)
    err = [l for l in r.stderr.splitlines() if l.strip()]
    last = err[-1] if err else "exit code %d" % r.returncode
    raise CheckFailed("self-check: tp-run could not run the exported module "
                      "at tp=1: %s (nothing was written; --no-check skips "
                      "the check)" % last.strip())
