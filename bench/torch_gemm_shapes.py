#!/usr/bin/env python3
"""torch.matmul (cuBLAS through PyTorch) on GEMM shapes, run by
scripts/gpu-check.sh --run beside the same shapes through our runtime.

  torch_gemm_shapes.py SHAPES   (one "batch m n k" line per shape)

bf16, on the first CUDA device; for each shape the median of 20 CUDA-event
timings after 3 warmup products, printed as `shape B M N K: T s, F
TFLOP/s`. Times are figures, never assertions.
"""

import sys

try:
    import torch
except ImportError:
    print("torch_gemm_shapes: no PyTorch", file=sys.stderr)
    sys.exit(2)


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("torch_gemm_shapes: no CUDA device", file=sys.stderr)
        return 2
    shapes = [tuple(int(v) for v in line.split())
              for line in open(sys.argv[1]) if line.strip()]
    print("device: %s, torch %s" % (torch.cuda.get_device_name(0), torch.__version__))
    for b, m, n, k in shapes:
        lead = (b,) if b > 1 else ()
        a = torch.randn(*lead, m, k, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(*lead, k, n, device="cuda", dtype=torch.bfloat16)
        for _ in range(3):
            a @ w
        torch.cuda.synchronize()
        times = []
        for _ in range(20):
            start, end = torch.cuda.Event(True), torch.cuda.Event(True)
            start.record()
            a @ w
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) / 1e3)
        t = sorted(times)[len(times) // 2]
        print("shape %d %d %d %d: %.6g s, %.1f TFLOP/s" % (
            b, m, n, k, t, 2.0 * b * m * n * k / t / 1e12))
    return 0


if __name__ == "__main__":
    sys.exit(main())
