#!/usr/bin/env python3
"""Checks what tp-runner did with a model, from model.json alone.

    check-output.py MODEL_DIR [--output FILE] [--same OUT=BUF]...
                    [--values OUT=V,V,...]... [--slice OUT=WHOLE@O,...]...
                    [--locals DIR] [--print-global BUF]
                    [--checkpoint FILE] [--save FILE]

Written from docs/model-abi.md and docs/models.md, independently of
tp-runner's C++:

  --output FILE    FILE is tp-runner's --output: one record per output of
                   model.json, in order: u32 magic 0x54504F55, u32 dtype
                   code, u32 rank, i64 dims[rank] (= global_shape), data.
  --same OUT=BUF   output OUT holds exactly the global value of the input or
                   param BUF (its `init`, rounded to its dtype). BUF is a
                   name, or #K for model.json's buffers[K] (pieces of one
                   fused tensor share its name).
  --values OUT=... output OUT holds these values (row-major).
  --locals DIR     DIR/local-R-K.bin (written by a fake model) is device R's
                   block of buffer K: the global value at the block's indices,
                   zero past the global shape; checked for every device and
                   every input and param.
  --slice OUT=WHOLE@O,O,...  output OUT holds exactly the block of output
                   WHOLE at these offsets (OUT's global shape from there).
  --print-global BUF  prints the global value of BUF, one value a line.
  --save FILE      writes the outputs of --output to FILE, a .safetensors
                   file holding each under its name (a --reference for
                   another run).
  --checkpoint FILE   the global value of an input or param named in FILE
                   (a .safetensors file: u64 little-endian header length,
                   JSON header, data; or a model.safetensors.index.json whose
                   "weight_map" names each tensor's shard) is that tensor,
                   not its init: its bytes, or its values rounded once to
                   the buffer's floating-point dtype (nearest-even).
An input or param with "init": null that no file provides holds the default
init: normal(seed = its argument index, std 0.02). A buffer with a "source"
is the block at source.offsets of a stored tensor of source.shape: the file
holds that tensor, and the init draws element i of the stored tensor (its
flat row-major index in source.shape).

Prints "check-output: ok (...)" or the first difference and exits 1.
"""

import argparse
import fractions
import itertools
import math
import json
import os
import struct
import sys

# The init contract's reference (docs/models.md), shared with tp-gen's tests.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "..", "utils"))
from tp_init import element  # noqa: E402

MAGIC = 0x54504F55
CODES = {"f32": 0, "f16": 1, "bf16": 2, "f64": 3, "i32": 4, "i64": 5,
         "i8": 6, "i1": 7}
SIZES = {"f32": 4, "f16": 2, "bf16": 2, "f64": 8, "i32": 4, "i64": 8,
         "i8": 1, "i1": 1}


def fail(message):
    print("check-output: error: " + message)
    sys.exit(1)


def pack(dtype, value):
    """One element stored as dtype (floats rounded to nearest-even)."""
    if dtype == "f32":
        return struct.pack("<f", value)
    if dtype == "f64":
        return struct.pack("<d", value)
    if dtype == "f16":
        return struct.pack("<e", value)  # rounds the double, ties to even
    if dtype == "bf16":
        bits = struct.unpack("<I", struct.pack("<f", value))[0]
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFFFFFF
        return struct.pack("<H", bits >> 16)
    value = int(value)
    if dtype == "i64":
        return struct.pack("<q", value)
    if dtype == "i32":
        return struct.pack("<i", value)
    if dtype == "i8":
        return struct.pack("<b", value)
    if dtype == "i1":
        return struct.pack("<B", 1 if value else 0)
    fail("unknown dtype " + dtype)


def unpack(dtype, data):
    fmt = {"f32": "f", "f64": "d", "f16": "e", "i64": "q", "i32": "i",
           "i8": "b", "i1": "B"}
    size = SIZES[dtype]
    count = len(data) // size
    if dtype == "bf16":
        return [struct.unpack("<f", struct.pack("<I", h << 16))[0]
                for h in struct.unpack("<%dH" % count, data)]
    return list(struct.unpack("<%d%s" % (count, fmt[dtype]), data))


def prod(values):
    result = 1
    for v in values:
        result *= v
    return result


# name -> (the tensor's dtype as a buffer dtype, its raw bytes), from
# --checkpoint.
CHECKPOINT = {}
STORED = {"F32": "f32", "F16": "f16", "BF16": "bf16", "F64": "f64",
          "I64": "i64", "I32": "i32", "I8": "i8", "BOOL": "i1"}


def read_safetensors(path, names=None):
    with open(path, "rb") as f:
        data = f.read()
    (length,) = struct.unpack_from("<Q", data, 0)
    header = json.loads(data[8:8 + length])
    body = data[8 + length:]
    for name, entry in header.items():
        if name != "__metadata__" and (names is None or name in names):
            begin, end = entry["data_offsets"]
            CHECKPOINT[name] = (STORED[entry["dtype"]], body[begin:end])


