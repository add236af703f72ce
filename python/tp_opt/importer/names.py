"""Parameters named by the keys their checkpoint stores.

`save_pretrained` does not write `model.state_dict()` as it is: it drops
one of each pair of tied weights, and reverts transformers' load-time
conversions (legacy names such as GPT-NeoX's `embed_out.weight` for
`lm_head.weight`; MoE experts stored one tensor per expert,
`...experts.0.w1.weight`, that the model holds stacked as
`...experts.gate_up_proj`). tp-import's arguments are those stored tensors,
under those keys, so `tp-run --checkpoint FOLDER` reads any folder
`save_pretrained` wrote; the exported forward converts them into the
model's parameters itself, with transformers' own conversion operations
(stack, concatenate, rename), which torch.export traces like the rest.

StoredParameters holds the stored tensors in argument order (the order of
the parameters they make, named_parameters() order, so that a model without
conversions keeps that order) and `to_model(stored)`, the load conversion.
The round trip is checked on the real weights: `to_model(stored)` must give
every parameter exactly, or the arguments fall back to the parameter names
(with a warning). A model without weights (meta.py) is checked on shapes
and dtypes only.
"""

import copy
import sys


class StoredParameters:
    def __init__(self, names, tensors, to_model, as_saved, renamed=None):
        self.names = names          # argument names, in order
        self.tensors = tensors      # the stored tensors (model dtype)
        self.to_model = to_model    # {name: tensor} -> {parameter: tensor}
        self.as_saved = as_saved    # the names are save_pretrained's keys
        # {stored key: parameter} where one parameter is stored whole under
        # another name (GPT-NeoX's lm_head.weight as embed_out.weight)
        self.renamed = renamed or {}


def _identity(model):
    named = list(model.named_parameters())
    return StoredParameters([n for n, _ in named],
                            [p.detach() for _, p in named],
                            lambda stored: dict(stored), False)


def stored_parameters(torch, model, is_hf):
    """The parameters as save_pretrained stores them (a plain nn.Module:
    named_parameters(), tied weights once)."""
    if not is_hf:
        return _identity(model)
    try:
        return _hf_stored(torch, model)
    except Exception as e:   # an unknown conversion: keep the PyTorch names
        sys.stderr.write(
            "tp-import: warning: cannot name the arguments as save_pretrained "
            "stores them (%s: %s); they are named after the model's "
            "parameters\n" % (type(e).__name__, str(e).splitlines()[0][:200]))
        return _identity(model)


def _hf_stored(torch, model):
    from transformers.modeling_utils import remove_tied_weights_from_state_dict
    from transformers import core_model_loading as cml
    from transformers.conversion_mapping import get_model_conversion_mapping

    state = model.state_dict()
    for key in getattr(model, "_keys_to_ignore_on_save", None) or []:
        state.pop(key, None)
    state = remove_tied_weights_from_state_dict(dict(state), model)
    saved = cml.revert_weight_conversion(model, state)

    # The transforms revert_weight_conversion reverted, forwards.
    conversions = getattr(model, "_weight_conversions", None)
    if conversions is None:
        conversions = [c for c in get_model_conversion_mapping(
            model, add_legacy=False) if not isinstance(c, cml.PrefixChange)]
    renamings = [c for c in conversions if isinstance(c, cml.WeightRenaming)]
    converters = [c for c in conversions if isinstance(c, cml.WeightConverter)]
    by_pattern = {p: c for c in converters for p in c.source_patterns}
    meta = dict(state)
    meta.update(model.state_dict())
    prefix = model.base_model_prefix

    def target_of(key):
        renamed, pattern = cml.rename_source_key(key, renamings, converters,
                                                 prefix, meta)
        if renamed not in meta and key in meta:
            renamed, pattern = key, None
        return renamed, pattern

    def convert(stored):
        """({parameter: tensor}, {parameter: [stored keys it came from]})."""
        groups, members = {}, {}
        for key, tensor in sorted(stored.items(),
                                  key=lambda kv: cml.dot_natural_key(kv[0])):
            renamed, pattern = target_of(key)
            if pattern is not None:
                m = groups.setdefault(renamed, copy.deepcopy(by_pattern[pattern]))
            else:
                m = groups.setdefault(renamed, cml.WeightRenaming(key, renamed))
                pattern = key
            m.add_tensor(renamed, key, pattern, tensor)
            members.setdefault(renamed, []).append(key)
        out, origin = {}, {}
        for first, m in groups.items():
            for name, value in m.convert(first, model=model,
                                         config=model.config).items():
                out[name] = value[0] if isinstance(value, list) else value
                origin[name] = members[first]
        return out, origin

    def to_model(stored):
        return convert(stored)[0]

    params = dict(model.named_parameters())   # tied weights once
    loaded, origin = convert(saved)
    # A tied parameter is stored under one of its names, which need not be
    # the one named_parameters() reports; functional_call ties the others.
    aliases = {}
    for n, p in model.named_parameters(remove_duplicate=False):
        aliases.setdefault(id(p), []).append(n)
    for n, p in params.items():
        if n not in loaded:
            twin = next((a for a in aliases[id(p)] if a in loaded), None)
            if twin is not None:
                loaded[n], origin[n] = loaded[twin], origin[twin]
    # Without weights (meta.py) the round trip is checked on shapes and
    # dtypes; the self-check then compares values.
    bad = [n for n, p in params.items()
           if n not in loaded or loaded[n].shape != p.shape or
           loaded[n].dtype != p.dtype or
           (p.device.type != "meta" and not torch.equal(loaded[n], p.detach()))]
    if bad:
        raise ValueError("the stored tensors do not reproduce %s"
                         % ", ".join(bad[:3]))
    # Arguments: the stored keys of each parameter, in named_parameters()
    # order; stored keys that only make buffers stay constants.
    names = []
    for n in params:
        for key in origin[n]:
            if key not in names:
                names.append(key)
    renamed = {origin[n][0]: n for n in params
               if len(origin[n]) == 1 and origin[n][0] != n}
    return StoredParameters(names, [saved[k].detach() for k in names],
                            to_model, True, renamed)

