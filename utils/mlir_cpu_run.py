"""Lowers an MLIR program with upstream passes and runs it on the CPU.

The one copy the test helpers share (test/tp-gen/Inputs/check-numerics.py,
test/tp-gen/Inputs/check-grads.py): `run_on_cpu(program, mlir_opt)` lowers
the text of a module whose @main returns nothing (tensors bufferized at the
function boundaries, linalg to loops, everything to the LLVM dialect) with
`mlir_opt`, runs it with the mlir-runner next to it (runtime libraries from
../lib) and returns what @main printed. Exits with the tool's stderr when
either step fails.
"""

import os
import subprocess
import sys
import tempfile

PIPELINE = [
    "--one-shot-bufferize=bufferize-function-boundaries",
    "--convert-linalg-to-loops", "--expand-strided-metadata",
    "--lower-affine", "--convert-scf-to-cf", "--convert-math-to-llvm",
    "--convert-math-to-libm", "--convert-arith-to-llvm",
    "--convert-index-to-llvm", "--finalize-memref-to-llvm",
    "--convert-cf-to-llvm", "--convert-func-to-llvm",
    "--reconcile-unrealized-casts"]


def run_on_cpu(program, mlir_opt):
    """The stdout of @main of `program`, lowered and run on the CPU."""
    bindir = os.path.dirname(os.path.realpath(mlir_opt))
    libdir = os.path.join(os.path.dirname(bindir), "lib")
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "main.mlir")
        with open(src, "w") as f:
            f.write(program)
        lowered = subprocess.run([mlir_opt, src] + PIPELINE,
                                 capture_output=True, text=True)
        if lowered.returncode != 0:
            sys.exit("error: mlir-opt failed:\n" + lowered.stderr[-4000:])
        libs = ",".join(os.path.join(libdir, lib) for lib in [
            "libmlir_runner_utils.so", "libmlir_c_runner_utils.so"])
        result = subprocess.run(
            [os.path.join(bindir, "mlir-runner"), "-e", "main",
             "--entry-point-result=void", "--shared-libs=" + libs],
            input=lowered.stdout, capture_output=True, text=True)
        if result.returncode != 0:
            sys.exit("error: mlir-runner failed:\n" + result.stderr[-4000:])
    return result.stdout
