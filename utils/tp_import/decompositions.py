"""Rewrites that make torch-mlir's export right, applied before it lowers.

torch-mlir 20261001 lowers some ATen ops wrongly (silently) or not at all,
or into `tm_tensor` ops that MLIR 22 cannot parse. tp-import replaces each
of them, in the exported program, by upstream-only ATen ops that compute the
same values (docs/tp-import.md, "Decompositions"):

  op                         torch-mlir's problem        rewrite
  gelu(approximate="tanh")   constant 0.7977240 for      0.5 x (1 + tanh(c (x + 0.044715 x^3)))
                             sqrt(2/pi) = 0.7978846      with c = sqrt(2/pi) in double precision
  constant_pad_nd, a         the pad folds away (RWKV's  narrow the negative sides, then pad
  negative pad               token shift disappears)     the others
  topk (sorted or not)       tm_tensor.sort / fails      k rounds of max and mask (ties: lowest
                                                         index first)
  sort, argsort              tm_tensor.sort              ranks by counting (stable; n^2 compares)
  histc                      no lowering                 bin index, one-hot compare, sum
  cumsum                     tm_tensor.scan              lower-triangular mask times input, summed
  _grouped_mm (and           no lowering                 the row's group from the offsets, a
  transformers'                                          gather of its weight, a batched matmul
  grouped_mm_fallback)
  index_put (1-D indices)    tm_tensor.scatter           one-hot compare and select
  scatter, scatter_add       tm_tensor.scatter           one-hot compare along dim, select or sum
  complex tensors            no lowering                 real pairs [..., 2] (complex_to_real)

Each is a function of ATen ops that torch-mlir lowers to upstream dialects;
a decomposition that does not apply (gelu without tanh, a pad with no
negative side) returns NotImplemented and torch-mlir's own lowering stays.
Low-precision inputs (bf16, f16) are computed in f32 and rounded once, as
PyTorch's kernels do. test/frontends/tp-import-decompositions.test exports
each op alone and compares it with PyTorch.

complex_to_real() is a graph rewrite, not a table entry: complex values
(DeepSeek-V2's RoPE: view_as_complex, polar, a complex product,
view_as_real) become real tensors with a trailing dimension of 2. It runs on
the exported program's graph before the decompositions, which is then
exported again.
"""

import math

# Names of the table entries, for --skip-decomposition.
NAMES = ("gelu-tanh", "negative-pad", "topk", "sort", "histc", "cumsum",
         "grouped-mm", "index-put", "scatter", "complex")


def _opmath(torch, x):
    """x in the precision PyTorch's CPU kernels compute it in."""
    if x.dtype in (torch.bfloat16, torch.float16):
        return x.float()
    return x


def gelu(torch):
    sqrt_2_over_pi = math.sqrt(2.0 / math.pi)   # 0.7978845608028654

    def decomposition(x, approximate="none"):
        if approximate != "tanh":
            return NotImplemented
        y = _opmath(torch, x)
        inner = sqrt_2_over_pi * (y + 0.044715 * y * y * y)
        return (0.5 * y * (1.0 + torch.tanh(inner))).to(x.dtype)

    return decomposition


