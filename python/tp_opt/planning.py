"""tp_opt.plan: a PyTorch model in, tp-opt's plan out (docs/python.md).

  1. The model is exported with tp_opt.importer (the exporter behind
     utils/tp-import): @main's parameters are `tp.param` arguments named
     after the PyTorch parameters (the keys save_pretrained stores).
  2. `tp-opt --tp-propagate` plans it (tp=N or a named mesh, the memory
     budget, the device profile) and writes the JSON plan report; the
     planned signature gives each argument's layout (`tp.layout`) and, for
     the pieces of a fused weight, the block of the stored tensor it is
     (`tp.source`).
  3. Plan holds both: `placements` turns layouts into DTensor placements,
     `str(plan)` summarises the report, `explain(name)` re-plans with the
     parameter pinned to each other layout (tp_opt.explain), `tp_plan`
     (tp_opt.hf) names the Hugging Face styles, and tp_opt.parallelize
     executes it.
"""

import inspect
import json
import os
import re
import subprocess
import tempfile

from .importer.models import Model, TPImportError
from .layout import Layout, parse_signature
from . import tools


class PlanError(TPImportError):
    pass


KINDS = ("all_reduce", "reduce_scatter", "all_gather", "all_to_all")


INSTALL = ("pip install torch torch-mlir transformers safetensors (the "
           "versions docs/tp-import.md names)")


def require_torch(what, export=False):
    """torch (and torch-mlir for an export), or a PlanError saying what to
    install."""
    try:
        import torch
        if export:
            import torch_mlir  # noqa: F401
    except ImportError as e:
        raise PlanError("%s needs torch%s: %s (%s)" % (
            what, " and torch-mlir" if export else "", INSTALL, e))
    return torch


def require_module(torch, model, what):
    """A PlanError unless `model` is a torch.nn.Module (a function or a
    class has no parameters to plan)."""
    if not isinstance(model, torch.nn.Module):
        kind = "the class %s, not an instance of it" % model.__name__ \
            if isinstance(model, type) else "a %s" % type(model).__name__
        raise PlanError("%s takes a torch.nn.Module (its parameters are what "
                        "is planned); the model given is %s" % (what, kind))


def _is_hf(model):
    try:
        import transformers
    except ImportError:
        return False
    return isinstance(model, transformers.PreTrainedModel)


def _inputs(torch, model, is_hf, args, kwargs):
    from .importer.inputs import Inputs
    if not isinstance(args, (tuple, list)):
        args = (args,)
    names, tensors = [], []
    params = list(inspect.signature(model.forward).parameters)
    if is_hf:
        main = getattr(model, "main_input_name", "input_ids") or "input_ids"
        positional = [main] + [p for p in params if p != main]
    else:
        positional = params
    for i, t in enumerate(args):
        if not isinstance(t, torch.Tensor):
            raise PlanError("argument %d of the model is a %s: tp_opt.plan "
                            "takes the model's tensor inputs"
                            % (i, type(t).__name__))
        names.append(positional[i] if i < len(positional) else "arg%d" % i)
        tensors.append(t)
    for k, t in (kwargs or {}).items():
        names.append(k)
        tensors.append(t)
    return Inputs(names, tensors, keyword=is_hf or bool(kwargs))


# Every option value is checked here, before it reaches tp-opt's option
# string: a value with a space or an "=" would otherwise add options of its
# own (memory_budget="none tp=8" planned tp=8 under a Plan saying tp=2).
AXIS_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
BYTES = re.compile(r"(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?(Ki|Mi|Gi|K|M|G)?\Z")
DEVICE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*\Z")
SEQUENCE_PARALLEL = ("auto", "on", "off")


def _count(value):
    """A positive int, not a bool (True is an int to Python)."""
    return isinstance(value, int) and not isinstance(value, bool) and \
        value >= 1