def read_checkpoint(path):
    if not path.endswith(".json"):
        read_safetensors(path)
        return
    with open(path) as f:
        weight_map = json.load(f)["weight_map"]
    for shard in sorted(set(weight_map.values())):
        read_safetensors(os.path.join(os.path.dirname(path), shard),
                         {n for n, s in weight_map.items() if s == shard})


def bf16_nearest(value):
    """value rounded to bf16 (8 significant bits, exponents of f32), once,
    to nearest-even: exact rational arithmetic."""
    if value != value or value == 0 or math.isinf(value):
        return value
    exponent = max(math.frexp(abs(value))[1] - 1, -126)
    ulp = fractions.Fraction(2) ** (exponent - 7)
    units = fractions.Fraction(abs(value)) / ulp
    whole = math.floor(units)
    if units - whole > fractions.Fraction(1, 2) or (
            units - whole == fractions.Fraction(1, 2) and whole % 2 == 1):
        whole += 1
    rounded = whole * ulp
    if rounded > (2 - fractions.Fraction(1, 128)) * fractions.Fraction(2) ** 127:
        return math.copysign(math.inf, value)
    return math.copysign(float(rounded), value)


def stored_index(buf, i):
    """The flat index in the stored tensor of buf's global element i: with a
    "source", the element at global position p is the stored tensor's
    element at p + source.offsets (row-major in source.shape)."""
    source = buf.get("source")
    if source is None:
        return i
    position = []
    for n in reversed(buf["global_shape"]):
        position.append(i % n)
        i //= n
    position.reverse()
    flat = 0
    for p, o, n in zip(position, source["offsets"], source["shape"]):
        flat = flat * n + p + o
    return flat


def element_bytes(buf, i):
    """Element i (flat, global, row-major) of buf, stored as its dtype."""
    i = stored_index(buf, i)
    stored = CHECKPOINT.get(buf["name"])
    if stored is not None:
        dtype, blob = stored
        if dtype == buf["dtype"]:
            size = SIZES[dtype]
            return blob[i * size:(i + 1) * size]
        value = unpack(dtype, blob[i * SIZES[dtype]:(i + 1) * SIZES[dtype]])[0]
        if buf["dtype"] == "bf16":
            value = bf16_nearest(value)  # exact in f32: pack rounds no more
        return pack(buf["dtype"], value)
    init = buf["init"]
    if init is None:
        init = {"kind": "normal", "seed": buf["index"], "std": 0.02}
    return pack(buf["dtype"], element(init, i))


def global_bytes(buf):
    n = prod(buf["global_shape"])
    return b"".join(element_bytes(buf, i) for i in range(n))


def coords_of(rank, sizes):
    coords = []
    for size in reversed(sizes):
        coords.append(rank % size)
        rank //= size
    return list(reversed(coords))


def local_bytes(buf, model, rank):
    names = [a["name"] for a in model["mesh"]["axes"]]
    sizes = [a["size"] for a in model["mesh"]["axes"]]
    coords = coords_of(rank, sizes)
    offsets = []
    for d, axes in enumerate(buf["layout"]["dims"]):
        g = 0
        for name in axes:
            a = names.index(name)
            g = g * sizes[a] + coords[a]
        offsets.append(g * buf["local_shape"][d])
    gshape = buf["global_shape"]
    out = []
    for index in itertools.product(*[range(n) for n in buf["local_shape"]]):
        gindex = [o + i for o, i in zip(offsets, index)]
        if any(g >= n for g, n in zip(gindex, gshape)):
            out.append(pack(buf["dtype"], 0))
            continue
        flat = 0
        for g, n in zip(gindex, gshape):
            flat = flat * n + g
        out.append(element_bytes(buf, flat))
    return b"".join(out)


def read_output(path, outputs):
    with open(path, "rb") as f:
        data = f.read()
    records = {}
    pos = 0
    for buf in outputs:
        if pos + 12 > len(data):
            fail("%s ends before output %r" % (path, buf["name"]))
        magic, code, rank = struct.unpack_from("<III", data, pos)
        pos += 12
        if magic != MAGIC:
            fail("output %r: magic 0x%08x, expected 0x%08x"
                 % (buf["name"], magic, MAGIC))
        if code != CODES[buf["dtype"]]:
            fail("output %r: dtype code %d, expected %d (%s)"
                 % (buf["name"], code, CODES[buf["dtype"]], buf["dtype"]))
        dims = list(struct.unpack_from("<%dq" % rank, data, pos))
        pos += 8 * rank
        if dims != buf["global_shape"]:
            fail("output %r: dims %s, expected the global shape %s"
                 % (buf["name"], dims, buf["global_shape"]))
        size = prod(dims) * SIZES[buf["dtype"]]
        records[buf["name"]] = data[pos:pos + size]
        if len(records[buf["name"]]) != size:
            fail("output %r: %d bytes of data, expected %d"
                 % (buf["name"], len(records[buf["name"]]), size))
        pos += size
    if pos != len(data):
        fail("%s has %d bytes after the last output" % (path, len(data) - pos))
    return records


