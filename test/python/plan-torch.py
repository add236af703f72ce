#!/usr/bin/env python3
"""tp_opt.plan on a PyTorch model (exported through torch-mlir): a tiny
Llama with 8 query and 2 key/value heads built from a config, planned at
tp=4; prints the plan, some placements, the explanation of a replicated
key/value projection (indivisible heads, with the model's numbers),
tp_plan and what it cannot say, and the package's errors."""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))

import torch  # noqa: E402
import transformers  # noqa: E402
import tp_opt  # noqa: E402
from tp_opt.importer.models import TPImportError  # noqa: E402

torch.manual_seed(0)
config = transformers.LlamaConfig(
    hidden_size=64, num_attention_heads=8, num_key_value_heads=2, head_dim=8,
    num_hidden_layers=2, intermediate_size=128, vocab_size=256,
    max_position_embeddings=64)
model = transformers.LlamaForCausalLM(config)
ids = torch.randint(0, 256, (1, 8))
plan = tp_opt.plan(model, (ids,), tp=4)
print(plan)
for name in ("model.layers.0.self_attn.q_proj.weight",
             "model.layers.0.mlp.down_proj.weight",
             "model.layers.1.self_attn.v_proj.weight"):
    print("placements %s %s" % (name, plan.placements[name]))
print(plan.explain("model.layers.1.self_attn.v_proj.weight"))
print("tp_plan", plan.tp_plan)
for k, v in plan.tp_plan_unsupported.items():
    print("not expressible: %s: %s" % (k, v))
print("attn_implementation after plan:", model.config._attn_implementation)
for kwargs in ({"tp": 2, "training": True}, {"tp": 2, "mesh": {"tp": 2}}):
    try:
        tp_opt.plan(model, (ids,), **kwargs)
    except TPImportError as e:
        print("error:", e)
try:
    tp_opt.plan(model, ("not a tensor",), tp=2)
except TPImportError as e:
    print("error:", e)


# Every argument is checked before it reaches tp-opt's option string or a
# process (issue 40: these planned another mesh, tp=1, or raised a raw
# AttributeError / a pickling error).
def error(fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
        print("no error")
    except TPImportError as e:
        print("error:", e)


for kwargs in ({"tp": 2, "memory_budget": "none tp=8"},
               {"mesh": {"a=2,b": 2}}, {"tp": True},
               {"tp": 2, "memory_budget": float("nan")},
               {"tp": 2, "device": "h100 nvlink"},
               {"tp": 2, "sequence_parallel": "maybe"},
               {"mesh": {"dp": 2, "tp": True}}):
    error(tp_opt.plan, model, (ids,), **kwargs)
error(tp_opt.plan, lambda x: x, (ids,), tp=2)
error(tp_opt.plan, transformers.LlamaForCausalLM, (ids,), tp=2)
error(tp_opt.check, model, plan, (ids,), limit=float("nan"))
error(tp_opt.check, model, plan, (ids,), limit=-1)
error(tp_opt.parallelize, model, plan, None)
error(tp_opt.parallelize, model, None, None)


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.up = torch.nn.Linear(8, 16)

    def forward(self, x):
        return self.up(x)


error(tp_opt.check, MLP(), plan, (torch.ones(2, 8),))


# Inputs beyond ids (issue 42): example_inputs gives a model the inputs
# tp-import would (a ConvNeXt's pixel_values from its config), and
# from_pretrained picks the class tp-import builds.
cnx = transformers.ConvNextForImageClassification(transformers.ConvNextConfig(
    hidden_sizes=[16, 32], depths=[1, 1], num_stages=2, num_channels=3,
    num_labels=10, image_size=32))
inputs = tp_opt.example_inputs(cnx)
print("example inputs:", {k: list(v.shape) for k, v in inputs.items()})
cnx_plan = tp_opt.plan(cnx, kwargs=inputs, tp=2)
print(str(cnx_plan).splitlines()[0])
error(tp_opt.example_inputs, lambda x: x)
