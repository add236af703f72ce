#!/usr/bin/env python3
"""Memory per device of a training step: the plan report's figures against
the usual formulas (docs/training.md, "Memory per device").

    bench/train-memory.py [BUILD_DIR]

For each model (GPT-2 small: 1024 tokens; Llama-2-7B: 4096 tokens; f32,
AdamW) and tp in 1, 2, 4, 8 it plans `tp-gen --train` with 1 and 2 layers
(--tp-propagate, default options) and prints one markdown row: the
measured bytes per device of weights, gradients and Adam states of the
1-layer step (embedding and LM head included), the formula for them
(4 + 4 + 8 bytes per parameter, divided by tp), and the activations of one
layer (2-layer step minus 1-layer step) against Korthikanti et al. (2022)
for an f32 block without dropout. Prints figures, asserts nothing.
"""
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = sys.argv[1] if len(sys.argv) > 1 else os.environ.get(
    "TP_BUILD_DIR", os.path.join(ROOT, "build"))
MODELS = [
    # name, tp-gen options, s, b, h, a
    ("gpt2-small", ["--preset", "gpt2-small", "--seq", "1024"], 1024, 1, 768, 12),
    ("llama2-7b", ["--preset", "llama2-7b", "--seq", "4096"], 4096, 1, 4096, 32),
]
MB = 1 << 20


def plan(tmp, options, layers, tp):
    model = os.path.join(tmp, "m.mlir")
    report = os.path.join(tmp, "r.json")
    subprocess.run([os.path.join(BUILD, "bin", "tp-gen"), *options, "--train",
                    "--layers", str(layers), "-o", model], check=True)
    start = time.time()
    subprocess.run([os.path.join(BUILD, "bin", "tp-opt"), model,
                    "--tp-propagate=tp=%d report=%s" % (tp, report),
                    "-o", os.devnull], check=True)
    fn = json.load(open(report))["functions"][0]
    return fn, time.time() - start


def korthikanti_f32(s, b, h, a, t, sp):
    """Bytes one layer keeps for the backward pass: Korthikanti et al.'s
    count for 16-bit activations, without the dropout masks and dropout
    outputs (our blocks have no dropout: 32sbh + 2as^2b instead of
    34sbh + 5as^2b), doubled for f32. Without sequence parallelism the
    norm inputs and the inputs of QKV and fc1 (8sbh) are replicated."""
    split = 24 * s * b * h + 2 * a * s * s * b
    replicated = 8 * s * b * h
    per = (split + replicated) / t if sp else split / t + replicated
    return 2 * per


def main():
    print("| model | tp | SP | weights (MiB) | grads (MiB) | Adam m+v (MiB) "
          "| total (MiB) | formula 16P/t (MiB) | activations/layer (MiB) "
          "| Korthikanti f32 (MiB) | plan s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for name, options, s, b, h, a in MODELS:
            for tp in (1, 2, 4, 8):
                one, seconds = plan(tmp, options, 1, tp)
                two, _ = plan(tmp, options, 2, tp)
                t1, t2 = one["training"], two["training"]
                # Sequence parallelism: a reduce-scatter per sub-block (the
                # embedding's partial sum may take one more).
                sp = sum(st["collective"] == "reduce_scatter"
                         for r in two["reshards"] for st in r["steps"]) >= 4
                params = t1["weight_elements"]
                act = (t2["activation_bytes_per_device"]
                       - t1["activation_bytes_per_device"])
                total = (t1["weight_bytes_per_device"]
                         + t1["gradient_bytes_per_device"]
                         + t1["optimizer_state_bytes_per_device"])
                print("| %s | %d | %s | %.1f | %.1f | %.1f | %.1f | %.1f | "
                      "%.1f | %.1f | %.1f |" % (
                          name, tp, "yes" if sp else "no",
                          t1["weight_bytes_per_device"] / MB,
                          t1["gradient_bytes_per_device"] / MB,
                          t1["optimizer_state_bytes_per_device"] / MB,
                          total / MB,
                          16.0 * params / tp / MB, act / MB,
                          korthikanti_f32(s, b, h, a, tp, sp) / MB, seconds))
                sys.stdout.flush()


if __name__ == "__main__":
    main()
