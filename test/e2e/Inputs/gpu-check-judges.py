#!/usr/bin/env python3
"""What gpu_check.py makes of sample logs of the stages a full bundle has
and a --tiny-only one does not (test/e2e/gpu-check-plan.test): the 7B
attention alone (fused, unfused), a shared-A GEMM, PyTorch's attention
lines, and the performance.md tables they fill.

  gpu-check-judges.py SCRIPTS BUNDLE

SCRIPTS is the repository's scripts/ folder, BUNDLE a bundle folder with
the models' folders (not their files): plan() lists a stage for each.
Sample logs go into BUNDLE/run/ (a --run's work folder)."""

import os
import struct
import sys
import types

sys.path.insert(0, sys.argv[1])
import gpu_check as g  # noqa: E402

bundle = sys.argv[2]
run = g.Run(types.SimpleNamespace(run=bundle, out=None, timeout=None,
                                  dry_run=True))
os.makedirs(run.work, exist_ok=True)
run.stages = g.plan(run)
stage = run.stage

LOGS = {
    "attention7b-tp1": "steps: 20 (after 3 warmup)\ntime per step: 0.0005 s\n",
    "attention7b-unfused-tp1": "time per step: 0.0025 s\n",
    "gemm-shared3-4096x4096x4096": "time per step: 0.0006 s\n",
    "torch-llama-layer": (
        "device: NVIDIA H200, torch 2.5\neager: 12.000 ms per layer\n"
        "sdpa: 4.000 ms per layer\n"
        "attention: default: 0.250 ms, 549.9 TFLOP/s over 137.5 causal GFLOP\n"
        "attention: flash: 0.260 ms, 528.7 TFLOP/s over 137.5 causal GFLOP\n"
        "attention: cudnn: unavailable (No available kernel. Aborting execution.)\n"
        "gemm: 8192^3 bf16 1.500 ms, 733.0 TFLOP/s\n"),
    "torch-gemm-shapes": (
        "shape 1 4096 4096 4096 x3: 0.0005 s, 824.6 TFLOP/s; concatenated: "
        "0.00045 s, 916.2 TFLOP/s\n"),
}
for name, text in LOGS.items():
    with open(os.path.join(run.work, name + ".log"), "w") as f:
        f.write(text)



def output(path, values):
    """A tp-runner output file (docs/model-abi.md): one bf16 [1, N] record."""
    raw = b"".join(struct.pack("<f", v)[2:] for v in values)
    with open(path, "wb") as f:
        f.write(struct.pack("<IIIqq", 0x54504F55, 2, 2, 1, len(values)) + raw)


# The judges of the stages as plan() made them. The unfused attention is
# compared with the fused one's output (here 1.0, -2.0, 0.5 against 1.0,
# -2.015625, 0.5: one bf16 step at 2, 0.015625 / 2 = 7.8e-3 of the
# largest magnitude).
output(stage("attention7b-tp1").output, [1.0, -2.0, 0.5])
output(stage("attention7b-unfused-tp1").output, [1.0, -2.015625, 0.5])
run.status["attention7b-tp1"] = "PASS"
for name in ("attention7b-tp1", "gemm-shared3-4096x4096x4096",
             "torch-llama-layer", "torch-gemm-shapes"):
    s = stage(name)
    print("%s: %s: %s" % ((name,) + s.judge(run, s, LOGS[name])))
s = stage("attention7b-unfused-tp1")
print("attention7b-unfused-tp1: %s: %s" % s.judge(
    run, s, LOGS["attention7b-unfused-tp1"]))
print("flops: %d" % g.ATTENTION_MODELS[0].flops)

# performance.md's attention and GEMM tables from those logs.
run.header, run.machine = ["# gpu-check --run"], {}
page = g.performance(run)
start = page.index("## Attention alone")
print(page[start:page.index("## Collectives")])
