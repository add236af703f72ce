#!/usr/bin/env python3
"""Makes the unnamed twin of a fixture (run-unnamed.test): the module with
every `tp.name` removed, its weights file keyed `arg<N>` by the position of
each parameter in @main's signature, and its reference keyed `arg<N>` (the
inputs) and `result<N>` (the outputs), as a user without names would write
them.

  unname.py MODEL.mlir WEIGHTS.safetensors REF.safetensors OUTDIR
"""
import json
import os
import re
import struct
import sys


def read(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    return {k: (v["dtype"], v["shape"],
                data[v["data_offsets"][0]:v["data_offsets"][1]])
            for k, v in header.items() if k != "__metadata__"}


def write(path, tensors):
    header, blobs, offset = {}, [], 0
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def main():
    model, weights, reference, out = sys.argv[1:5]
    os.makedirs(out, exist_ok=True)
    text = open(model).read()
    head = text[text.index("func.func @main("):]
    head = head[:head.index("{\n")]
    args, _, results = head.partition(") -> ")
    arg_names = re.findall(r'%arg\d+: tensor<[^>]*>(?: \{[^}]*tp\.name = "([^"]*)"[^}]*\})?', args)
    res_names = re.findall(r'tp\.name = "([^"]*)"', results)
    # Drop every tp.name (and the attribute dictionaries left empty).
    stripped = re.sub(r'tp\.name = "[^"]*"(, )?', "", text)
    stripped = re.sub(r", \}", "}", stripped).replace(" {}", "")
    with open(os.path.join(out, "model.mlir"), "w") as f:
        f.write(stripped)
    w, r = read(weights), read(reference)
    renamed_w, renamed_r = {}, {}
    for i, name in enumerate(arg_names):
        if name in w:
            renamed_w["arg%d" % i] = w[name]
        elif name in r:
            renamed_r["arg%d" % i] = r[name]
    for i, name in enumerate(res_names):
        renamed_r["result%d" % i] = r[name]
    write(os.path.join(out, "weights.safetensors"), renamed_w)
    write(os.path.join(out, "reference.safetensors"), renamed_r)
    print("unnamed: %d arguments, %d weights, %d reference tensors"
          % (len(arg_names), len(renamed_w), len(renamed_r)))


if __name__ == "__main__":
    main()