def _mesh_option(tp, mesh):
    if (tp is None) == (mesh is None):
        raise PlanError("give either tp=N or mesh={axis: size, ...}")
    if tp is not None:
        if not _count(tp):
            raise PlanError("tp=%r: a positive number of devices (an int)"
                            % (tp,))
        return {"tp": tp}, "tp=%d" % tp
    if not isinstance(mesh, dict) or not mesh:
        raise PlanError("mesh=%r: a dict of axis names and sizes, "
                        "e.g. {\"dp\": 2, \"tp\": 4}" % (mesh,))
    for name, size in mesh.items():
        if not isinstance(name, str) or not AXIS_NAME.match(name):
            raise PlanError("mesh=%r: the axis name %r is not a name (letters, "
                            "digits and _, not starting with a digit)"
                            % (mesh, name))
        if not _count(size):
            raise PlanError("mesh=%r: the size of axis %r is %r, not a "
                            "positive int" % (mesh, name, size))
    opt = "mesh-axes=" + ",".join("%s=%d" % kv for kv in mesh.items())
    if "dp" in mesh:
        opt += " batch-axis=dp"
    return dict(mesh), opt


def _budget_option(memory_budget):
    """memory_budget: bytes (a positive int or float), a string of bytes
    with a suffix ("80G", "80Gi", "1.5e9"), or "none" (no budget)."""
    if isinstance(memory_budget, bool):
        pass
    elif isinstance(memory_budget, (int, float)):
        if memory_budget > 0 and memory_budget != float("inf"):
            return "memory-budget=%d" % int(memory_budget)
    elif isinstance(memory_budget, str):
        text = memory_budget.strip()
        if text == "none" or (BYTES.match(text) and
                              float(re.sub(r"[KMGi]+\Z", "", text)) > 0):
            return "memory-budget=%s" % text
    raise PlanError("memory_budget=%r: a positive number of bytes per device "
                    "(an int, or a string such as \"80G\" or \"80Gi\"), or "
                    "\"none\"" % (memory_budget,))


def _options(tp, mesh, memory_budget, device, sequence_parallel):
    axes, mesh_opt = _mesh_option(tp, mesh)
    options = [mesh_opt]
    if memory_budget is not None:
        options.append(_budget_option(memory_budget))
    if device is not None:
        if not isinstance(device, str) or not DEVICE_NAME.match(device):
            raise PlanError("device=%r: the name of a cost profile, e.g. "
                            "\"h100-nvlink\" (docs/cost-model.md)" % (device,))
        options.append("device=%s" % device)
    if sequence_parallel is not None:
        if sequence_parallel is True or sequence_parallel is False:
            sequence_parallel = "on" if sequence_parallel else "off"
        if sequence_parallel not in SEQUENCE_PARALLEL:
            raise PlanError("sequence_parallel=%r: one of \"auto\", \"on\", "
                            "\"off\" (or True, False)" % (sequence_parallel,))
        options.append("sequence-parallel=%s" % sequence_parallel)
    return axes, options


def plan(model, args=(), tp=None, mesh=None, memory_budget=None,
         training=False, device=None, sequence_parallel=None, kwargs=None):
    """Plans `model` on `args` (a tuple of example input tensors) for tp=N
    devices or a mesh {"dp": 2, "tp": 4} (the batch split over "dp").
    memory_budget: bytes per device or "80G"; device: a cost profile
    (h100-nvlink, h200-nvlink, a100-nvlink, h100-pcie); sequence_parallel:
    "auto", "on", "off". Returns a Plan; raises PlanError (a TPImportError)
    with a one-line message."""
    torch = require_torch("tp_opt.plan", export=True)
    require_module(torch, model, "tp_opt.plan")
    if training:
        raise PlanError(
            "training=True: tp_opt.plan exports the forward only; plan a "
            "training step with tp-gen --training (docs/training.md)")
    axes, options = _options(tp, mesh, memory_budget, device,
                             sequence_parallel)
    is_hf = _is_hf(model)
    from .importer import exporter
    inputs = _inputs(torch, model, is_hf, args, kwargs)
    use_cache = getattr(getattr(model, "config", None), "use_cache", None)
    was_training = model.training
    model.eval()
    from .parallel import _eager_attention
    attn = _eager_attention(model)
    try:
        with torch.no_grad():
            result = exporter.export(torch, Model(model, is_hf), inputs)
    finally:
        model.train(was_training)
        if attn is not None:
            if hasattr(model, "set_attn_implementation"):
                model.set_attn_implementation(attn)
            else:
                model.config._attn_implementation = attn
        if use_cache is not None:
            model.config.use_cache = use_cache
    planned, report, stderr = run_planner(result.text, options)
    return Plan(result.text, planned, report, axes, options, stderr,
                model=model)


