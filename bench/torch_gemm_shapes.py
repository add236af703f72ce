#!/usr/bin/env python3
"""torch.matmul (cuBLAS through PyTorch) on GEMM shapes, run by
scripts/gpu-check.sh --run beside the same shapes through our runtime.

  torch_gemm_shapes.py SHAPES   (one "batch m n k [s]" line per shape)

bf16, on the first CUDA device; for each shape the median of 20 CUDA-event
timings after 3 warmup products, printed as `shape B M N K: T s, F
TFLOP/s`. A line with s > 1 is a shared-A call of our runtime (s
products of one [m, k] activation and s [k, n] weights: the layer's Q/K/V
and gate/up): timed as the s torch.matmul calls an eager layer makes and
as one torch.matmul of the s weights side by side ([k, s n], a fused QKV
weight), printed as `shape B M N K xS: T s, F TFLOP/s; concatenated: T2 s,
F2 TFLOP/s`. Times are figures, never assertions.
"""

import sys

try:
    import torch
except ImportError:
    print("torch_gemm_shapes: no PyTorch", file=sys.stderr)
    sys.exit(2)


def timed(fn):
    """The median of 20 CUDA-event timings of fn() after 3 warmup calls."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(20):
        start, end = torch.cuda.Event(True), torch.cuda.Event(True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    return sorted(times)[len(times) // 2]


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("torch_gemm_shapes: no CUDA device", file=sys.stderr)
        return 2
    shapes = []
    for line in open(sys.argv[1]):
        if line.strip():
            v = [int(x) for x in line.split()]
            shapes.append(tuple(v + [1] * (5 - len(v))))
    print("device: %s, torch %s" % (torch.cuda.get_device_name(0), torch.__version__))
    for b, m, n, k, s in shapes:
        lead = (b,) if b > 1 else ()
        a = torch.randn(*lead, m, k, device="cuda", dtype=torch.bfloat16)
        ws = [torch.randn(*lead, k, n, device="cuda", dtype=torch.bfloat16)
              for _ in range(s)]
        flops = 2.0 * b * m * n * k * s
        t = timed(lambda: [a @ w for w in ws])
        if s == 1:
            print("shape %d %d %d %d: %.6g s, %.1f TFLOP/s" % (
                b, m, n, k, t, flops / t / 1e12), flush=True)
            continue
        cat = torch.cat(ws, dim=-1)
        del ws
        tc = timed(lambda: a @ cat)
        print("shape %d %d %d %d x%d: %.6g s, %.1f TFLOP/s; concatenated: "
              "%.6g s, %.1f TFLOP/s" % (b, m, n, k, s, t, flops / t / 1e12,
                                        tc, flops / tc / 1e12), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
