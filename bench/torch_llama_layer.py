#!/usr/bin/env python3
"""PyTorch baselines of issue 8, run by scripts/gpu-check.sh --run.

One Llama-2-7B decoder layer (hidden 4096, 32 heads of 128, MLP 11008,
RMSNorm, rotary embeddings, causal attention, SwiGLU), bf16, batch 1 x 4096
tokens, forward only, on the first CUDA device:

  eager: written op for op (attention as matmul, mask, softmax, matmul)
  sdpa:  the same layer with torch.nn.functional.scaled_dot_product_attention
  gemm:  the chip's bf16 GEMM rate (8192^3 torch.matmul)

Prints one line each, `eager: 12.345 ms per layer`, `sdpa: ...`,
`gemm: 8192^3 bf16 ... TFLOP/s`: medians over timed repetitions after a
warmup, timed with CUDA events. Times are figures, never assertions.
"""

import argparse
import math
import sys

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    print("torch_llama_layer: no PyTorch", file=sys.stderr)
    sys.exit(2)


def rms_norm(x, weight, eps=1e-5):
    variance = x.float().pow(2).mean(-1, keepdim=True)
    return (x.float() * torch.rsqrt(variance + eps)).to(x.dtype) * weight


def rotary(seq, dim, device, base=10000.0):
    inv = 1.0 / (base ** (torch.arange(0, dim, 2, device=device).float() / dim))
    t = torch.arange(seq, device=device).float()
    freqs = torch.outer(t, inv)
    return freqs.cos(), freqs.sin()


def apply_rotary(x, cos, sin):
    # x: [b, h, s, d], rotating interleaved halves.
    x1, x2 = x[..., 0::2].float(), x[..., 1::2].float()
    out = torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1)
    return out.flatten(-2).to(x.dtype)


class Layer:
    def __init__(self, hidden, heads, ffn, device, dtype):
        g = torch.Generator(device="cpu").manual_seed(0)

        def w(*shape):
            return (torch.randn(*shape, generator=g) * 0.02).to(device, dtype)

        self.heads, self.head_dim = heads, hidden // heads
        self.wq, self.wk, self.wv, self.wo = (w(hidden, hidden) for _ in range(4))
        self.w1, self.w3 = w(hidden, ffn), w(hidden, ffn)
        self.w2 = w(ffn, hidden)
        self.n1 = torch.ones(hidden, device=device, dtype=dtype)
        self.n2 = torch.ones(hidden, device=device, dtype=dtype)

    def forward(self, x, cos, sin, sdpa):
        b, s, h = x.shape
        y = rms_norm(x, self.n1)

        def heads(t):
            return t.view(b, s, self.heads, self.head_dim).transpose(1, 2)

        q = apply_rotary(heads(y @ self.wq), cos, sin)
        k = apply_rotary(heads(y @ self.wk), cos, sin)
        v = heads(y @ self.wv)
        if sdpa:
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            scores = (q @ k.transpose(-1, -2)) / math.sqrt(self.head_dim)
            mask = torch.full((s, s), float("-inf"), device=x.device).triu(1)
            p = torch.softmax(scores.float() + mask, dim=-1).to(x.dtype)
            a = p @ v
        x = x + a.transpose(1, 2).reshape(b, s, h) @ self.wo
        y = rms_norm(x, self.n2)
        return x + (F.silu(y @ self.w1) * (y @ self.w3)) @ self.w2


def timed(fn, warmup, reps):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(True), torch.cuda.Event(True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    times.sort()
    return times[len(times) // 2]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seq", type=int, default=4096)
    parser.add_argument("--reps", type=int, default=10)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("torch_llama_layer: no CUDA device", file=sys.stderr)
        return 2
    device, dtype = "cuda", torch.bfloat16
    print("device: %s, torch %s" % (torch.cuda.get_device_name(0), torch.__version__))
    layer = Layer(4096, 32, 11008, device, dtype)
    x = torch.randn(1, args.seq, 4096, device=device, dtype=dtype)
    cos, sin = rotary(args.seq, 128, device)
    with torch.no_grad():
        for name, sdpa in (("eager", False), ("sdpa", True)):
            t = timed(lambda: layer.forward(x, cos, sin, sdpa), 3, args.reps)
            print("%s: %.3f ms per layer" % (name, t * 1e3))
        n = 8192
        a = torch.randn(n, n, device=device, dtype=dtype)
        b = torch.randn(n, n, device=device, dtype=dtype)
        t = timed(lambda: a @ b, 3, args.reps)
        print("gemm: %d^3 bf16 %.3f ms, %.1f TFLOP/s" % (n, t * 1e3, 2 * n ** 3 / t / 1e12))
    return 0


if __name__ == "__main__":
    sys.exit(main())
