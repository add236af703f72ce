"""Plan a Hugging Face model with tp-opt, run the plan on N gloo CPU processes
with PyTorch and compare with the unsharded model (docs/python.md).
    python examples/python/parallelize_hf.py [FOLDER] [--nproc N]"""
import argparse, torch, transformers, tp_opt
p = argparse.ArgumentParser()
p.add_argument("folder", nargs="?", default="test/frontends/Inputs/hf/llama-tiny")
p.add_argument("--nproc", type=int, default=2)
a = p.parse_args()
model = transformers.AutoModelForCausalLM.from_pretrained(a.folder, dtype=torch.float32)
ids = torch.randint(0, model.config.vocab_size, (1, 8), generator=torch.Generator().manual_seed(0))
plan = tp_opt.plan(model, (ids,), tp=a.nproc)
print(plan)
print(tp_opt.check(model, plan, (ids,)))
