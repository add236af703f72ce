"""tp-opt from Python (docs/python.md): plans computed by tp-opt, executed
by torch.distributed.

    import tp_opt
    plan = tp_opt.plan(model, (input_ids,), tp=4)
    print(plan)                       # collectives, bytes, memory, exact
    plan.placements                   # {"model.layers.0...weight": [Shard(0)]}
    plan.explain("model.layers.0.mlp.down_proj.weight")
    model = tp_opt.parallelize(model, plan, device_mesh)
    plan.tp_plan                      # a Hugging Face tp_plan
    print(tp_opt.check(model, plan, (input_ids,)))   # on N gloo processes

Modules: planning (plan, Plan), layout (the planned IR's layouts), explain,
parallel (parallelize), processes (launch, check,
device_mesh), hf (tp_plan), tools (finding tp-opt), importer
(the exporter behind utils/tp-import). Importing tp_opt imports no torch.
"""

__version__ = "0.1.0"


def plan(*args, **kwargs):
    from .planning import plan as _plan
    return _plan(*args, **kwargs)


def example_inputs(*args, **kwargs):
    from .planning import example_inputs as _example_inputs
    return _example_inputs(*args, **kwargs)


def from_pretrained(*args, **kwargs):
    from .planning import from_pretrained as _from_pretrained
    return _from_pretrained(*args, **kwargs)


def plan_module(*args, **kwargs):
    from .planning import plan_module as _plan_module
    return _plan_module(*args, **kwargs)


def parallelize(*args, **kwargs):
    from .parallel import parallelize as _parallelize
    return _parallelize(*args, **kwargs)


def check(*args, **kwargs):
    from .processes import check as _check
    return _check(*args, **kwargs)


def launch(*args, **kwargs):
    from .processes import launch as _launch
    return _launch(*args, **kwargs)


def device_mesh(*args, **kwargs):
    from .processes import device_mesh as _device_mesh
    return _device_mesh(*args, **kwargs)


plan.__doc__ = "tp_opt.planning.plan: see docs/python.md"
example_inputs.__doc__ = "tp_opt.planning.example_inputs: see docs/python.md"
from_pretrained.__doc__ = "tp_opt.planning.from_pretrained: see docs/python.md"
plan_module.__doc__ = "tp_opt.planning.plan_module: see docs/python.md"
parallelize.__doc__ = "tp_opt.parallel.parallelize: see docs/python.md"
check.__doc__ = "tp_opt.processes.check: see docs/python.md"
launch.__doc__ = "tp_opt.processes.launch: see docs/python.md"
device_mesh.__doc__ = "tp_opt.processes.device_mesh: see docs/python.md"
