#!/usr/bin/env python3
"""Writes a Hugging Face folder of any size without building the model: the
checkpoint `save_pretrained` would write for a transformers model type and
config (the same keys, shapes and shard index), with random weights, one
shard at a time, so that a Llama-3-8B or 70B folder can be made on a machine
that could not hold the model. The input of docs/tp-import.md's "Shard a
real model" and of the real-size benchmarks.

  bench/synthetic-folder.py MODEL_TYPE --config-json JSON -o DIR
                            [--dtype bf16|f32] [--shard-size 5G] [--seed N]

MODEL_TYPE is a transformers model type or model class (llama,
LlamaForCausalLM); the keys are those tp-import names its arguments by
(python/tp_opt/importer/names.py: save_pretrained's keys). Matrices are
drawn from N(0, 0.02^2), vectors (norm weights and biases) are ones and
zeros, so that the model computes finite logits. Prints the folder's size
and the seconds it took. Needs torch, transformers and safetensors.
"""

import argparse
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))


def parse_size(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    if text[-1:].upper() in units:
        return int(float(text[:-1]) * units[text[-1:].upper()])
    return int(text)


def main():
    p = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model")
    p.add_argument("--config-json", default="{}")
    p.add_argument("-o", "--output", required=True)
    p.add_argument("--dtype", choices=("bf16", "f32"), default="bf16")
    p.add_argument("--shard-size", default="5G")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()

    import torch
    from safetensors.torch import save_file
    from tp_opt.importer import models, names

    start = time.monotonic()
    torch.set_grad_enabled(False)
    model = models.build(torch, args.model, dtype=args.dtype,
                         config_json=[args.config_json], meta=True)
    stored = names.stored_parameters(torch, model.module, True)
    os.makedirs(args.output, exist_ok=True)
    config = model.module.config
    config.architectures = [type(model.module).__name__]
    config.save_pretrained(args.output)

    limit = parse_size(args.shard_size)
    shards, current, size = [], [], 0
    for name, t in zip(stored.names, stored.tensors):
        n = t.numel() * t.element_size()
        if current and size + n > limit:
            shards.append(current)
            current, size = [], 0
        current.append((name, t))
        size += n
    if current:
        shards.append(current)

    gen = torch.Generator().manual_seed(args.seed)
    weight_map, total = {}, 0
    for i, shard in enumerate(shards):
        fname = "model-%05d-of-%05d.safetensors" % (i + 1, len(shards))
        tensors = {}
        for name, t in shard:
            if t.dim() >= 2:
                v = torch.empty(tuple(t.shape), dtype=torch.float32)
                v.normal_(0.0, 0.02, generator=gen)
            elif name.endswith("bias"):
                v = torch.zeros(tuple(t.shape))
            else:
                v = torch.ones(tuple(t.shape))
            tensors[name] = v.to(t.dtype)
            weight_map[name] = fname
            total += v.numel() * t.element_size()
        save_file(tensors, os.path.join(args.output, fname),
                  metadata={"format": "pt"})
        del tensors
    with open(os.path.join(args.output, "model.safetensors.index.json"),
              "w") as f:
        json.dump({"metadata": {"total_size": total},
                   "weight_map": weight_map}, f, indent=2)
    print("synthetic-folder: %s: %d tensors, %.2f GB in %d shards, %.0f s"
          % (args.output, len(weight_map), total / 1e9, len(shards),
             time.monotonic() - start))


if __name__ == "__main__":
    main()
