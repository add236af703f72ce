#!/usr/bin/env python3
"""The PyTorch half of bench/real-size: makes a model's Hugging Face folder
in code, and times PyTorch eager on it.

Run by bench/real-size with a Python that has torch, transformers and
safetensors.

  real_size_torch.py make --config-json JSON --out DIR [--seed S]

builds the model of the config (its "architectures"[0], random init after
torch.manual_seed(S)), in f32, and writes it with save_pretrained (config
.json and safetensors; tied weights stored once, as transformers stores
them). Prints one JSON object: {"parameters": P, "seconds": S}.

  real_size_torch.py time --folder DIR --reference R.safetensors
                          [--threads N] [--steps N] [--warmup W]

loads the folder with from_pretrained in f32 (transformers' default
attention implementation), takes the input ids of R (tp-import's
reference: its "input_ids" and PyTorch's "logits"), sets
torch.set_num_threads(N), runs W forward passes and then N timed ones under
torch.no_grad(), and prints one JSON object:

  {"seconds_per_step": S, "steps": N, "warmup": W, "threads": T,
   "torch": "2.15.0", "reference_error": E, "load_seconds": L}

S is the mean of the N timed passes; E the relative error max|a - b| /
max|b| of its logits against the reference's (a check that both sides run
the same model and input).
"""

import argparse
import json
import sys
import time


def make(args):
    import torch
    import transformers

    transformers.utils.logging.disable_progress_bar()
    start = time.perf_counter()
    config_dict = json.loads(args.config_json)
    arch = config_dict["architectures"][0]
    cls = getattr(transformers, arch)
    config = transformers.AutoConfig.for_model(**config_dict)
    torch.manual_seed(args.seed)
    model = cls(config).to(torch.float32).eval()
    model.save_pretrained(args.out, safe_serialization=True)
    count = sum(p.numel() for p in model.parameters())
    print(json.dumps({"parameters": count,
                      "seconds": time.perf_counter() - start}))


def time_eager(args):
    import torch
    import transformers
    from safetensors.torch import load_file

    transformers.utils.logging.disable_progress_bar()
    torch.set_num_threads(args.threads)
    start = time.perf_counter()
    config = transformers.AutoConfig.from_pretrained(args.folder)
    arch = (getattr(config, "architectures", None) or [None])[0]
    cls = getattr(transformers, arch) if arch else \
        transformers.AutoModelForCausalLM
    model = cls.from_pretrained(args.folder, dtype=torch.float32).eval()
    load_seconds = time.perf_counter() - start
    reference = load_file(args.reference)
    ids = reference["input_ids"].to(torch.int64)

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
                      "warmup": args.warmup,
                      "threads": torch.get_num_threads(),
                      "torch": torch.__version__, "reference_error": error,
                      "load_seconds": load_seconds}))


def main():
    p = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    m = sub.add_parser("make", help="write a model's save_pretrained folder")
    m.add_argument("--config-json", required=True,
                   help="the config, a JSON object with \"architectures\"")
    m.add_argument("--out", required=True, help="the folder to write")
    m.add_argument("--seed", type=int, default=0)
    t = sub.add_parser("time", help="time PyTorch eager on a folder")
    t.add_argument("--folder", required=True)
    t.add_argument("--reference", required=True,
                   help="tp-import's reference (input_ids, logits)")
    t.add_argument("--threads", type=int, default=1)
    t.add_argument("--steps", type=int, default=3)
    t.add_argument("--warmup", type=int, default=1)
    args = p.parse_args()
    if args.command == "make":
        make(args)
    else:
        if args.threads < 1 or args.steps < 1 or args.warmup < 0:
            sys.exit("real_size_torch: --threads and --steps must be at "
                     "least 1, --warmup at least 0")
        time_eager(args)


if __name__ == "__main__":
    main()
