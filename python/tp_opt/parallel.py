"""tp_opt.parallelize: a plan executed by PyTorch (docs/python.md,
"How parallelize works").

The parameters become DTensors with the plan's placements
(`distribute_tensor`), and every module that owns parameters gets its
layouts set at its boundary, as PyTorch's tensor-parallel styles do:

  * a module whose weight is split along the dimension its input's last
    dimension meets (a Linear's or Conv1D's input features: Megatron's
    row-parallel; RowwiseParallel) takes its input as Shard(-1);
  * every other module that owns parameters takes its input Replicate
    (a colwise Linear or Conv1D: ColwiseParallel; an embedding split by
    vocabulary or by features; a norm);
  * a module's output keeps the layout DTensor gives it, except a Partial
    sum, which is reduced to Replicate at the module's boundary
    (RowwiseParallel's all-reduce, the vocabulary-parallel embedding's).

Between those modules the activations stay DTensors (attention runs on the
heads each device holds: a colwise q/k/v projection's output is
Shard(-1), which the heads view splits by heads), and plain tensors the
model makes on its own (masks, rotary tables, buffers) count as replicated
(`implicit_replication`). The model's outputs come back as whole tensors
on every rank.

On a mesh with a batch axis (the plan's batch-axis=, "dp"), the model's
inputs are split by batch over it and every rule above applies per
tensor-parallel axis, the batch axis keeping each activation's split. The
backward runs under implicit_replication too (_reentrant_backward).

So the collectives PyTorch issues are the ones the plan's layouts at
module boundaries imply, plus those DTensor's own sharding propagation
chooses inside a module where the plan splits something DTensor cannot
follow locally (a fused weight split piece by piece, a head split in
halves): `parallel.compare` lists the difference per kind.
"""

import functools

from .importer.models import TPImportError

KIND_OF_OP = {
    "all_reduce": "all_reduce", "all_reduce_": "all_reduce",
    "all_gather_into_tensor": "all_gather",
    "all_gather_into_tensor_coalesced": "all_gather",
    "reduce_scatter_tensor": "reduce_scatter",
    "all_to_all_single": "all_to_all",
}


class ParallelizeError(TPImportError):
    pass


def _input_dim(module, name):
    """The dimension of parameter `name` of `module` that meets the input's
    last dimension, or None (not a matmul weight)."""
    import torch
    cls = type(module).__name__
    if isinstance(module, torch.nn.Linear) and name == "weight":
        return 1
    if cls == "Conv1D" and name == "weight":       # transformers' [in, out]
        return 0
    return None


def _splits_heads(module, heads, n):
    """Whether a colwise projection's output holds attention heads that n
    devices cannot take whole (2 key/value heads on 4 devices: the plan may
    split inside a head, which the heads view of the output cannot express
    as a DTensor; the output is gathered instead)."""
    if not heads or not heads.get("head_dim"):
        return False
    width = getattr(module, "out_features", None) or getattr(module, "nf",
                                                             None)
    hd = heads["head_dim"]
    for key in ("heads", "kv_heads"):
        h = heads.get(key)
        if h and width == h * hd and h % n:
            return True
    return False


def _mesh_dims(plan, device_mesh):
    names = getattr(device_mesh, "mesh_dim_names", None)
    axes = list(plan.mesh)
    if device_mesh.ndim != len(axes):
        raise ParallelizeError(
            "the device mesh has %d dimensions, the plan's mesh %d (%s)"
            % (device_mesh.ndim, len(axes), ", ".join(axes)))
    if names and list(names) != axes:
        raise ParallelizeError("the device mesh's dimensions are %s, the "
                               "plan's %s" % (list(names), axes))
    for i, a in enumerate(axes):
        if device_mesh.size(i) != plan.mesh[a]:
            raise ParallelizeError(
                "mesh dimension %r has %d devices, the plan was made for %d"
                % (a, device_mesh.size(i), plan.mesh[a]))


def _to_dtensor(x, mesh, placements):
    """x with `placements` (None for a mesh axis: x's own placement there,
    Replicate for a plain tensor: the batch axis's split is kept)."""
    from torch.distributed.tensor import DTensor, Replicate
    import torch
    if isinstance(x, DTensor):
        want = [q if q is not None else p
                for p, q in zip(x.placements, placements)]
        if tuple(x.placements) != tuple(want):
            return x.redistribute(mesh, want)
        return x
    if isinstance(x, torch.Tensor) and x.is_floating_point():
        want = [q if q is not None else Replicate() for q in placements]
        return DTensor.from_local(x, mesh, [Replicate()] * mesh.ndim,
                                  run_check=False).redistribute(mesh, want)
    return x


