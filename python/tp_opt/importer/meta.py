"""Models without their weights: the export needs every parameter's shape
and dtype, never its values (the parameters are arguments of @main), so
tp-import builds the model with its parameters on PyTorch's meta device
(no storage) and traces it with fake tensors (docs/tp-import.md, "Import
without holding the model"). Peak memory then follows the size of the
program, not the parameter count: a 70B config imports in about the memory
of a tiny one.

What the forward reads as constants is not a parameter and must have real
values: buffers (RoPE's `inv_freq`, BERT's `position_ids`, BatchNorm's
running statistics). They are computed the way transformers computes them
when `from_pretrained` builds a model on the meta device itself: every
buffer gets real storage filled with a sentinel, then the model's own
`initialize_weights()` recomputes the ones its `_init_weights` knows
(parameters are marked initialized, so nothing else is touched); a buffer
the checkpoint stores is read from the checkpoint instead. A buffer still
holding the sentinel afterwards has no known value: MissingBuffers names it
(the caller then builds the model for real, if it fits, or stops).

A plain nn.Module is built with each parameter moved to the meta device as
it is registered (its buffers are computed by its own constructor, on the
CPU): the allocation of one parameter at a time is transient.
"""

import contextlib

from .models import TPImportError

# Fills an integer buffer before initialization; no initializer writes it.
INT_SENTINEL = -(2 ** 62) + 12345


class MissingBuffers(TPImportError):
    """Buffers whose value neither the checkpoint nor the model's own
    initialization gives."""

    def __init__(self, names):
        self.names = names
        one = len(names) == 1
        super().__init__(
            "the model's buffer%s %s ha%s no value without building the "
            "model (neither the checkpoint stores %s nor transformers' "
            "initialization computes %s)" % (
                "" if one else "s", ", ".join(names[:4]) +
                ("" if len(names) <= 4 else " and %d more" % (len(names) - 4)),
                "s" if one else "ve", "it" if one else "them",
                "it" if one else "them"))


def is_meta(model):
    return any(p.device.type == "meta" for p in model.parameters())


@contextlib.contextmanager
def params_on_meta(torch):
    """Every parameter registered inside is moved to the meta device (a plain
    nn.Module's constructor: its buffers stay real)."""
    original = torch.nn.Module.register_parameter

    def register(self, name, param):
        original(self, name, param)
        p = self._parameters.get(name)
        if p is not None and p.device.type != "meta":
            self._parameters[name] = torch.nn.Parameter(
                p.detach().to("meta"), requires_grad=p.requires_grad)

    torch.nn.Module.register_parameter = register
    try:
        yield
    finally:
        torch.nn.Module.register_parameter = original


def build_hf(torch, cls, config, dtype):
    """`cls(config)` under transformers' own meta-device init contexts (those
    of from_pretrained: meta device, the default dtype, no weight tying),
    then the tied weights tied. Buffers are meta too: materialize_buffers."""
    from transformers.utils.generic import ContextManagers
    config.dtype = dtype
    get = getattr(cls, "get_init_context", None)
    try:
        contexts = get(dtype, False, False, None) if get else None
    except TypeError:   # another transformers signature
        contexts = None
    if contexts is None:
        contexts = [torch.device("meta")]
    with ContextManagers(contexts):
        model = cls(config)
    if hasattr(model, "tie_weights"):
        try:
            model.tie_weights(recompute_mapping=False)
        except TypeError:
            model.tie_weights()
    return model


def _sentinel(torch, like):
    t = torch.empty(like.shape, dtype=like.dtype, device="cpu")
    if t.is_floating_point() or t.is_complex():
        t.fill_(float("nan"))
    elif t.dtype != torch.bool:
        t.fill_(max(INT_SENTINEL, torch.iinfo(t.dtype).min))
    return t


def _unset(torch, t):
    if t.is_floating_point() or t.is_complex():
        return bool(torch.isnan(t).any())
    if t.dtype == torch.bool:
        return False
    return bool((t == max(INT_SENTINEL, torch.iinfo(t.dtype).min)).any())


def materialize_buffers(torch, model, stored=None):
    """Gives every meta buffer of a transformers model real values: from
    `stored` ({buffer name: tensor}, the checkpoint's copy), else from the
    model's initialize_weights(). Raises MissingBuffers for those left
    without a value."""
    stored = stored or {}
    by_id = {}
    named = list(model.named_buffers(remove_duplicate=False))
    for name, buf in named:
        if buf is None or buf.device.type != "meta":
            continue
        if id(buf) not in by_id:
            if name in stored:
                value = stored[name].to(buf.dtype).reshape(buf.shape).clone()
                value._is_hf_initialized = True
            else:
                value = _sentinel(torch, buf)
            by_id[id(buf)] = value
        owner, _, attr = name.rpartition(".")
        model.get_submodule(owner)._buffers[attr] = by_id[id(buf)]
    if not by_id:
        return
    pending = [n for n, b in model.named_buffers()
               if not getattr(b, "_is_hf_initialized", False)]
    if pending:
        for p in model.parameters():
            p._is_hf_initialized = True
        for m in model.modules():
            m.__dict__.pop("_is_hf_initialized", None)
        init = getattr(model, "initialize_weights", None)
        if init is not None:
            try:
                init()
            except Exception:   # an initializer that needs real parameters
                pass
        for p in model.parameters():
            p.__dict__.pop("_is_hf_initialized", None)
    missing = [n for n, b in model.named_buffers() if _unset(torch, b)]
    if missing:
        raise MissingBuffers(missing)


def fake_tensors(torch, tensors):
    """CPU fake tensors of the shapes and dtypes of `tensors` (meta or real),
    all of one FakeTensorMode, which torch.export then traces with."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    mode = FakeTensorMode(allow_non_fake_inputs=True)
    out = []
    with mode:
        for t in tensors:
            out.append(torch.empty(tuple(t.shape), dtype=t.dtype,
                                   device="cpu"))
    return mode, out
