#!/usr/bin/env python3
"""Writes the inputs and expected outputs of mixed-gemm.mlir.

    make-mixed-gemm.py DIR

DIR/in.safetensors: x [8, 96], head [48, 96], q [4, 8, 32] and k [4, 32, 8]
in bf16, values of 8 significant bits (1 + i/128 times a small signed
integer, scaled) whose products need up to 16 bits; DIR/ref.safetensors:
logits = x head^T [8, 48] and scores = q k [4, 8, 8] computed here in
double from the bf16 values, stored as f32. A result rounded to bf16 is off
by up to 2^-9 relative, far above tp-run's f32 limit (1e-5). Plain Python
(struct, json), the safetensors format written from its description.
"""

import json
import os
import struct
import sys


def bf16(value):
    bits = struct.unpack("<I", struct.pack("<f", value))[0]
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFFFFFF
    return bits >> 16


def value(bits):
    return struct.unpack("<f", struct.pack("<I", bits << 16))[0]


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


def tensor(shape, seed):
    count = 1
    for d in shape:
        count *= d
    bits = [bf16((1 + (i * 37 + seed) % 128 / 128) *
                 ((i * 7 + seed) % 9 - 4) / 4) for i in range(count)]
    return bits


def flat(bits):
    return [value(b) for b in bits]


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    x, head = tensor([8, 96], 1), tensor([48, 96], 2)
    q, k = tensor([4, 8, 32], 3), tensor([4, 32, 8], 4)
    fx, fh, fq, fk = flat(x), flat(head), flat(q), flat(k)
    logits = [sum(fx[i * 96 + l] * fh[j * 96 + l] for l in range(96))
              for i in range(8) for j in range(48)]
    scores = [sum(fq[(b * 8 + i) * 32 + l] * fk[(b * 32 + l) * 8 + j]
                  for l in range(32))
              for b in range(4) for i in range(8) for j in range(8)]
    pack16 = lambda v: struct.pack("<%dH" % len(v), *v)
    pack32 = lambda v: struct.pack("<%df" % len(v), *v)
    write(os.path.join(out, "in.safetensors"),
          [("x", "BF16", [8, 96], pack16(x)),
           ("head", "BF16", [48, 96], pack16(head)),
           ("q", "BF16", [4, 8, 32], pack16(q)),
           ("k", "BF16", [4, 32, 8], pack16(k))])
    write(os.path.join(out, "ref.safetensors"),
          [("logits", "F32", [8, 48], pack32(logits)),
           ("scores", "F32", [4, 8, 8], pack32(scores))])


if __name__ == "__main__":
    main()
