#!/usr/bin/env python3
"""PyTorch baselines of issue 8, run by scripts/gpu-check.sh --run.

One Llama-2-7B decoder layer (hidden 4096, 32 heads of 128, MLP 11008,
RMSNorm, rotary embeddings, causal attention, SwiGLU), bf16, batch 1 x 4096
tokens, forward only, on the first CUDA device:

  eager:     written op for op (attention as matmul, mask, softmax, matmul)
  sdpa:      the same layer with torch.nn.functional.scaled_dot_product_attention
  attention: the layer's attention alone, SDPA with is_causal=True on Q, K,
             V laid out as the layer (and gpu-check's attention7b model)
             has them, [1, 4096, 32, 128] viewed as [1, 32, 4096, 128]: the
             default backend, then each of flash, cudnn, efficient and math
             where PyTorch has it for these inputs
  gemm:      the chip's bf16 GEMM rate (8192^3 torch.matmul)

Prints one line each, `eager: 12.345 ms per layer`, `sdpa: ...`,
`attention: BACKEND: 0.321 ms, 428.1 TFLOP/s over 137.5 causal GFLOP`
(or `attention: BACKEND: unavailable (why)`), `gemm: 8192^3 bf16 ...
TFLOP/s`: medians over timed repetitions after a warmup, timed with CUDA
events. Causal flops: 4 x head_dim per (query, key) pair the mask keeps,
seq (seq + 1) / 2 per head. Times are figures, never assertions.
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


def attention(seq, heads, head_dim, device, dtype, reps):
    """SDPA (is_causal=True) alone on the layer's layout, per backend."""
    g = torch.Generator(device="cpu").manual_seed(1)
    q, k, v = (torch.randn(1, seq, heads, head_dim, generator=g)
               .to(device, dtype).transpose(1, 2) for _ in range(3))
    flops = 4.0 * heads * head_dim * seq * (seq + 1) / 2
    backends = [("default", None)]
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
        backends += [(name, getattr(SDPBackend, attr)) for name, attr in (
            ("flash", "FLASH_ATTENTION"), ("cudnn", "CUDNN_ATTENTION"),
            ("efficient", "EFFICIENT_ATTENTION"), ("math", "MATH"))
            if hasattr(SDPBackend, attr)]
    except ImportError:
        sdpa_kernel = None
    for name, backend in backends:
        def run():
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)
        try:
            if backend is None:
                t = timed(run, 3, reps)
            else:
                with sdpa_kernel(backend):
                    t = timed(run, 3, reps)
        except Exception as e:  # no kernel for these inputs, or no backend
            print("attention: %s: unavailable (%s)" % (
                name, str(e).strip().splitlines()[0][:120] if str(e).strip() else "error"))
            continue
        print("attention: %s: %.3f ms, %.1f TFLOP/s over %.1f causal GFLOP" % (
            name, t * 1e3, flops / t / 1e12, flops / 1e9), flush=True)


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
            print("%s: %.3f ms per layer" % (name, t * 1e3), flush=True)
        attention(args.seq, 32, 128, device, dtype, args.reps)
        n = 8192
        a = torch.randn(n, n, device=device, dtype=dtype)
        b = torch.randn(n, n, device=device, dtype=dtype)
        t = timed(lambda: a @ b, 3, args.reps)
        print("gemm: %d^3 bf16 %.3f ms, %.1f TFLOP/s" % (n, t * 1e3, 2 * n ** 3 / t / 1e12))
    return 0


if __name__ == "__main__":
    sys.exit(main())
