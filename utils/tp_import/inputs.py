"""The example inputs of an export and the outputs it returns
(docs/tp-import.md, "Inputs and outputs").

Inputs: a transformers model gets its `main_input_name` (`input_ids`,
`pixel_values`, `input_features`, ...) with a shape from its config, an
encoder-decoder also `decoder_input_ids`, and `attention_mask` with
--attention-mask; `--input NAME=SHAPE[xDTYPE]` sets or adds any input. A
plain nn.Module gets `input_ids` [batch, seq], or the --input list,
positionally. Values come from one generator seeded with --seed, in input
order: ids uniform in [0, vocab), masks all ones but for a left-padded last
row, floats standard normal.

Outputs: the names of the model's output fields (`logits`,
`last_hidden_state`, ...; --outputs picks them), `logits` for a plain
tensor or the first element of a tuple.
"""

import re

from .models import TPImportError

DTYPE_NAMES = {"f32": "float32", "f64": "float64", "bf16": "bfloat16",
               "f16": "float16", "i64": "int64", "i32": "int32",
               "i1": "bool", "bool": "bool"}


def parse_input(text):
    """'NAME=1x3x32x32xf32' -> (name, [1, 3, 32, 32], 'f32'); the shape and
    the dtype are optional ('NAME', 'NAME=1x8')."""
    name, _, spec = text.partition("=")
    if not re.fullmatch(r"[A-Za-z_]\w*", name):
        raise TPImportError("--input %r: NAME=SHAPE[xDTYPE], e.g. "
                            "pixel_values=1x3x32x32 or x=2x8x16xf32" % text)
    if not spec:
        return name, None, None
    parts = spec.split("x")
    dtype = None
    if parts and parts[-1] in DTYPE_NAMES:
        dtype = parts.pop()
    try:
        shape = [int(p) for p in parts]
    except ValueError:
        shape = None
    if not shape or any(d <= 0 for d in shape):
        raise TPImportError("--input %r: the shape must be positive sizes "
                            "joined by x, e.g. 1x3x32x32 (dtype suffix: %s)"
                           % (text, ", ".join(sorted(DTYPE_NAMES))))
    return name, shape, dtype


def _int_or_first(v):
    if isinstance(v, (list, tuple)):
        return int(v[0]), int(v[1] if len(v) > 1 else v[0])
    return int(v), int(v)


def _sub(config, *names):
    """The first of config's attributes, also looked up in its vision /
    audio / text sub-configs."""
    for c in (config, getattr(config, "vision_config", None),
              getattr(config, "audio_config", None),
              getattr(config, "text_config", None),
              getattr(config, "encoder", None)):
        if c is None:
            continue
        for n in names:
            v = getattr(c, n, None)
            if v is not None:
                return v
    return None


def default_shape(model, name, batch, seq):
    """[shape, kind] of a transformers model's input `name`; kind is 'ids',
    'mask' or 'float'. None when the config does not tell."""
    config = getattr(model, "config", None)
    if name in ("input_ids", "decoder_input_ids", "token_type_ids"):
        return [batch, seq], "ids"
    if name.endswith("attention_mask"):
        return [batch, seq], "mask"
    if name == "pixel_values":
        c = _sub(config, "num_channels")
        size = _sub(config, "image_size")
        if c is None or size is None:
            return None
        h, w = _int_or_first(size)
        return [batch, int(c), h, w], "float"
    if name == "input_features":
        mels = _sub(config, "num_mel_bins")
        frames = _sub(config, "max_source_positions")
        if mels is None or frames is None:
            return None
        # Whisper's encoder: two convolutions, the second with stride 2,
        # must end at max_source_positions frames.
        return [batch, int(mels), 2 * int(frames)], "float"
    if name == "input_values":
        return [batch, seq], "float"
    return None


class Inputs:
    def __init__(self, names, tensors, keyword):
        self.names = names
        self.tensors = tensors
        self.keyword = keyword   # transformers: passed by keyword


def vocab_size(torch, model, vocab):
    if vocab is not None:
        return vocab
    v = _sub(getattr(model, "config", None), "vocab_size")
    if v is None:   # a plain module: its first embedding table
        v = next((m.num_embeddings for m in model.modules()
                  if isinstance(m, torch.nn.Embedding)), None)
    return v


