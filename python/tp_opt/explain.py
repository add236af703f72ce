"""Plan.explain(name): why a parameter has its layout, in the planner's
own numbers (docs/python.md, "explain").

The planner's search is exact: the chosen plan is the cheapest modelled
step time among all layouts of all values within the memory budget. So
the reason a parameter is laid out as it is can be measured: tp-opt plans
the model again with that one parameter pinned (`tp.layout` on its
argument) to each other layout it could have (replicated, or one
dimension split over one mesh axis), and each alternative is either
  * more expensive: its step time, communication and memory beside the
    chosen plan's ("cheaper to replicate" / "cheaper to split"), or
  * infeasible within the memory budget (the planner's own error: "the
    memory budget" is why it is split), or
  * cheaper but over the budget (the same: memory, with the numbers).
A dimension the axis does not divide is named (the partitioner would pad
it), and the planner's remark about factors (heads, kv heads) that the
axis does not divide is quoted when the parameter's dimension holds such
a factor.
"""

import re

from .planning import PlanError, _seconds, _bytes, run_planner


def _layout_text(mesh_name, dims):
    return '#tp.layout<@%s, [%s]>' % (mesh_name, ", ".join(
        '"%s"' % a if a else "-" for a in dims))


def _pinned_module(plan, name, dims):
    """The plan's module text with argument `name` pinned, and the options
    to plan it with."""
    text = plan.module_text
    mesh_name = "tp" if list(plan.mesh) == ["tp"] else "mesh"
    attr = '{tp.name = "%s", tp.param}' % name
    if text.count(attr) != 1:
        raise PlanError("cannot pin %s: its argument is not `%s` in the "
                        "exported module" % (name, attr))
    text = text.replace(attr, '{tp.layout = %s, tp.name = "%s", tp.param}'
                        % (_layout_text(mesh_name, dims), name))
    mesh_decl = 'tp.mesh @%s [%s]' % (mesh_name, ", ".join(
        '"%s" = %d' % kv for kv in plan.mesh.items()))
    text, n = re.subn(r"^(module(?: attributes \{.*?\})? \{)$",
                      lambda m: m.group(1) + "\n  " + mesh_decl, text,
                      count=1, flags=re.M)
    if n != 1:
        raise PlanError("cannot find the module op in the exported text")
    options = [o for o in plan.options if not o.startswith("mesh-axes=")]
    return text, options


def _alternatives(plan, shape):
    """Every layout of a parameter of this shape with at most one
    dimension split per axis: replicated, then one dimension split over one
    axis (1-D meshes: that is every layout the planner considers)."""
    alts = [[()] * len(shape)]
    for axis in plan.mesh:
        for d in range(len(shape)):
            dims = [()] * len(shape)
            dims[d] = (axis,)
            alts.append(dims)
    return alts


def _describe(dims):
    split = ["dim %d over %s" % (d, "+".join(a)) for d, a in enumerate(dims)
             if a]
    return "split " + ", ".join(split) if split else "replicated"


def _collectives(report):
    counts = {}
    for r in report["functions"][0]["reshards"]:
        for s in r["steps"]:
            if s["collective"] in ("all_reduce", "all_gather",
                                   "reduce_scatter", "all_to_all"):
                counts[s["collective"]] = counts.get(s["collective"], 0) + 1
    return ", ".join("%d %s" % (counts[k], k) for k in sorted(counts)) or \
        "no collectives"


def explain(plan, name):
    layout = plan.layout_of(name)
    shape = plan.shapes[name]
    t = plan.totals
    base = t["step_seconds"]
    chosen = [tuple(a) for a in layout.dims] if layout is not None else None
    lines = ["%s %s: %s on %s (plan step %s, parameters %s per device%s)" % (
        name, list(shape),
        _describe(chosen) if chosen is not None else "pieces laid out "
        "differently", " x ".join("%s=%d" % kv for kv in plan.mesh.items()),
        _seconds(base), _bytes(t["param_bytes_per_device"]),
        ", budget %s" % _bytes(t["memory_budget_bytes"])
        if t.get("memory_budget_bytes") else "")]
    if name in plan.packed:
        dim, pieces = plan.packed[name]
        lines.append("  a fused weight: the plan splits it into %d pieces "
                     "along dim %d, each laid out on its own" % (pieces, dim))
    reasons = []
    rows = []
    cheaper_but_over, deltas = [], []
    for dims in _alternatives(plan, shape):
        if chosen is not None and [tuple(a) for a in dims] == chosen:
            continue
        what = _describe(dims)
        try:
            text, options = _pinned_module(plan, name, dims)
            _, report, _ = run_planner(text, options)
        except PlanError as e:
            msg = str(e).replace("tp-opt --tp-propagate failed: ", "")
            rows.append("    %s: no plan (%s)" % (what, msg))
            if "memory budget" in msg:
                reasons.append("memory budget: %s fits no plan within the "
                               "budget" % what)
            continue
        tt = report["functions"][0]["totals"]
        step = tt["step_seconds"]
        delta = step - base
        rows.append("    %s: step %s (%s%s, %+.1f%%), %s, parameters %s per "
                    "device" % (what, _seconds(step),
                                "+" if delta >= 0 else "-",
                                _seconds(abs(delta)), 100 * delta / base,
                                _collectives(report),
                                _bytes(tt["param_bytes_per_device"])))
        deltas.append((what, delta))
        if delta < -1e-9 * base:
            cheaper_but_over.append((what, step, tt))
    if chosen is not None and not any(chosen):
        n = max(plan.mesh.values())
        for d, size in enumerate(shape):
            if size % n:
                reasons.append("indivisible: dim %d (%d) is not a multiple "
                               "of %d (a split would be padded)"
                               % (d, size, n))
        heads = plan.heads or {}
        hd = heads.get("head_dim")
        for key, label in (("kv_heads", "key/value heads"),
                           ("heads", "attention heads")):
            h = heads.get(key)
            if not h or not hd or h % n == 0:
                continue
            dims = [d for d, size in enumerate(shape) if size == h * hd]
            if dims:
                reasons.append(
                    "indivisible heads: dim %d (%d) is %d %s of %d, and %d "
                    "devices cannot each take whole heads" % (
                        dims[0], shape[dims[0]], h, label, hd, n))
                break
    if cheaper_but_over:
        for what, step, tt in cheaper_but_over:
            reasons.append(
                "memory budget: %s would be faster (step %s) but is not the "
                "optimum within the budget (parameters %s per device "
                "against a budget of %s)" % (
                    what, _seconds(step), _bytes(tt["param_bytes_per_device"]),
                    _bytes(t.get("memory_budget_bytes") or 0)))
    elif rows and not any("no plan" in r for r in rows):
        ties = [w for w, d in deltas if abs(d) <= 1e-9 * base]
        if ties:
            reasons.append("a tie: %s costs the same modelled step (the "
                           "search keeps one of equally cheap plans)"
                           % " and ".join(ties))
        else:
            reasons.append("cheaper to %s: every other layout makes the "
                           "modelled step slower" % (
                               "replicate" if chosen is not None and
                               not any(chosen) else "split it so"))
    lines.append("  why: " + ("; ".join(reasons) if reasons else
                              "the exact optimum of the cost model"))
    lines.append("  the alternatives, planned with this parameter pinned "
                 "(the rest re-planned):")
    lines.extend(rows)
    return "\n".join(lines)