def _split_batch(args, kwargs, mesh, axis):
    """The model's tensor inputs split by batch (dim 0) over mesh axis
    `axis`, as the plan's batch-axis= pins them (every rank holds the whole
    batch; each keeps its rows: no communication)."""
    from torch.distributed.tensor import Replicate, Shard, distribute_tensor
    import torch
    tensors = [t for t in list(args) + list(kwargs.values())
               if isinstance(t, torch.Tensor) and t.dim() > 0]
    if not tensors:
        return args, kwargs
    batch = tensors[0].shape[0]
    pl = [Shard(0) if i == axis else Replicate() for i in range(mesh.ndim)]

    def split(t):
        if isinstance(t, torch.Tensor) and t.dim() > 0 and \
                t.shape[0] == batch:
            if batch % mesh.size(axis):
                raise ParallelizeError(
                    "the batch (%d) is not divisible by mesh axis %r (%d)"
                    % (batch, (mesh.mesh_dim_names or (axis,) * mesh.ndim)[axis],
                       mesh.size(axis)))
            return distribute_tensor(t, mesh, pl, src_data_rank=None)
        return t
    return (tuple(split(a) for a in args),
            {k: split(v) for k, v in kwargs.items()})


def _split_before_last(x):
    """Whether x is a DTensor split only along dimensions before its last
    (no Partial sum, its last dimension whole)."""
    from torch.distributed.tensor import DTensor, Replicate, Shard
    return isinstance(x, DTensor) and all(
        isinstance(p, Replicate) or (isinstance(p, Shard) and
                                     p.dim % x.ndim != x.ndim - 1)
        for p in x.placements)


def _resolve_partial(x, mesh):
    from torch.distributed.tensor import DTensor, Replicate
    from torch.distributed.tensor.placement_types import Partial
    if isinstance(x, DTensor) and any(isinstance(p, Partial)
                                      for p in x.placements):
        return x.redistribute(mesh, [Replicate() if isinstance(p, Partial)
                                     else p for p in x.placements])
    return x


def _reentrant_backward():
    """An autograd Function whose outputs are the model's whole outputs,
    detached, and whose backward runs the model's own backward (a reentrant
    torch.autograd.backward) under implicit_replication, as its forward ran:
    the thread-local flag is part of the state a backward captures where it
    starts, so without this a user's loss.backward() meets the plain
    tensors the forward saved (rotary tables, masks) beside DTensor
    gradients and fails."""
    import torch
    from torch.distributed.tensor.experimental import implicit_replication

    class Reenter(torch.autograd.Function):
        @staticmethod
        def forward(ctx, anchor, outputs):
            # The outputs come in a list, not as tensors: the outer graph
            # must not reach the model's (Reenter runs it itself).
            ctx.outputs = outputs
            return tuple(o.detach() for o in outputs)

        @staticmethod
        def backward(ctx, *grads):
            pairs = [(o, g) for o, g in zip(ctx.outputs, grads)
                     if g is not None]
            ctx.outputs = None
            with implicit_replication():
                torch.autograd.backward([o for o, _ in pairs],
                                        [g for _, g in pairs])
            return None, None
    return Reenter


def _walk(x, fn):
    """x with fn applied to every tensor in it (a ModelOutput is a dict,
    changed in place)."""
    import torch
    if isinstance(x, torch.Tensor):
        return fn(x)
    if isinstance(x, dict):
        for k in list(x.keys()):
            x[k] = _walk(x[k], fn)
        return x
    if isinstance(x, (tuple, list)) and not hasattr(x, "_fields"):
        return type(x)(_walk(v, fn) for v in x)
    return x


