"""One-op modules in the spellings torch-mlir got wrong or could not lower,
each exported by tp-import and compared with PyTorch by its self-check
(tp-import-decompositions.test, tp-import-check.test; docs/tp-import.md,
"Decompositions")."""

import torch
import torch.nn.functional as F


class GeluTanh(torch.nn.Module):
    """Gemma, Gemma2/3, StarCoder2's activation: torch-mlir used 0.7977240
    for sqrt(2/pi) = 0.7978846."""

    def forward(self, x):
        return F.gelu(0.5 * x, approximate="tanh")


class NegativePad(torch.nn.Module):
    """RWKV's token shift: ZeroPad2d((0, 0, 1, -1)) shifts the sequence by
    one; torch-mlir's tensor.pad with a negative low folded away."""

    def __init__(self):
        super().__init__()
        self.shift = torch.nn.ZeroPad2d((0, 0, 1, -1))

    def forward(self, x):
        return self.shift(x)


class TopK(torch.nn.Module):
    """A MoE router's top-k (sorted): torch-mlir wrote tm_tensor.sort."""

    def forward(self, x):
        values, indices = torch.topk(x, 3, dim=-1)
        return values, indices


class TopKUnsorted(torch.nn.Module):
    """topk(sorted=False) failed to legalize. Its order is unspecified, so
    the outputs are the order-free facts: the sum of the values and which
    positions were chosen."""

    def forward(self, x):
        values, indices = torch.topk(x, 3, dim=-1, sorted=False)
        chosen = (indices.unsqueeze(-1) ==
                  torch.arange(x.shape[-1])).sum(-2)
        return values.sum(-1), chosen


class Sort(torch.nn.Module):
    """grouped_mm experts sort the tokens by expert: tm_tensor.sort."""

    def forward(self, x):
        values, indices = torch.sort(x, dim=-1, descending=True)
        return values, indices, torch.argsort(x, dim=0)


class HistcExperts(torch.nn.Module):
    """transformers' token count per expert (grouped_mm experts):
    histc of the expert ids as floats; torch-mlir has no lowering."""

    def forward(self, ids):
        return torch.histc(ids.float(), bins=8, min=0, max=7)


class Histc(torch.nn.Module):
    """histc of real values: out-of-range elements dropped, the top edge in
    the last bin."""

    def forward(self, x):
        return torch.histc(x, bins=10, min=-1.5, max=1.5)


class Cumsum(torch.nn.Module):
    """OPT's positions and transformers 5's packed-sequence check:
    tm_tensor.scan."""

    def forward(self, x):
        return torch.cumsum(x, dim=1)


class GroupedMM(torch.nn.Module):
    """grouped_mm experts: rows offs[g-1] <= r < offs[g] times weight g;
    no lowering."""

    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(4, 16, 8))
        self.register_buffer("offs", torch.tensor([3, 5, 9, 12],
                                                  dtype=torch.int32))

    def forward(self, x):
        return F.grouped_mm(x, self.w, offs=self.offs)


class GroupedMMFallback(GroupedMM):
    """transformers' own grouped matmul op (f32 on the CPU, where torch's
    does not apply): the same product."""

    def forward(self, x):
        import transformers.integrations.moe  # noqa: F401 (registers the op)
        return torch.ops.transformers.grouped_mm_fallback(x, self.w, self.offs)


class IndexPut(torch.nn.Module):
    """inv_perm[perm] = arange (grouped_mm experts restoring the token
    order) and an accumulating index_put: tm_tensor.scatter."""

    def __init__(self):
        super().__init__()
        self.register_buffer("perm", torch.tensor([3, 0, 5, 1, 4, 2]))
        self.register_buffer("dup", torch.tensor([1, 1, 4, 0]))

    def forward(self, v):
        y = torch.zeros(6, 4)
        y[self.perm] = v
        z = torch.zeros(6, 4).index_put((self.dup,), v[:4], accumulate=True)
        return y, z


class Scatter(torch.nn.Module):
    """DeepSeek-V3's group mask, zeros.scatter_(1, group_idx, 1), and a
    scatter_add: tm_tensor.scatter."""

    def __init__(self):
        super().__init__()
        self.register_buffer("idx", torch.tensor([[1, 3], [0, 0], [2, 1]]))

    def forward(self, x):
        mask = torch.zeros(3, 4)
        mask.scatter_(1, self.idx, 1)
        summed = torch.zeros(3, 4).scatter_add(1, self.idx, x)
        return mask, summed


class ComplexRope(torch.nn.Module):
    """DeepSeek-V2's rotary embedding in complex numbers: polar,
    view_as_complex, a complex product, view_as_real; no lowering."""

    def forward(self, x):
        seq, dim = x.shape[-2], x.shape[-1]
        inv_freq = 1.0 / (10000 ** (torch.arange(0, dim, 2).float() / dim))
        freqs = torch.outer(torch.arange(seq).float(), inv_freq)
        cis = torch.polar(torch.ones_like(freqs), freqs) * 0.5
        xc = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
        return torch.view_as_real(xc * cis).flatten(-2)