def save_safetensors(path, outputs, records):
    """The outputs as a .safetensors file: u64 little-endian header length,
    the JSON header, the data."""
    names = {v: k for k, v in STORED.items()}
    header, data = {}, b""
    for buf in outputs:
        blob = records[buf["name"]]
        header[buf["name"]] = {"dtype": names[buf["dtype"]],
                               "shape": buf["global_shape"],
                               "data_offsets": [len(data), len(data) + len(blob)]}
        data += blob
    text = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("model_dir")
    parser.add_argument("--output")
    parser.add_argument("--same", action="append", default=[])
    parser.add_argument("--values", action="append", default=[])
    parser.add_argument("--slice", action="append", default=[])
    parser.add_argument("--locals")
    parser.add_argument("--print-global", action="append", default=[])
    parser.add_argument("--checkpoint")
    parser.add_argument("--save")
    args = parser.parse_args()
    if args.checkpoint:
        read_checkpoint(args.checkpoint)

    with open(os.path.join(args.model_dir, "model.json")) as f:
        model = json.load(f)
    buffers = {b["name"]: b for b in model["buffers"]}
    outputs = [b for b in model["buffers"] if b["role"] == "output"]
    checked = []

    for name in args.print_global:
        buf = buffers[name]
        for value in unpack(buf["dtype"], global_bytes(buf)):
            print(repr(value))

    records = read_output(args.output, outputs) if args.output else {}
    if args.output:
        checked.append("%d outputs" % len(outputs))
    for spec in args.same:
        out, src = spec.split("=")
        source = (model["buffers"][int(src[1:])] if src.startswith("#")
                  else buffers[src])
        if buffers[out]["dtype"] != source["dtype"]:
            fail("--same %s: different dtypes" % spec)
        expected = global_bytes(source)
        if records[out] != expected:
            got = unpack(buffers[out]["dtype"], records[out])
            want = unpack(source["dtype"], expected)
            for i, (g, w) in enumerate(zip(got, want)):
                if struct.pack("<d", float(g)) != struct.pack("<d", float(w)):
                    fail("output %r element %d is %r, expected %r (%s)"
                         % (out, i, g, w, src))
            fail("output %r differs from %s" % (out, src))
        checked.append("%s = %s" % (out, src))
    for spec in args.values:
        out, text = spec.split("=")
        want = [float(v) for v in text.split(",")]
        got = [float(v) for v in unpack(buffers[out]["dtype"], records[out])]
        if got != want:
            fail("output %r is %s, expected %s" % (out, got, want))
        checked.append("%s values" % out)
    for spec in args.slice:
        out, rest = spec.split("=")
        whole, offsets_text = rest.split("@")
        offsets = [int(o) for o in offsets_text.split(",")]
        part, full = buffers[out], buffers[whole]
        size = SIZES[part["dtype"]]
        expected = []
        for index in itertools.product(
                *[range(n) for n in part["global_shape"]]):
            flat = 0
            for i, o, n in zip(index, offsets, full["global_shape"]):
                flat = flat * n + i + o
            expected.append(records[whole][flat * size:(flat + 1) * size])
        if records[out] != b"".join(expected):
            fail("output %r is not the block of %r at %s: %s against %s"
                 % (out, whole, offsets, unpack(part["dtype"], records[out]),
                    unpack(part["dtype"], b"".join(expected))))
        checked.append("%s = %s@%s" % (out, whole, offsets_text))
    if args.locals:
        devices = prod(a["size"] for a in model["mesh"]["axes"])
        count = 0
        for rank in range(devices):
            for k, buf in enumerate(model["buffers"]):
                if buf["role"] == "output":
                    continue
                path = os.path.join(args.locals, "local-%d-%d.bin" % (rank, k))
                with open(path, "rb") as f:
                    got = f.read()
                want = local_bytes(buf, model, rank)
                if got != want:
                    fail("device %d's block of %r: %s, expected %s"
                         % (rank, buf["name"], unpack(buf["dtype"], got),
                            unpack(buf["dtype"], want)))
                count += 1
        checked.append("%d local blocks" % count)
    if args.save:
        save_safetensors(args.save, outputs, records)
        checked.append("saved %d outputs" % len(outputs))
    if checked:
        print("check-output: ok (%s)" % ", ".join(checked))


main()