def _whole_outputs(out):
    """The model's outputs as whole tensors on every rank; those that need
    a gradient pass through _reentrant_backward."""
    import torch
    from torch.distributed.tensor import DTensor
    out = _walk(out, lambda t: t.full_tensor() if isinstance(t, DTensor)
                else t)
    needs = []
    _walk(out, lambda t: (needs.append(t) if t.requires_grad else None)
          or t)
    if not needs:
        return out
    anchor = torch.zeros((), requires_grad=True)
    new = dict(zip(map(id, needs),
                   _reentrant_backward().apply(anchor, needs)))
    return _walk(out, lambda t: new.get(id(t), t))


def _eager_attention(model):
    """transformers' eager attention (what tp_opt.plan exports): DTensor has
    no sharding rule for the fused CPU attention kernels of `sdpa`."""
    config = getattr(model, "config", None)
    if config is None or getattr(config, "_attn_implementation",
                                 "eager") == "eager":
        return None
    old = config._attn_implementation
    if hasattr(model, "set_attn_implementation"):
        model.set_attn_implementation("eager")
    else:
        config._attn_implementation = "eager"
    return old


def check_arguments(torch, what, model, plan):
    """The model and plan parallelize and check take, or one error line."""
    from .planning import Plan, require_module
    require_module(torch, model, what)
    if not isinstance(plan, Plan):
        raise ParallelizeError(
            "%s: plan is %s, not a Plan: make it with tp_opt.plan(model, "
            "args, tp=N)" % (what, "None" if plan is None else
                             "a %s" % type(plan).__name__))


def executable(plan):
    """Raises ParallelizeError for a plan parallelize cannot execute as
    planned."""
    if getattr(plan, "sequence_parallel", False):
        raise ParallelizeError(
            "the plan is sequence-parallel (%s): parallelize sets layouts "
            "at module boundaries as the weights imply and does not execute "
            "token splits yet; plan with sequence_parallel=\"off\"" % (
                "sequence-parallel=on" if "sequence-parallel=on" in
                plan.options else "%d reduce_scatter" %
                plan.collectives()["reduce_scatter"]))


def module_styles_from_placements(plan):
    """{module name: {parameter: placements}} from the plan's names alone."""
    out = {}
    for full, pl in plan.placements.items():
        mname, _, pname = full.rpartition(".")
        out.setdefault(mname, {})[pname] = pl
    return out


def _stored_renames(model):
    """{stored key: parameter name} of a transformers model whose
    save_pretrained keys rename some of its parameters ({} otherwise)."""
    try:
        import torch
        from .planning import _is_hf
        from .importer.names import stored_parameters
        if not _is_hf(model):
            return {}
        return stored_parameters(torch, model, True).renamed
    except Exception:   # no mapping: the missing names are reported
        return {}


def module_styles(model, plan, whole=None):
    """{module name: (style, {parameter: placements})} for every module that
    owns parameters: style is "rowwise" (input Shard(-1)), "colwise" (a
    matmul weight split by output features), "sharded" (another split) or
    "replicated". Fused parameters whose pieces the plan lays out
    differently are stored whole; their names are appended to `whole`."""
    whole = [] if whole is None else whole
    placements = plan.placements
    layouts, pieces = plan.layouts, plan.piece_layouts
    names = {n for n, _ in model.named_parameters()}
    missing = [n for n in placements if n not in names]
    if missing:
        # The plan names parameters by the keys save_pretrained stores; a
        # model whose stored keys are other names of its parameters (a
        # rename, not a merge) is looked up through transformers' own
        # mapping.
        renamed = _stored_renames(model)
        if renamed:
            rename = lambda table: {renamed.get(k, k): v
                                    for k, v in table.items()}
            placements, layouts, pieces = (rename(placements),
                                           rename(layouts), rename(pieces))
            missing = [n for n in placements if n not in names]
    if missing:
        raise ParallelizeError(
            "the plan names parameters the model does not have: %s (a model "
            "whose checkpoint names differ from its parameters, e.g. MoE "
            "experts stored per expert, is not supported yet)"
            % ", ".join(missing[:3]))
    out = {}
    for mname, module in model.named_modules():
        own = dict(module.named_parameters(recurse=False))
        if not own:
            continue
        style, params = "replicated", {}
        for pname in own:
            full = (mname + "." if mname else "") + pname
            pl = placements.get(full)
            if pl is None:
                if full not in layouts:
                    continue   # a tied parameter: planned under its other name
                # Pieces laid out differently (Falcon's query_key_value: q
                # split by heads, k and v whole): no one placement says
                # that, so the weight is stored whole and every device
                # computes all its pieces. The result is exact; the memory
                # and the work of this projection are not the plan's, which
                # parallelize reports (whole_parameters).
                from torch.distributed.tensor import Replicate
                pl = [Replicate()] * len(plan.mesh)
                whole.append("%s (pieces %s)" % (
                    full, ", ".join(str(p.layout)
                                    for p in pieces[full])))
            params[pname] = pl
            shard_dims = [p.dim for p in pl if hasattr(p, "dim")]
            if not shard_dims:
                continue
            k = _input_dim(module, pname)
            if k is not None and k in shard_dims:
                style = "rowwise"
            elif k is not None and style != "rowwise":
                style = "colwise"
            elif style == "replicated":
                style = "sharded"
        if params:
            out[mname] = (style, params)
    return out


