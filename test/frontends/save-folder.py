#!/usr/bin/env python3
"""Writes a Hugging Face folder with `save_pretrained`, from a model class
and a config made here (random init, nothing downloaded): the inputs of
tp-import's folder tests (tp-import-check-layers.test, tp-import-meta.test).

  save-folder.py CLASS --config-json JSON -o DIR [--seed N] [--dtype bf16]
                 [--max-shard-size SIZE] [--randomize-buffers]

--max-shard-size splits the weights into shards with an index
(model.safetensors.index.json); --randomize-buffers gives the model's
floating-point persistent buffers (BatchNorm's running statistics) random
values before saving, so that a reader that does not take them from the
checkpoint gets other outputs.
"""

import argparse
import json
import sys


def main():
    p = argparse.ArgumentParser()
    p.add_argument("cls")
    p.add_argument("--config-json", default="{}")
    p.add_argument("-o", "--output", required=True)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--dtype", choices=("f32", "bf16"), default="f32")
    p.add_argument("--max-shard-size")
    p.add_argument("--randomize-buffers", action="store_true")
    args = p.parse_args()

    import torch
    import transformers
    transformers.utils.logging.disable_progress_bar()
    cls = getattr(transformers, args.cls, None)
    if cls is None:
        sys.exit("save-folder.py: transformers has no class %s" % args.cls)
    config = cls.config_class(**json.loads(args.config_json))
    torch.manual_seed(args.seed)
    model = cls(config).eval()
    if args.randomize_buffers:
        params = dict(model.named_parameters())
        persistent = [n for n in model.state_dict() if n not in params]
        with torch.no_grad():
            for n in persistent:
                b = model.get_buffer(n)
                if b.is_floating_point():
                    b.copy_(torch.rand_like(b) + 0.5)
    if args.dtype == "bf16":
        model = model.to(torch.bfloat16)
    kwargs = {}
    if args.max_shard_size:
        kwargs["max_shard_size"] = args.max_shard_size
    model.save_pretrained(args.output, **kwargs)


if __name__ == "__main__":
    main()