def example_inputs(model, batch=1, seq=8, seed=0):
    """{name: tensor}: the inputs tp-import would give `model` (the main
    input, e.g. input_ids or pixel_values, with a shape from its config, and
    decoder_input_ids for an encoder-decoder), for plan(kwargs=...) and
    check(kwargs=...)."""
    torch = require_torch("tp_opt.example_inputs")
    require_module(torch, model, "tp_opt.example_inputs")
    from .importer.inputs import make
    ins = make(torch, model, _is_hf(model), batch=batch, seq=seq, seed=seed)
    return dict(zip(ins.names, ins.tensors))


def from_pretrained(folder, dtype="f32"):
    """The model of a Hugging Face folder, of the class tp-import builds
    (config.json's architectures, else the first auto class that knows the
    config: causal LM, seq2seq, masked LM, image classification, base)."""
    torch = require_torch("tp_opt.from_pretrained")
    import transformers
    from .importer.models import DTYPES, pick_model_class
    config = transformers.AutoConfig.from_pretrained(folder)
    cls = pick_model_class(transformers, config, None)
    return cls.from_pretrained(folder, dtype=getattr(torch, DTYPES[dtype]))


def heads_of(config):
    """{"heads", "kv_heads", "head_dim"} of a transformers config (None
    when it has no attention heads): explain() names heads a mesh axis
    cannot split."""
    if config is None:
        return None
    get = lambda *names: next((getattr(config, n) for n in names
                               if isinstance(getattr(config, n, None), int)),
                              None)
    heads = get("num_attention_heads", "n_head", "num_heads")
    hidden = get("hidden_size", "n_embd", "d_model")
    if not heads:
        return None
    head_dim = get("head_dim") or (hidden // heads if hidden else None)
    return {"heads": heads, "kv_heads": get("num_key_value_heads") or heads,
            "head_dim": head_dim}


def plan_module(module, tp=None, mesh=None, memory_budget=None, device=None,
                sequence_parallel=None, model=None):
    """Plans a module already exported (utils/tp-import's output: a path or
    the text), with the options of plan(); `model` (the PyTorch model it
    was exported from) lets explain() name heads and tp_plan name module
    styles."""
    text = module
    if "\n" not in module and os.path.exists(module):
        with open(module) as f:
            text = f.read()
    axes, options = _options(tp, mesh, memory_budget, device,
                             sequence_parallel)
    planned, report, stderr = run_planner(text, options)
    return Plan(text, planned, report, axes, options, stderr, model=model)


def run_planner(text, options):
    """Runs tp-opt --tp-propagate on a module's text; returns (planned
    text, report dict, stderr)."""
    tp_opt = tools.find("tp-opt")
    with tempfile.TemporaryDirectory(prefix="tp-opt-plan-") as tmp:
        src = os.path.join(tmp, "model.mlir")
        out = os.path.join(tmp, "planned.mlir")
        rep = os.path.join(tmp, "plan.json")
        with open(src, "w") as f:
            f.write(text)
        cmd = [tp_opt, src, "--tp-propagate=%s report=%s"
               % (" ".join(options), rep), "-o", out]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            err = [l for l in r.stderr.splitlines() if "error:" in l]
            raise PlanError("tp-opt --tp-propagate failed: %s" % (
                re.sub(r"^.*?error: ", "", err[0]) if err else
                r.stderr.strip()[-300:]))
        with open(out) as f:
            planned = f.read()
        with open(rep) as f:
            report = json.load(f)
    return planned, report, r.stderr


class Plan:
    """What tp-opt chose. Attributes:
      mesh        {axis: size}, major first
      arguments   the planned @main's arguments (tp_opt.layout.Argument),
                  fused weights as their pieces
      report      the planner's JSON report (docs/passes/propagate.md)
      layouts     {parameter name: Layout} (a fused weight: its pieces'
                  common layout; see packed)
      packed      {parameter name: (dim, pieces)}: a fused weight the plan
                  splits piece by piece along dim (Megatron's strided split
                  of a fused QKV)
    """

    def __init__(self, text, planned, report, mesh, options, stderr,
                 model=None):
        self.heads = heads_of(getattr(model, "config", None))
        # {module name: class name} of the modules owning parameters, and
        # the model's own output head names (tp_plan's vocabulary needs them)
        self.modules = {} if model is None else {
            n: type(m).__name__ for n, m in model.named_modules()
            if any(True for _ in m.parameters(recurse=False))}
        self.heads_out = [] if model is None else list(
            (getattr(model, "_tp_plan", None) or {}).keys())
        self.module_text = text
        self.planned_text = planned
        self.report = report
        self.mesh = mesh
        self.options = options
        self.warnings = [l for l in stderr.splitlines() if "warning" in l]
        self.arguments = parse_signature(planned)
        self.inputs = [a for a in self.arguments if not a.param]
        self.layouts, self.packed, self.shapes = {}, {}, {}
        pieces = {}
        for a in self.arguments:
            if not a.param:
                continue
            if a.source:
                pieces.setdefault(a.name, []).append(a)
            else:
                self.layouts[a.name] = a.layout
                self.shapes[a.name] = a.shape
        for name, ps in pieces.items():
            shape = ps[0].source[1]
            dim = next((d for d in range(len(shape))
                        if any(p.source[0][d] for p in ps)), 0)
            self.shapes[name] = shape
            if all(p.layout == ps[0].layout for p in ps):
                self.layouts[name] = ps[0].layout
                self.packed[name] = (dim, len(ps))
            else:   # pieces laid out differently: listed per piece
                self.layouts[name] = None
                self.packed[name] = (dim, len(ps))
        self.piece_layouts = pieces
        self.sequence_parallel = self._splits_tokens()

    def _splits_tokens(self):
        """Whether the plan is sequence-parallel: made with
        sequence-parallel=on, or it reduce-scatters a value along a
        dimension before its last (a Partial sum split by tokens, Megatron's
        sequence parallelism). A reduce-scatter along the last dimension
        (the features: ALBERT's FFN) splits no token."""
        if "sequence-parallel=on" in self.options:
            return True
        return any(s["collective"] == "reduce_scatter" and
                   s["dim"] < len(s.get("input_shape") or
                                  r.get("shape") or [0]) - 1
                   for r in self.function["reshards"] for s in r["steps"])

    # -- the report ------------------------------------------------------
    @property
    def function(self):
        return self.report["functions"][0]

    @property
    def totals(self):
        return self.function["totals"]

    def collectives(self):
        """{kind: count} of the collectives one step runs (the partitioned
        program's, as the report charges them)."""
        counts = {}
        for r in self.function["reshards"]:
            for s in r["steps"]:
                if s["collective"] in KINDS:
                    counts[s["collective"]] = counts.get(s["collective"], 0) + 1
        return counts

    def collective_bytes(self):
        out = {}
        for r in self.function["reshards"]:
            for s in r["steps"]:
                if s["collective"] in KINDS:
                    out[s["collective"]] = out.get(s["collective"], 0) + \
                        s["message_bytes"]
        return out

    @property
    def batch_axis(self):
        """The mesh axis the inputs' batch is split over (`batch-axis=`,
        a "dp" axis of tp_opt.plan's mesh), or None."""
        for o in " ".join(self.options).split():
            if o.startswith("batch-axis="):
                return o.split("=", 1)[1]
        return None

    @property
    def exact(self):
        return bool(self.function["solver"].get("exact", False))

    @property
    def placements(self):
        """{parameter name: [DTensor placement per mesh axis]}: Shard(d)
        where the plan splits dimension d over that axis, else Replicate()
        (Partial never occurs on a parameter)."""
        require_torch("Plan.placements")
        from torch.distributed.tensor import Replicate, Shard
        out = {}
        for name, layout in self.layouts.items():
            if layout is None:
                out[name] = None
                continue
            pl = []
            for axis in self.mesh:
                dims = layout.split_dims(axis)
                pl.append(Shard(dims[0]) if dims else Replicate())
            out[name] = pl
        return out

    def layout_of(self, name):
        if name not in self.layouts:
            close = [n for n in self.layouts if n.endswith(name) or
                     name in n][:3]
            raise PlanError("no parameter %r in the plan%s" % (
                name, " (did you mean %s?)" % ", ".join(close)
                if close else ""))
        return self.layouts[name]

    def explain(self, name):
        """Why `name` has its layout, with the modelled cost of each other
        layout (tp_opt.explain). Returns the text."""
        from .explain import explain
        return explain(self, name)

    @property
    def tp_plan(self):
        """The plan as a Hugging Face tp_plan {module pattern: style}, where
        the plan is expressible in its vocabulary (tp_opt.hf)."""
        from .hf import tp_plan
        return tp_plan(self)[0]

    @property
    def tp_plan_unsupported(self):
        """{module: why} for the modules whose plan tp_plan cannot say."""
        from .hf import tp_plan
        return tp_plan(self)[1]

    def __str__(self):
        return format_plan(self)

    __repr__ = __str__


def _bytes(n):
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return ("%d %s" % (n, unit)) if unit == "B" else \
                "%.1f %s" % (n, unit)
        n /= 1024.0


def _seconds(s):
    if s >= 1:
        return "%.3g s" % s
    if s >= 1e-3:
        return "%.3g ms" % (s * 1e3)
    return "%.3g us" % (s * 1e6)


def format_plan(plan):
    t, fn = plan.totals, plan.function
    solver = fn["solver"]
    mesh = " x ".join("%s=%d" % kv for kv in plan.mesh.items())
    lines = ["tp-opt plan on %s (%s): %s" % (
        mesh, fn.get("device", {}).get("name", "device") if
        isinstance(fn.get("device"), dict) else fn.get("device"),
        "exact" if plan.exact else "not proven optimal: gap %.2g%% to the "
        "lower bound %s" % (100 * solver.get("gap", 0),
                            _seconds(solver.get("lower_bound_seconds", 0))))]
    lines.append("  step %s modelled (compute %s, communication %s)" % (
        _seconds(t["step_seconds"]), _seconds(t["compute_seconds"]),
        _seconds(t["communication_seconds"])))
    counts, volume = plan.collectives(), plan.collective_bytes()
    parts = ["%d %s (%s)" % (counts[k], k, _bytes(volume[k]))
             for k in KINDS if k in counts]
    lines.append("  collectives per step: %s; %d in all, %s per device" % (
        ", ".join(parts) or "none", sum(counts.values()),
        _bytes(t["communication_message_bytes_per_device"])))
    budget = t.get("memory_budget_bytes")
    lines.append("  memory per device: parameters %s of %s%s, activations "
                 "peak %s" % (
                     _bytes(t["param_bytes_per_device"]),
                     _bytes(t["param_bytes_total"]),
                     " (budget %s)" % _bytes(budget) if budget else "",
                     _bytes(t.get("peak_activation_bytes_per_device", 0))))
    sharded = sum(1 for l in plan.layouts.values()
                  if l is None or not l.is_replicated())
    lines.append("  parameters: %d sharded, %d replicated%s" % (
        sharded, len(plan.layouts) - sharded,
        "; fused and split by pieces: " + ", ".join(sorted(plan.packed))
        if plan.packed else ""))
    for r in fn.get("remarks", []):
        lines.append("  remark: " + r)
    for w in plan.warnings:
        lines.append("  " + w)
    return "\n".join(lines)