def constant_pad_nd(torch):
    def decomposition(x, pad, value=0):
        pad = list(pad)
        if all(p >= 0 for p in pad):
            return NotImplemented
        # pad = [last_lo, last_hi, second_last_lo, ...].
        for i in range(len(pad) // 2):
            dim = x.dim() - 1 - i
            lo, hi = pad[2 * i], pad[2 * i + 1]
            start = -lo if lo < 0 else 0
            stop = x.shape[dim] + (hi if hi < 0 else 0)
            if start or stop != x.shape[dim]:
                x = x.narrow(dim, start, max(stop - start, 0))
        rest = [max(p, 0) for p in pad]
        if any(rest):
            return torch.ops.aten.constant_pad_nd.default(x, rest, value)
        return x.clone()

    return decomposition


def _lowest(torch, dtype):
    if dtype.is_floating_point:
        return float("-inf")
    if dtype == torch.bool:
        return False
    return torch.iinfo(dtype).min


def topk(torch):
    def decomposition(x, k, dim=-1, largest=True, sorted=True):
        # k rounds: the largest untaken value, then the lowest index holding
        # it among the untaken ones (ties and -inf handled: an index is
        # never taken twice). sorted=False returns the same order, which
        # is one of the orders PyTorch may return.
        dim = dim % max(x.dim(), 1)
        n = x.shape[dim]
        y = x if largest else -x
        shape = [1] * x.dim()
        shape[dim] = n
        idx = torch.arange(n, device=x.device).reshape(shape)
        taken = torch.zeros_like(y, dtype=torch.bool)
        low = _lowest(torch, y.dtype)
        values, indices = [], []
        for _ in range(k):
            free = torch.where(taken, low, y)
            best = free.amax(dim, keepdim=True)
            cand = (free == best) & ~taken
            pick = torch.where(cand, idx, n).amin(dim, keepdim=True)
            values.append(torch.gather(x, dim, pick))
            indices.append(pick)
            taken = taken | (idx == pick)
        return torch.cat(values, dim), torch.cat(indices, dim)

    return decomposition


def _ranks(torch, x, dim, descending):
    """The stable sort position of each element along dim: the number of
    elements before it in order (smaller, or equal at a lower index)."""
    n = x.shape[dim]
    xt = x.movedim(dim, -1)
    a = xt.unsqueeze(-1)            # [..., i, 1]
    b = xt.unsqueeze(-2)            # [..., 1, j]
    before = (b > a) if descending else (b < a)
    idx = torch.arange(n, device=x.device)
    earlier = (idx.unsqueeze(0) < idx.unsqueeze(1))   # [i, j]: j < i
    before = before | ((b == a) & earlier)
    return before.to(torch.int64).sum(-1), xt      # [..., i]


def sort(torch):
    def permute_by_rank(x, dim, descending):
        dim = dim % max(x.dim(), 1)
        rank, xt = _ranks(torch, x, dim, descending)
        n = x.shape[dim]
        pos = torch.arange(n, device=x.device)
        onehot = rank.unsqueeze(-2) == pos.unsqueeze(-1)   # [..., r, i]
        values = torch.where(onehot, xt.unsqueeze(-2),
                             torch.zeros((), dtype=x.dtype)).sum(-1)
        if x.dtype != values.dtype:
            values = values.to(x.dtype)
        indices = torch.where(onehot, pos, 0).sum(-1)
        return values.movedim(-1, dim), indices.movedim(-1, dim)

    def sort_default(x, dim=-1, descending=False):
        return permute_by_rank(x, dim, descending)

    def sort_stable(x, *, stable=None, dim=-1, descending=False):
        return permute_by_rank(x, dim, descending)

    def argsort(x, dim=-1, descending=False):
        return permute_by_rank(x, dim, descending)[1]

    def argsort_stable(x, *, stable, dim=-1, descending=False):
        return permute_by_rank(x, dim, descending)[1]

    return sort_default, sort_stable, argsort, argsort_stable


def histc(torch):
    def decomposition(x, bins=100, min=0, max=0):
        y = x.reshape(-1)
        y = _opmath(torch, y) if y.is_floating_point() else y.double()
        lo, hi = float(min), float(max)
        if lo == hi:   # PyTorch: the data's range
            lo_t, hi_t = y.amin(), y.amax()
        else:   # the edges in the input's precision, as PyTorch's kernel
            lo_t = torch.full((), lo, dtype=y.dtype)
            hi_t = torch.full((), hi, dtype=y.dtype)
        width = hi_t - lo_t
        width = torch.where(width == 0, torch.ones_like(width), width)
        pos = ((y - lo_t) * bins / width).floor().to(torch.int64)
        pos = torch.where(pos == bins, bins - 1, pos)
        inside = (y >= lo_t) & (y <= hi_t)
        b = torch.arange(bins, device=x.device)
        hit = (pos.unsqueeze(0) == b.unsqueeze(1)) & inside.unsqueeze(0)
        return hit.sum(-1).to(x.dtype)

    return decomposition


def cumsum(torch):
    """out[..., i] = sum_{j <= i} x[..., j] as a lower-triangular mask times
    the input, summed (transformers 5 calls cumsum for its packed-sequence
    check and OPT for its positions)."""

    def decomposition(x, dim, dtype=None):
        if dtype is not None:
            x = x.to(dtype)
        elif not x.is_floating_point() and not x.is_complex():
            x = x.to(torch.int64)   # torch promotes integer cumsum to int64
        if x.dim() == 0:
            return x.clone()
        dim = dim % x.dim()
        n = x.shape[dim]
        xt = x.movedim(dim, -1)
        idx = torch.arange(n, device=x.device)
        mask = (idx.unsqueeze(1) >= idx.unsqueeze(0)).to(xt.dtype)  # [i, j]
        out = (xt.unsqueeze(-2) * mask).sum(-1)
        return out.movedim(-1, dim)

    return decomposition


def grouped_mm(torch):
    """_grouped_mm(a [S, K], b [G, K, N], offs [G]): rows offs[g-1] <=
    r < offs[g] are multiplied by b[g] (rows past offs[-1] give 0)."""

    def decomposition(a, b, offs=None, bias=None, out_dtype=None):
        if offs is None or a.dim() != 2 or b.dim() != 3:
            return NotImplemented
        s = a.shape[0]
        rows = torch.arange(s, device=a.device)
        ends = offs.to(torch.int64)
        group = (rows.unsqueeze(1) >= ends.unsqueeze(0)).to(torch.int64).sum(1)
        valid = group < b.shape[0]
        group = torch.where(valid, group, 0)
        w = b[group]                                      # [S, K, N]
        out = torch.bmm(a.unsqueeze(1), w).squeeze(1)     # [S, N]
        out = torch.where(valid.unsqueeze(1), out, torch.zeros((), dtype=out.dtype))
        if bias is not None:
            out = out + bias[group]
        if out_dtype is not None:
            out = out.to(out_dtype)
        return out

    return decomposition


def index_put(torch):
    """x[idx] = v for one 1-D index tensor on dimension 0 (no accumulate):
    each row takes the last value written to it, as a one-hot compare and a
    select (torch-mlir would write tm_tensor.scatter)."""

    def decomposition(x, indices, values, accumulate=False):
        if len(indices) != 1 or indices[0] is None or indices[0].dim() != 1 \
                or indices[0].dtype == torch.bool:
            return NotImplemented
        idx = indices[0].to(torch.int64)
        n, m = x.shape[0], idx.shape[0]
        idx = torch.where(idx < 0, idx + n, idx)
        v = values.expand((m,) + tuple(x.shape[1:])).to(x.dtype)
        rows = torch.arange(n, device=x.device)
        hit = rows.unsqueeze(1) == idx.unsqueeze(0)             # [n, m]
        extra = [1] * (x.dim() - 1)
        if accumulate:
            contrib = torch.where(hit.reshape(n, m, *extra), v.unsqueeze(0),
                                  torch.zeros((), dtype=x.dtype)).sum(1)
            return x + contrib
        # The last write wins: the highest position j that hits row i.
        pos = torch.arange(m, device=x.device)
        last = torch.where(hit, pos.unsqueeze(0), -1).amax(1)   # [n]
        any_hit = last >= 0
        picked = v[torch.where(any_hit, last, 0)]
        return torch.where(any_hit.reshape(n, *extra), picked, x)

    return decomposition


def scatter(torch):
    """scatter / scatter_add along dim where the index covers x's other
    dimensions: out[..., j] takes the last source value whose index is j
    (or adds them all), as a one-hot compare along dim (torch-mlir would
    write tm_tensor.scatter). DeepSeek-V3's group mask is
    zeros.scatter_(1, group_idx, 1)."""

    def impl(x, dim, index, src, accumulate):
        dim = dim % max(x.dim(), 1)
        if index.dim() != x.dim() or any(
                index.shape[d] != x.shape[d]
                for d in range(x.dim()) if d != dim):
            return NotImplemented
        n, m = x.shape[dim], index.shape[dim]
        xt = x.movedim(dim, -1)                          # [..., n]
        it = index.movedim(dim, -1).to(torch.int64)      # [..., m]
        if isinstance(src, torch.Tensor):
            for d in range(src.dim()):                   # src may be larger
                if src.shape[d] != index.shape[d]:
                    src = src.narrow(d, 0, index.shape[d])
            st = src.movedim(dim, -1).to(x.dtype)
        else:
            st = torch.full(it.shape, src, dtype=x.dtype)
        j = torch.arange(n, device=x.device)
        hit = it.unsqueeze(-2) == j.unsqueeze(-1)        # [..., n, m]
        if accumulate:
            out = xt + torch.where(hit, st.unsqueeze(-2),
                                   torch.zeros((), dtype=x.dtype)).sum(-1)
        else:
            k = torch.arange(m, device=x.device)
            last = torch.where(hit, k, -1).amax(-1)      # [..., n]
            picked = torch.gather(st, -1, last.clamp(min=0))
            out = torch.where(last >= 0, picked, xt)
        return out.movedim(-1, dim)

    def scatter_src(x, dim, index, src):
        return impl(x, dim, index, src, False)

    def scatter_value(x, dim, index, value):
        return impl(x, dim, index, value, False)

    def scatter_add(x, dim, index, src):
        return impl(x, dim, index, src, True)

    return scatter_src, scatter_value, scatter_add


def table(torch, skip=()):
    """torch-mlir's decomposition table with tp-import's rewrites; `skip`
    names rewrites to leave out (NAMES; for testing the self-check)."""
    from torch_mlir.extras.fx_decomp_util import get_decomposition_table
    aten = torch.ops.aten
    t = dict(get_decomposition_table())   # a cached dict: not ours to edit
    entries = {
        "gelu-tanh": [(aten.gelu.default, gelu(torch))],
        "negative-pad": [(aten.constant_pad_nd.default, constant_pad_nd(torch))],
        "topk": [(aten.topk.default, topk(torch))],
        "histc": [(aten.histc.default, histc(torch))],
        "cumsum": [(aten.cumsum.default, cumsum(torch))],
        "index-put": [(aten.index_put.default, index_put(torch))],
    }
    src, value, add = scatter(torch)
    entries["scatter"] = [(aten.scatter.src, src), (aten.scatter.value, value),
                          (aten.scatter_add.default, add)]
    s, ss, a, as_ = sort(torch)
    entries["sort"] = [(aten.sort.default, s), (aten.sort.stable, ss),
                       (aten.argsort.default, a), (aten.argsort.stable, as_)]
    entries["grouped-mm"] = []
    if hasattr(aten, "_grouped_mm"):
        entries["grouped-mm"].append((aten._grouped_mm.default,
                                      grouped_mm(torch)))
    # transformers' own op for grouped_mm where torch's does not apply (f32,
    # CPU): the same product, zeros past the last offset.
    fallback = getattr(getattr(torch.ops, "transformers", None),
                       "grouped_mm_fallback", None)
    if fallback is not None:
        entries["grouped-mm"].append((fallback.default, grouped_mm(torch)))
    for name, items in entries.items():
        if name in skip:
            continue
        for op, fn in items:
            t[op] = fn
    return t


class ComplexRewriteError(Exception):
    pass


def has_complex(graph):
    for n in graph.nodes:
        v = n.meta.get("val")
        if getattr(v, "dtype", None) is not None and v.dtype.is_complex:
            return True
    return False


def CONVERSIONS(torch):
    aten = torch.ops.aten
    return (aten.to.dtype, aten.to.dtype_layout, aten.to.device,
            aten._to_copy.default, torch.ops.prims.convert_element_type.default)


def complex_to_real(torch, gm):
    """Rewrites gm's graph in place so that no value is complex: a complex
    tensor of shape S is carried as a real tensor of shape S + [2] (real,
    imaginary), the layout view_as_real gives. Raises ComplexRewriteError
    naming an op on complex values that has no rewrite."""
    aten = torch.ops.aten
    g = gm.graph
    rep = {}    # complex node of the original graph -> its real pair node
    done = set()   # the nodes rewritten

    def val(n):
        return n.meta.get("val") if hasattr(n, "meta") else None

    def is_c(a):
        v = val(a)
        return getattr(v, "dtype", None) is not None and v.dtype.is_complex

    def rank(a):
        return val(a).dim()

    def call(op, *args):
        return g.call_function(op, tuple(args))

    def parts(a):
        r = rep[a]
        return call(aten.select.int, r, -1, 0), call(aten.select.int, r, -1, 1)

    def pair(re_, im):
        return call(aten.stack.default, [re_, im], -1)

    def real_dtype(dt):
        return {torch.complex64: torch.float32, torch.complex128: torch.float64,
                torch.complex32: torch.float16}.get(dt, dt)

    def norm(d, r):
        return d % r if r else 0

    def as_pair_operand(a):
        """A real tensor or a number, broadcast against a pair."""
        if isinstance(a, torch.fx.Node):
            return call(aten.unsqueeze.default, a, -1)
        return a

    for node in list(g.nodes):
        if node.op != "call_function":
            continue
        args = list(node.args)
        touches = is_c(node) or any(
            isinstance(a, torch.fx.Node) and is_c(a) for a in args) or any(
            isinstance(a, (list, tuple)) and any(
                isinstance(b, torch.fx.Node) and is_c(b) for b in a)
            for a in args)
        if not touches:
            continue
        op = node.target
        name = getattr(op, "__name__", str(op))
        with g.inserting_before(node):
            out = None
            if op is aten._assert_tensor_metadata.default:
                g.erase_node(node)
                continue
            if op is aten.view_as_complex.default:
                out = args[0]
            elif op is aten.view_as_real.default:
                out = call(aten.clone.default, rep[args[0]])
            elif op is aten.polar.default:
                mag, ang = args
                out = pair(call(aten.mul.Tensor, mag, call(aten.cos.default, ang)),
                           call(aten.mul.Tensor, mag, call(aten.sin.default, ang)))
            elif op in (aten.mul.Tensor, aten.mul.Scalar):
                a, b = args[:2]
                ca = isinstance(a, torch.fx.Node) and is_c(a)
                cb = isinstance(b, torch.fx.Node) and is_c(b)
                if ca and cb:
                    ar, ai = parts(a)
                    br, bi = parts(b)
                    out = pair(call(aten.sub.Tensor, call(aten.mul.Tensor, ar, br),
                                    call(aten.mul.Tensor, ai, bi)),
                               call(aten.add.Tensor, call(aten.mul.Tensor, ar, bi),
                                    call(aten.mul.Tensor, ai, br)))
                elif ca:
                    out = call(aten.mul.Tensor, rep[a], as_pair_operand(b))
                elif cb:
                    out = call(aten.mul.Tensor, as_pair_operand(a), rep[b])
            elif op in (aten.div.Tensor, aten.div.Scalar) and is_c(args[0]) and \
                    not (isinstance(args[1], torch.fx.Node) and is_c(args[1])):
                out = call(aten.div.Tensor, rep[args[0]], as_pair_operand(args[1]))
            elif op in (aten.add.Tensor, aten.sub.Tensor) and len(args) == 2 \
                    and not node.kwargs:
                a, b = args
                ca = isinstance(a, torch.fx.Node) and is_c(a)
                cb = isinstance(b, torch.fx.Node) and is_c(b)
                if ca and cb:
                    out = call(op, rep[a], rep[b])
                elif ca or cb:
                    c, r = (a, b) if ca else (b, a)
                    cr, ci = parts(c)
                    if ca:
                        re_ = call(op, cr, r)
                        im = ci
                    else:
                        re_ = call(op, r, cr)
                        im = call(aten.neg.default, ci) if op is aten.sub.Tensor else ci
                    out = pair(re_, im)
            elif op is aten.neg.default:
                out = call(op, rep[args[0]])
            elif op in (aten.clone.default, aten.alias.default,
                        aten.detach.default, aten.contiguous.default):
                out = call(aten.clone.default, rep[args[0]])
            elif op is aten.unsqueeze.default:
                d = args[1]
                out = call(op, rep[args[0]], d if d >= 0 else d - 1)
            elif op in (aten.view.default, aten.reshape.default,
                        aten._unsafe_view.default, aten.expand.default):
                out = call(op, rep[args[0]], list(args[1]) + [2])
            elif op is aten.permute.default:
                r = rank(args[0])
                out = call(op, rep[args[0]], [norm(d, r) for d in args[1]] + [r])
            elif op is aten.transpose.int:
                r = rank(args[0])
                out = call(op, rep[args[0]], norm(args[1], r), norm(args[2], r))
            elif op is aten.slice.Tensor:
                r = rank(args[0])
                rest = list(args[2:])
                out = call(op, rep[args[0]], norm(args[1] if len(args) > 1 else 0, r),
                           *rest)
            elif op is aten.select.int:
                r = rank(args[0])
                out = call(op, rep[args[0]], norm(args[1], r), args[2])
            elif op is aten.squeeze.dim:
                r = rank(args[0])
                out = call(op, rep[args[0]], norm(args[1], r))
            elif op is aten.cat.default:
                items = args[0]
                r = rank(items[0])
                out = call(op, [rep[i] if is_c(i) else
                                pair(i, call(aten.zeros_like.default, i))
                                for i in items], norm(args[1] if len(args) > 1 else 0, r))
            elif op in (aten.copy.default,):
                dst, src = args[:2]
                s = rep[src] if is_c(src) else pair(src, call(aten.zeros_like.default, src))
                out = call(aten.expand.default, s, list(val(dst).shape) + [2])
                out = call(aten.clone.default, out)
            elif op in CONVERSIONS(torch):
                dtype = node.kwargs.get("dtype")
                if dtype is None:
                    dtype = next((a for a in args[1:]
                                  if isinstance(a, torch.dtype)), None)
                src = args[0]
                if dtype is None:               # a device move: a no-op here
                    out = call(aten.clone.default, rep[src]) if is_c(src) \
                        else None
                elif is_c(src) and dtype.is_complex:
                    out = call(aten.to.dtype, rep[src], real_dtype(dtype))
                elif is_c(src):       # complex -> real: the real part
                    out = call(aten.to.dtype,
                               call(aten.select.int, rep[src], -1, 0), dtype)
                elif dtype.is_complex:
                    x = call(aten.to.dtype, src, real_dtype(dtype))
                    out = pair(x, call(aten.zeros_like.default, x))
            elif op is aten.type_as.default and is_c(args[0]) and \
                    is_c(args[1]):
                out = call(aten.clone.default, rep[args[0]])
            if out is None:
                raise ComplexRewriteError(
                    "complex values reach %s, which has no real-arithmetic "
                    "rewrite" % name)
        if is_c(node):
            rep[node] = out
        else:
            node.replace_all_uses_with(out)
        done.add(node)
    # Drop the rewritten nodes (now unused) from the back.
    for node in reversed(list(g.nodes)):
        if node in done and not node.users:
            g.erase_node(node)
    left = [n for n in done if n.graph is g and n in g.nodes]
    if left:
        raise ComplexRewriteError("complex values reach %s, which has no "
                                  "real-arithmetic rewrite"
                                  % ", ".join(sorted({str(u.target) for n in left
                                                      for u in n.users})))
    g.lint()
    gm.recompile()