def parallelize(model, plan, device_mesh):
    """Distributes `model`'s parameters as DTensors with `plan`'s placements
    on `device_mesh` (a DeviceMesh whose dimensions are the plan's mesh
    axes) and sets the layouts at module boundaries; returns the model,
    whose forward now returns whole tensors on every rank."""
    from .planning import require_torch
    torch = require_torch("tp_opt.parallelize")
    from torch.distributed.tensor import Replicate, Shard, distribute_tensor
    from torch.distributed.tensor.experimental import implicit_replication

    check_arguments(torch, "tp_opt.parallelize", model, plan)
    from torch.distributed.device_mesh import DeviceMesh
    if not isinstance(device_mesh, DeviceMesh):
        raise ParallelizeError(
            "tp_opt.parallelize: device_mesh is %s, not a DeviceMesh: make "
            "it with tp_opt.device_mesh(plan) in each process (after "
            "torch.distributed.init_process_group)"
            % ("None" if device_mesh is None else
               "a %s" % type(device_mesh).__name__))
    _mesh_dims(plan, device_mesh)
    executable(plan)
    _eager_attention(model)
    from .planning import heads_of
    heads = heads_of(getattr(model, "config", None))
    stored_whole = []
    styles = module_styles(model, plan, stored_whole)
    if stored_whole:
        import warnings
        warnings.warn("tp_opt.parallelize: stored whole on every device, "
                      "as no one placement expresses the plan's pieces: "
                      + "; ".join(stored_whole), stacklevel=2)
    modules = dict(model.named_modules())
    # Activations: Replicate on every axis but the batch axis, where each
    # keeps its split (the rules below are per tensor-parallel axis).
    batch = list(plan.mesh).index(plan.batch_axis) \
        if plan.batch_axis in plan.mesh else None
    rep = [None if i == batch else Replicate()
           for i in range(device_mesh.ndim)]
    whole = [Replicate()] * device_mesh.ndim      # a parameter gathered
    done = {}
    for mname, (style, params) in styles.items():
        module = modules[mname]
        for pname, pl in params.items():
            p = getattr(module, pname)
            if id(p) in done:          # tied: one DTensor for both
                setattr(module, pname, done[id(p)])
                continue
            dt = torch.nn.Parameter(distribute_tensor(p.data, device_mesh, pl),
                                    requires_grad=p.requires_grad)
            done[id(p)] = dt
            module.register_parameter(pname, dt)
        want = rep
        if style == "rowwise":
            want = [Shard(-1) if any(isinstance(q, Shard) and
                                     q.dim == _input_dim(module, n)
                                     for n, pls in params.items()
                                     for q in [pls[i]])
                    else rep[i] for i in range(device_mesh.ndim)]

        # A module whose parameters are whole and none of them a matmul
        # weight (a norm) takes an input split along other dimensions than
        # its last as it comes: a per-head norm (Qwen3's q_norm) on heads
        # split over the devices stays split, as the plan keeps it.
        keep = style == "replicated" and all(
            _input_dim(module, n) is None for n in params)

        def pre(mod, args, kwargs, want=want, keep=keep):
            args = tuple(a if i or (keep and _split_before_last(a)) else
                         _to_dtensor(a, device_mesh, want)
                         for i, a in enumerate(args))
            return args, kwargs

        # devices the weights are split over (the tensor-parallel axes)
        tp = 1
        for i in range(device_mesh.ndim):
            if any(isinstance(pls[i], Shard) for pls in params.values()):
                tp *= device_mesh.size(i)
        split_heads = style == "colwise" and _splits_heads(module, heads, tp)

        def post(mod, args, output, split_heads=split_heads):
            if split_heads:   # whole heads only: gathered (see _splits_heads)
                return _walk(output, functools.partial(
                    _to_dtensor, mesh=device_mesh, placements=rep))
            return _walk(output, functools.partial(_resolve_partial,
                                                   mesh=device_mesh))
        module.register_forward_pre_hook(pre, with_kwargs=True)
        module.register_forward_hook(post)
    # Blocks (modules that own no parameter but hold planned ones: decoder
    # layers, attention, MLPs) take their hidden states Replicate, unless
    # their first planned module is row-parallel: the
    # residual stream is whole between blocks in these plans, so a value
    # split by features (the sum of two embeddings split by features) is
    # gathered once where it enters the first block, not again at each
    # consumer of the residual.
    for mname, module in modules.items():
        inner = [n for n in styles if n.startswith(mname + ".")]
        # A block whose first planned module is row-parallel (BERT's
        # SelfOutput: dense, then LayerNorm) takes the split input as it is.
        if mname in styles or not mname or not inner or \
                styles[inner[0]][0] == "rowwise":
            continue

        def pre_block(mod, args, kwargs):
            if args:
                args = (_to_dtensor(args[0], device_mesh, rep),) + args[1:]
            elif "hidden_states" in kwargs:
                kwargs["hidden_states"] = _to_dtensor(
                    kwargs["hidden_states"], device_mesh, rep)
            return args, kwargs
        module.register_forward_pre_hook(pre_block, with_kwargs=True)

    # A module whose parameters are tied to planned ones under another name
    # (an LM head sharing the embedding table) has no layout of its own in
    # the plan, whose matmul reads the table's transpose: the planner gathers
    # that value (an all-gather of the table), and so does this module: its
    # input is taken Replicate and its tied weights are gathered for the call.
    for mname, module in modules.items():
        tied = [pname for pname, p in
                list(module.named_parameters(recurse=False))
                if id(p) in done and mname not in styles]
        if not tied:
            continue
        for pname in tied:
            setattr(module, pname, done[id(getattr(module, pname))])

        def pre_tied(mod, args, kwargs, tied=tied):
            mod._tp_opt_saved = {}
            for pname in tied:
                p = mod._parameters[pname]
                mod._tp_opt_saved[pname] = p
                mod._parameters[pname] = p.redistribute(device_mesh, whole)
            args = tuple(_to_dtensor(a, device_mesh, rep) if i == 0 else a
                         for i, a in enumerate(args))
            return args, kwargs

        def post_tied(mod, args, output):
            mod._parameters.update(mod._tp_opt_saved)
            del mod._tp_opt_saved
            return output
        module.register_forward_pre_hook(pre_tied, with_kwargs=True)
        module.register_forward_hook(post_tied)

    forward = model.forward

    @functools.wraps(forward)
    def run(*args, **kwargs):
        if batch is not None:
            args, kwargs = _split_batch(args, kwargs, device_mesh, batch)
        with implicit_replication():
            return _whole_outputs(forward(*args, **kwargs))
    model.forward = run
    model._tp_opt_plan = plan
    model._tp_opt_whole = stored_whole
    return model


def count_collectives(comm_mode):
    """{kind: count} from a CommDebugMode."""
    out = {}
    for op, n in comm_mode.get_comm_counts().items():
        name = str(op).split(".")[-1] if "." in str(op) else str(op)
        name = getattr(op, "__name__", name).split(".")[0]
        kind = KIND_OF_OP.get(name, name)
        out[kind] = out.get(kind, 0) + n
    return out


def format_counts(counts):
    """'3 all_gather, 2 all_reduce' ('none' when empty)."""
    return ", ".join("%d %s" % (counts[k], k) for k in sorted(counts)) or \
        "none"


def compare(plan_counts, torch_counts):
    """The per-kind difference, as lines ('' when equal)."""
    kinds = sorted(set(plan_counts) | set(torch_counts))
    diff = ["%s: plan %d, PyTorch %d" % (k, plan_counts.get(k, 0),
                                         torch_counts.get(k, 0))
            for k in kinds if plan_counts.get(k, 0) != torch_counts.get(k, 0)]
    return diff
