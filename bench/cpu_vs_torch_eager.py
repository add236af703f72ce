#!/usr/bin/env python3
"""The PyTorch half of bench/cpu-vs-torch: one Hugging Face causal LM in
eager mode on one thread, timed per forward pass.

Run by bench/cpu-vs-torch with a Python that has torch and transformers;
prints one JSON object on stdout:

  {"seconds_per_step": S, "steps": N, "warmup": W, "torch": "2.15.0",
   "reference_error": E or null}

S is the mean of N forward passes after W warm-up passes (torch.no_grad,
torch.set_num_threads(1), transformers' default attention implementation).
The weights come from --weights (a safetensors file of the model's
parameters, as test/frontends/Inputs/*-tiny.safetensors) or, without it,
from the config's random init with torch.manual_seed(--seed); the input ids
from --reference (its "input_ids"), else random in [0, vocab) of --seq
tokens. With --reference holding "logits", E is the relative error
max|a - b| / max|b| of PyTorch's logits against it (a check that both halves
run the same model).
"""

import argparse
import json
import sys
import time


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", required=True,
                   help="config.json of the model (Hugging Face format)")
    p.add_argument("--config-json", default="{}",
                   help="overrides of the config, a JSON object")
    p.add_argument("--weights", help="safetensors file of the parameters")
    p.add_argument("--reference",
                   help="safetensors file with input_ids (and logits)")
    p.add_argument("--seq", type=int, default=8)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--warmup", type=int, default=2)
    args = p.parse_args()

    import torch
    import transformers
    from safetensors.torch import load_file

    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    with open(args.config) as f:
        config_dict = json.load(f)
    config_dict.update(json.loads(args.config_json))
    config_dict.pop("dtype", None)
    config_dict.pop("torch_dtype", None)
    config = transformers.AutoConfig.for_model(**config_dict)
    arch = (config_dict.get("architectures") or [None])[0]
    cls = getattr(transformers, arch) if arch else \
        transformers.AutoModelForCausalLM
    model = cls(config) if arch else cls.from_config(config)
    model = model.to(torch.float32).eval()
    if args.weights:
        state = load_file(args.weights)
        missing, unexpected = model.load_state_dict(state, strict=False)
        # Tied weights (lm_head) are stored once.
        missing = [m for m in missing if not m.endswith("lm_head.weight")]
        if missing or unexpected:
            sys.exit("cpu_vs_torch_eager: %s does not fit the model: missing "
                     "%s, unexpected %s" % (args.weights, missing, unexpected))
        model.tie_weights()

    reference = load_file(args.reference) if args.reference else {}
    if "input_ids" in reference:
        ids = reference["input_ids"].to(torch.int64)
    else:
        generator = torch.Generator().manual_seed(args.seed)
        ids = torch.randint(0, config.vocab_size, (1, args.seq),
                            generator=generator)

    with torch.no_grad():
        for _ in range(args.warmup):
            logits = model(ids).logits
        start = time.perf_counter()
        for _ in range(args.steps):
            logits = model(ids).logits
        seconds = (time.perf_counter() - start) / args.steps

    error = None
    if "logits" in reference:
        b = reference["logits"].to(torch.float64)
        a = logits.to(torch.float64).reshape(b.shape)
        error = float((a - b).abs().max() / b.abs().max())
    print(json.dumps({"seconds_per_step": seconds, "steps": args.steps,
                      "warmup": args.warmup, "torch": torch.__version__,
                      "reference_error": error}))


if __name__ == "__main__":
    main()