def make(torch, model, is_hf, specs=(), batch=1, seq=8, decoder_seq=None,
         vocab=None, attention_mask=False, seed=0, dtype=None):
    """The example inputs (Inputs)."""
    dtype = dtype or torch.float32
    parsed = [parse_input(s) for s in specs]
    wanted = []    # [name, shape or None, dtype name or None]
    if is_hf:
        main = getattr(model, "main_input_name", "input_ids") or "input_ids"
        wanted.append([main, None, None])
        config = model.config
        if getattr(config, "is_encoder_decoder", False):
            wanted.append(["decoder_input_ids",
                           [batch, decoder_seq or seq], None])
        if attention_mask:
            wanted.append(["attention_mask", None, None])
        for name, shape, dt in parsed:
            hit = next((w for w in wanted if w[0] == name), None)
            if hit:
                hit[1], hit[2] = shape or hit[1], dt or hit[2]
            else:
                wanted.append([name, shape, dt])
    else:
        if attention_mask:
            raise TPImportError("--attention-mask is for transformers models; "
                                "give a module's inputs with --input")
        wanted = [list(p) for p in parsed] or [["input_ids", None, None]]

    gen = torch.Generator().manual_seed(seed)
    names, tensors = [], []
    for name, shape, dt in wanted:
        known = default_shape(model, name, batch, seq)
        if shape is None:
            if known is None:
                raise TPImportError(
                    "cannot tell the shape of input %r from the config; pass "
                    "--input %s=SHAPE (e.g. %s=1x3x32x32)" % (name, name, name))
            shape = known[0]
        kind = known[1] if known else None
        if dt is not None:
            tdt = getattr(torch, DTYPE_NAMES[dt])
            if kind is None or (tdt.is_floating_point != (kind == "float")):
                kind = "float" if tdt.is_floating_point else (
                    "mask" if name.endswith("mask") or tdt == torch.bool
                    else "ids")
        elif kind is None:
            kind = "mask" if name.endswith("mask") else "float"
        if kind == "ids":
            v = vocab_size(torch, model, vocab)
            if v is None:
                raise TPImportError("cannot tell the vocabulary size of input "
                                    "%r; pass --vocab" % name)
            t = torch.randint(0, v, tuple(shape), generator=gen,
                              dtype=torch.int64)
        elif kind == "mask":
            t = torch.ones(tuple(shape), dtype=torch.int64)
            if len(shape) >= 2 and shape[-1] > 1:
                t[-1, :max(1, shape[-1] // 4)] = 0   # left padding, last row
        else:
            t = torch.randn(tuple(shape), generator=gen, dtype=torch.float32)
            t = t.to(dtype)
        if dt is not None:
            t = t.to(getattr(torch, DTYPE_NAMES[dt]))
        names.append(name)
        tensors.append(t)
    return Inputs(names, tensors, keyword=is_hf)


def output_names(out, requested):
    """The result names for a model output `out` (ModelOutput, dict, tuple,
    tensor): `requested` (a list) or the default."""
    if hasattr(out, "keys") and not hasattr(out, "shape"):
        fields = [k for k in out.keys() if _is_tensor(out[k])]
        if requested:
            missing = [r for r in requested if r not in out.keys()]
            if missing:
                raise TPImportError(
                    "--outputs: the model's output has no field %s (it has: "
                    "%s)" % (", ".join(missing), ", ".join(out.keys())))
            bad = [r for r in requested if not _is_tensor(out[r])]
            if bad:
                raise TPImportError("--outputs: field %s is not a tensor"
                                    % ", ".join(bad))
            return list(requested)
        if "logits" in fields:
            return ["logits"]
        if not fields:
            raise TPImportError("the model's output has no tensor field")
        return [fields[0]]
    if isinstance(out, (tuple, list)):
        if requested:
            if len(requested) > len(out):
                raise TPImportError("--outputs names %d results but the model "
                                    "returns %d" % (len(requested), len(out)))
            return list(requested)
        return ["logits"]
    if requested:
        if len(requested) != 1:
            raise TPImportError("--outputs names %d results but the model "
                                "returns one tensor" % len(requested))
        return list(requested)
    return ["logits"]


def _is_tensor(v):
    return hasattr(v, "shape") and hasattr(v, "dtype")


def select(out, names):
    """The tensors of `names` (from output_names) in `out`."""
    if hasattr(out, "keys") and not hasattr(out, "shape"):
        return [out[n] for n in names]
    if isinstance(out, (tuple, list)):
        return [out[i] for i in range(len(names))]
    return [out]
