"""Plan a Hugging Face model with tp-opt, run the plan on N gloo CPU processes
with PyTorch and compare with the unsharded model (docs/python.md).
    python examples/python/parallelize_hf.py [FOLDER] [--nproc N]"""
import argparse, tp_opt
p = argparse.ArgumentParser()
p.add_argument("folder", nargs="?", default="test/frontends/Inputs/hf/llama-tiny")
p.add_argument("--nproc", type=int, default=2)
a = p.parse_args()
model = tp_opt.from_pretrained(a.folder)       # the class tp-import builds: LM, vision, ...
inputs = tp_opt.example_inputs(model)          # input_ids, pixel_values, ... as its config says
plan = tp_opt.plan(model, kwargs=inputs, tp=a.nproc)
print(plan)
print(tp_opt.check(model, plan, kwargs=inputs))
