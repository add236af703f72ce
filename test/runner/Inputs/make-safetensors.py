#!/usr/bin/env python3
"""Writes a small .safetensors file for the tp-runner checkpoint tests.

    make-safetensors.py OUT TENSOR... [--drop-bytes N] [--header-length N]
                        [--metadata]

TENSOR is NAME:DTYPE:SHAPE:VALUES with DTYPE a safetensors dtype (F32, F16,
BF16, F64, I64, I32, I8, BOOL, U8), SHAPE like 4x6 (`-` for a scalar) and VALUES
`arange+B` (B, B+1, B+2, ... in row-major order), `full+V` (every element
V) or a comma-separated list (nan, inf, -inf allowed; exact decimal or
hexadecimal floats like 0x1.01p+0). The format (https://github.com/huggingface/safetensors): u64
little-endian header length N, N bytes of JSON {"NAME": {"dtype", "shape",
"data_offsets": [begin, end]}, ...}, then the data (offsets from the end of
the header), written from the format's description, not from tp-runner.

--drop-bytes N cuts the last N bytes off the file (a truncated download);
--header-length N writes N as the header length instead of the real one;
--metadata adds a "__metadata__" entry (which readers skip).
"""

import argparse
import json
import os
import struct

FORMATS = {"F32": "f", "F64": "d", "F16": "e", "I64": "q", "I32": "i",
           "I8": "b", "BOOL": "B", "U8": "B"}


def pack(dtype, value):
    if dtype == "BF16":
        bits = struct.unpack("<I", struct.pack("<f", float(value)))[0]
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFFFFFF
        return struct.pack("<H", bits >> 16)
    if dtype in ("F32", "F64", "F16"):
        return struct.pack("<" + FORMATS[dtype], float(value))
    return struct.pack("<" + FORMATS[dtype], int(value))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("tensors", nargs="+")
    parser.add_argument("--drop-bytes", type=int, default=0)
    parser.add_argument("--header-length", type=int)
    parser.add_argument("--metadata", action="store_true")
    args = parser.parse_args()

    header = {}
    if args.metadata:
        header["__metadata__"] = {"format": "pt"}
    data = b""
    for spec in args.tensors:
        name, dtype, shape_text, values_text = spec.split(":")
        shape = ([] if shape_text == "-" else
                 [int(n) for n in shape_text.split("x")])
        count = 1
        for n in shape:
            count *= n
        if values_text.startswith("arange+"):
            base = float(values_text[len("arange+"):])
            values = [base + i for i in range(count)]
        elif values_text.startswith("full+"):
            values = [float(values_text[len("full+"):])] * count
        else:
            values = [float.fromhex(v) if "0x" in v else float(v)
                      for v in values_text.split(",")]
        blob = b"".join(pack(dtype, v) for v in values)
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [len(data), len(data) + len(blob)]}
        data += blob
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)  # the reference writer pads to 8 bytes
    length = len(text) if args.header_length is None else args.header_length
    blob = struct.pack("<Q", length) + text + data
    if args.drop_bytes:
        blob = blob[:-args.drop_bytes]
    folder = os.path.dirname(args.out)
    if folder:
        os.makedirs(folder, exist_ok=True)
    with open(args.out, "wb") as f:
        f.write(blob)


main()
