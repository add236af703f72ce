#!/usr/bin/env python3
"""tp_opt.check beyond one axis and the forward (docs/python.md, "launch and
check"): the committed tiny Llama (Hugging Face folder, GQA 8/2) planned by
tp_opt.plan on a 2-D mesh {"dp": 2, "tp": 2} (the batch of 2 split over dp)
and run on 4 gloo processes, a forward and one backward step compared with
the unsharded model (logits and every parameter's gradient); the same at
tp=2; then what is refused, each with its message: a sequence-parallel
plan, a device mesh that is not the plan's, a lambda for launch, a rank
that fails.

  parallelize_mesh.py     (run from anywhere; needs torch, torch-mlir,
                           transformers)
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "python"))
FOLDER = os.path.join(ROOT, "test", "frontends", "Inputs", "hf", "llama-tiny")


def mesh_errors(model, plan_2d, plan_tp2):
    """In one process: parallelize with device meshes that are not the
    plan's; returns the messages."""
    from torch.distributed.device_mesh import init_device_mesh
    import tp_opt
    from tp_opt.parallel import ParallelizeError
    out = []
    for plan in (plan_2d, plan_tp2):
        try:
            tp_opt.parallelize(model, plan, init_device_mesh(
                "cpu", (1,), mesh_dim_names=("tp",)))
        except ParallelizeError as e:
            out.append(str(e))
    return out


def main():
    import torch
    import transformers
    import tp_opt
    from tp_opt.importer.models import TPImportError
    transformers.utils.logging.disable_progress_bar()
    model = transformers.AutoModelForCausalLM.from_pretrained(
        FOLDER, dtype=torch.float32)
    gen = torch.Generator().manual_seed(0)
    ids = torch.randint(0, model.config.vocab_size, (2, 8), generator=gen)
    plan_2d = tp_opt.plan(model, (ids,), mesh={"dp": 2, "tp": 2})
    print(plan_2d)
    for name in ("model.layers.0.self_attn.q_proj.weight",
                 "model.layers.0.mlp.down_proj.weight"):
        print("placements", name, plan_2d.placements[name])
    print(tp_opt.check(model, plan_2d, (ids,), backward=True))
    plan_tp2 = tp_opt.plan(model, (ids[:1],), tp=2)
    print(tp_opt.check(model, plan_tp2, (ids[:1],), backward=True))

    def refused(what, fn):
        try:
            fn()
            print(what, "not refused")
        except TPImportError as e:
            print("%s: %s: %s" % (what, type(e).__name__, e))
    sp = tp_opt.plan(model, (ids[:1],), tp=2, sequence_parallel="on",
                     memory_budget="1G")
    refused("sequence-parallel",
            lambda: tp_opt.check(model, sp, (ids[:1],)))
    import parallelize_mesh   # launch runs a module's function, not __main__'s
    for message in tp_opt.launch(parallelize_mesh.mesh_errors, 1, model,
                                 plan_2d, plan_tp2)[0]:
        print("mesh: ParallelizeError:", message)
    refused("lambda", lambda: tp_opt.launch(lambda: 0, 2))
    refused("failing rank", lambda: tp_opt.launch(int, 2, "x"))


if __name__ == "__main__":
    main()
