#!/usr/bin/env python3
"""A model whose save_pretrained keys rename its parameters: GPT-NeoX built
in code stores lm_head.weight as embed_out.weight. The plan names the
stored key; parallelize finds the parameter through transformers' own
mapping (issue 42: `the plan names parameters the model does not have:
embed_out.weight`). Prints the plan's name for the head and the check at
2 gloo processes."""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))

import torch  # noqa: E402
import transformers  # noqa: E402
import tp_opt  # noqa: E402

torch.manual_seed(0)
config = transformers.GPTNeoXConfig(
    hidden_size=64, num_attention_heads=4, num_hidden_layers=2,
    intermediate_size=128, vocab_size=256, max_position_embeddings=64)
model = transformers.GPTNeoXForCausalLM(config)
ids = torch.randint(0, 256, (1, 8))
plan = tp_opt.plan(model, (ids,), tp=2)
print("head in the plan:",
      [k for k in plan.placements if k.startswith(("embed_out", "lm_head"))])
print("head in the model:",
      [n for n, _ in model.named_parameters()
       if n.startswith(("embed_out", "lm_head"))])
print(tp_opt.check(model, plan, (ids,)))
