#!/usr/bin/env python3
"""Writes the Hugging Face-style checkpoint and reference of tied-lm.mlir.

    make-hub-checkpoint.py DIR

DIR/hub/: model.safetensors.index.json and two bf16 shards (wte.weight,
ln_f.weight), as the Hub ships a bf16 model; DIR/ref.safetensors: the token
ids (input_ids, i64) and the logits computed here in double from the bf16
weights, stored as f32; DIR/off.safetensors: the same with logits[0, 2, 5]
off by 0.5. Plain Python (struct, json), the safetensors format written
from its description (https://github.com/huggingface/safetensors).
"""

import json
import os
import struct
import sys

VOCAB, HIDDEN, IDS = 16, 8, [3, 14, 0, 7]


def bf16(value):
    bits = struct.unpack("<I", struct.pack("<f", value))[0]
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFFFFFF
    return bits >> 16


def write(path, tensors):
    """tensors: [(name, dtype, shape, raw bytes)]."""
    header, data = {"__metadata__": {"format": "pt"}}, b""
    for name, dtype, shape, blob in tensors:
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [len(data), len(data) + len(blob)]}
        data += blob
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)


def main():
    out = sys.argv[1]
    os.makedirs(os.path.join(out, "hub"), exist_ok=True)
    wte = [[bf16(((i * HIDDEN + j) % 13 - 6) / 8 + 0.01 * i)
            for j in range(HIDDEN)] for i in range(VOCAB)]
    ln = [bf16(1 + j / 16) for j in range(HIDDEN)]
    value = lambda bits: struct.unpack("<f", struct.pack("<I", bits << 16))[0]

    def pack16(rows):
        return struct.pack("<%dH" % len(rows), *rows)

    write(os.path.join(out, "hub", "model-00001-of-00002.safetensors"),
          [("wte.weight", "BF16", [VOCAB, HIDDEN],
            pack16([b for row in wte for b in row]))])
    write(os.path.join(out, "hub", "model-00002-of-00002.safetensors"),
          [("ln_f.weight", "BF16", [HIDDEN], pack16(ln))])
    with open(os.path.join(out, "hub", "model.safetensors.index.json"),
              "w") as f:
        json.dump({"metadata": {"total_size": 2 * (VOCAB + 1) * HIDDEN},
                   "weight_map": {
                       "wte.weight": "model-00001-of-00002.safetensors",
                       "ln_f.weight": "model-00002-of-00002.safetensors"}},
                  f, indent=2)

    logits = []
    for token in IDS:
        h = [value(wte[token][d]) * value(ln[d]) for d in range(HIDDEN)]
        for v in range(VOCAB):
            logits.append(sum(h[d] * value(wte[v][d]) for d in range(HIDDEN)))
    ids = struct.pack("<4q", *IDS)
    for name, change in [("ref", 0.0), ("off", 0.5)]:
        values = list(logits)
        values[2 * VOCAB + 5] += change
        write(os.path.join(out, name + ".safetensors"),
              [("input_ids", "I64", [1, 4], ids),
               ("logits", "F32", [1, 4, VOCAB],
                struct.pack("<%df" % len(values), *values))])


main()
