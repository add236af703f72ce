"""Plan.tp_plan: the plan in Hugging Face's tensor-parallel vocabulary
(transformers' `tp_plan`: {module pattern: style}, as
`from_pretrained(..., tp_plan=...)` and a config's `base_model_tp_plan`
take it; docs/python.md, "tp_plan").

Per module owning planned parameters (its class from the model the plan
was made from):
  nn.Linear, weight [out, in] split by out   colwise (the model's output
                                             head: colwise_gather_output)
  nn.Linear, a fused weight split by pieces  packed_colwise
  nn.Linear, weight split by in              rowwise
  nn.Embedding split by rows (vocabulary)    embedding_rowwise
  nn.Embedding split by columns (features)   embedding_colwise
  replicated                                 (left out: transformers
                                             replicates what the plan omits)
Not expressible, and listed with the reason: any other module with a split
parameter (a norm, transformers' Conv1D with its [in, out] weight), and a
block (a module's direct children) where a colwise output, which
transformers leaves split on the last dimension, reaches no rowwise
module in its parent or grandparent, or where a replicated Linear sits
beside colwise ones (the plan
gathers there, or keeps key/value heads whole while splitting the
queries: no style of that vocabulary says either). Layers that agree
collapse into `layers.*` patterns.
"""

import re


def _style(plan, mname, cls, placements):
    w = placements.get("weight")
    dims = [p.dim for p in w if hasattr(p, "dim")] if w else []
    if not dims:
        if any(any(hasattr(p, "dim") for p in pl)
               for pl in placements.values()):
            return None, "a bias split while its weight is whole"
        return "replicated", None
    d = dims[0]
    if cls == "Linear":
        if d == 1:
            return "rowwise", None
        if plan.packed.get(mname + ".weight"):
            return "packed_colwise", None
        if mname in plan.heads_out:
            return "colwise_gather_output", None
        return "colwise", None
    if cls == "Embedding":
        return ("embedding_rowwise" if d == 0 else "embedding_colwise"), None
    return None, "%s with weight split on dim %d: no transformers style " \
        "splits it" % (cls, d)


def tp_plan(plan):
    """({pattern: style}, {module: reason})."""
    if not plan.modules:
        raise ValueError("tp_plan needs the model: make the plan with "
                         "tp_opt.plan(model, ...) or plan_module(..., "
                         "model=model)")
    from .parallel import module_styles_from_placements
    per_module = module_styles_from_placements(plan)
    styles, bad = {}, {}
    for mname, placements in per_module.items():
        cls = plan.modules.get(mname, "?")
        style, why = _style(plan, mname, cls, placements)
        if why:
            bad[mname] = why
        else:
            styles[mname] = style
    # Blocks: a colwise output needs a rowwise consumer in its parent or
    # its parent's parent (BERT's attention.self and attention.output), and
    # no replicated Linear beside it.
    parents = {}
    for mname, style in styles.items():
        parents.setdefault(mname.rpartition(".")[0], []).append(mname)
    for parent, children in parents.items():
        kinds = [styles[c] for c in children]
        if "colwise" not in kinds and "packed_colwise" not in kinds:
            continue
        scope = parent.rpartition(".")[0]
        rowwise = [m for m, st in styles.items() if st == "rowwise" and
                   (m.startswith(parent + ".") or
                    m.startswith(scope + ".") or not scope)]
        whole = [c.rpartition(".")[2] for c in children
                 if styles[c] == "replicated" and
                 plan.modules.get(c) == "Linear"]
        if whole:
            why = "%s stay%s whole beside colwise siblings (the plan keeps " \
                  "%s replicated: key/value heads the devices cannot " \
                  "split, or an input it gathers)" % (
                      ", ".join(whole), "s" if len(whole) == 1 else "",
                      "it" if len(whole) == 1 else "them")
        elif not rowwise:
            why = "its colwise outputs reach no rowwise module (the plan " \
                  "gathers them)"
        else:
            continue
        for c in children:
            bad[c] = why
    plan_out = {m: s for m, s in styles.items()
                if m not in bad and s != "replicated"}
    return _collapse(plan_out), _collapse(bad)


def _collapse(d):
    """`model.layers.3.mlp.up_proj` -> `model.layers.*.mlp.up_proj` when
    every layer that has the module agrees."""
    groups = {}
    for name, v in d.items():
        pat = re.sub(r"\.\d+\.", ".*.", name)
        groups.setdefault(pat, []).append((name, v))
    out = {}
    for pat, items in groups.items():
        values = {v for _, v in items}
        if len(values) == 1 and pat != items[0][0] and len(items) > 1:
            out[pat] = items[0][1]
        else:
            out.update(items)
    return dict(sorted(out.items()))
