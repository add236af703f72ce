"""tp-opt from Python (docs/python.md): plans computed by tp-opt, executed
by torch.distributed.

    import tp_opt
    plan = tp_opt.plan(model, (input_ids,), tp=4)
    print(plan)                       # collectives, bytes, memory, exact
    plan.placements                   # {"model.layers.0...weight": [Shard(0)]}
    plan.explain("model.layers.0.mlp.down_proj.weight")
    model = tp_opt.parallelize(model, plan, device_mesh)
    plan.tp_plan                      # a Hugging Face tp_plan

Modules: planning (plan, Plan), layout (the planned IR's layouts), explain,
parallel (parallelize), hf (tp_plan), tools (finding tp-opt), importer
(the exporter behind utils/tp-import). Importing tp_opt imports no torch.
"""

__version__ = "0.1.0"


def plan(*args, **kwargs):
    from .planning import plan as _plan
    return _plan(*args, **kwargs)


def plan_module(*args, **kwargs):
    from .planning import plan_module as _plan_module
    return _plan_module(*args, **kwargs)


def parallelize(*args, **kwargs):
    from .parallel import parallelize as _parallelize
    return _parallelize(*args, **kwargs)


plan.__doc__ = "tp_opt.planning.plan: see docs/python.md"
plan_module.__doc__ = "tp_opt.planning.plan_module: see docs/python.md"
parallelize.__doc__ = "tp_opt.parallel.parallelize: see docs/python.md"
