#!/usr/bin/env python3
"""Fuzzing the runner's inputs: model.json, checkpoints, files, token ids
and dense_resource blobs (issue 27's runner half).

Compiles three small models once (test/e2e/Inputs: mm.mlir, lookup.mlir
whose token ids index a 16-row table, int-add.mlir), runs each with a
checkpoint for a baseline, then for SECONDS runs tp-runner (one rank) on
mutated inputs, and now and then tp-run on a mutated dense_resource blob:

  json        a field of one buffer of model.json replaced by a value of
              another shape, type or size (or deleted), a buffer removed or
              duplicated, the mesh changed
  json-bytes  model.json with bytes flipped, inserted or cut
  checkpoint  the safetensors file cut short, its header edited (dtype,
              shape, offsets, length) or bytes flipped
  file        the checkpoint a FIFO, a device, a folder, a symbolic link
              loop or missing
  ids         the lookup's token ids drawn from [-4, 40): some past the
              table
  blob        resource-weight.mlir's blob lengthened or shortened by
              1-9 bytes (or kept), compiled by tp-run

Outcomes: ok (ran; for json mutations that change nothing the code
depends on, the outputs are the baseline's bytes), rejected (exit 1 or 2
with a 'tp-runner:' or 'error:' line). Failures, saved with their command
under OUT: crash (a signal, an exit code past 2, an assertion or sanitizer
report), timeout (no end within 20 s: a hang), silent (exit 0 although
model.json describes other buffers than model.so was compiled for, an id
lies outside [0, 16), or a blob's size is not its type's), wrong (exit 0
with outputs that differ from the baseline where nothing may change them).

  bench/fuzz-runner.py --seconds 120 --bin build/bin --out fuzz-out
"""

import argparse
import collections
import copy
import json
import os
import random
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
INPUTS = os.path.join(HERE, "..", "test", "e2e", "Inputs")
CRASH_MARKS = re.compile(
    r"Assertion|Stack dump|LLVM ERROR|UNREACHABLE|Segmentation|"
    r"AddressSanitizer|runtime error:|core dumped|index must be")
# The fields of a buffer the compiled code depends on (tp-runner compares
# them with the model.json that model.so embeds).
ABI_FIELDS = ("role", "index", "dtype", "global_shape", "local_shape",
              "layout", "updates")
DTYPES = {"f32": ("F32", "<f"), "i64": ("I64", "<q"), "i32": ("I32", "<i")}
ODD_VALUES = [None, 0, -1, 1, 2, 3, 7, 1 << 40, -(1 << 62), 1.5, "f32",
              "f64", "i8", "i1", "bf16", "x", [], [0], [4], [8, 6], [6, 8],
              [4, 8], [1, 4], [16, 8], [-1, 8], [1 << 31, 1 << 31], {},
              {"dims": [["tp"], []], "partial": None},
              {"dims": [[], []], "partial": "sum"},
              {"kind": "ones"}, {"kind": "integers", "high": 3, "seed": 1},
              "input", "param", "output"]


def write_safetensors(path, tensors):
    """tensors: [(name, dtype, shape, values)]."""
    header, blobs, offset = {}, [], 0
    for name, dtype, shape, values in tensors:
        tag, fmt = DTYPES[dtype]
        data = b"".join(struct.pack(fmt, v) for v in values)
        header[name] = {"dtype": tag, "shape": shape,
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def run(cmd, timeout=20):
    try:
        done = subprocess.run(cmd, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, timeout=timeout)
        return done.returncode, done.stdout.decode(errors="replace")
    except subprocess.TimeoutExpired as e:
        return None, (e.stdout or b"").decode(errors="replace")


def classify(rc, text):
    if rc is None:
        return "timeout"
    if rc < 0 or rc > 2 or CRASH_MARKS.search(text):
        return "crash"
    if rc == 0:
        return "ok"
    return "rejected" if re.search(r"tp-runner: |error: ", text) else "crash"


def abi(model):
    """What the compiled code depends on, to tell an ABI change."""
    try:
        return json.dumps([model.get("mesh")] + [
            {k: b.get(k) for k in ABI_FIELDS} for b in model["buffers"]],
            sort_keys=True)
    except (AttributeError, KeyError, TypeError):
        return None


class Fuzzer:
    def __init__(self, bin_dir, work, rng):
        self.runner = os.path.join(bin_dir, "tp-runner")
        self.tp_run = os.path.join(bin_dir, "tp-run")
        self.work, self.rng = work, rng
        self.models = {}
        for name, tensors in [
                ("mm", [("x", "f32", [4, 8], [(i % 7) - 3.0 for i in range(32)])]),
                ("lookup", [("ids", "i64", [1, 4], [3, 15, 0, 9])]),
                ("int-add", [("x", "i32", [4, 8], [(i % 5) - 2 for i in range(32)])])]:
            folder = os.path.join(work, name)
            rc, text = run([self.tp_run, os.path.join(INPUTS, name + ".mlir"),
                            "--tp", "1", "--compile-only", "--work-dir", folder],
                           timeout=300)
            if rc != 0:
                sys.exit("fuzz-runner: cannot compile %s:\n%s" % (name, text))
            ckpt = os.path.join(work, name + ".safetensors")
            write_safetensors(ckpt, tensors)
            base = os.path.join(work, name + ".bin")
            rc, text = run([self.runner, os.path.join(folder, "tp1"),
                            "--checkpoint", ckpt, "--output", base])
            if rc != 0:
                sys.exit("fuzz-runner: baseline of %s failed:\n%s" % (name, text))
            with open(os.path.join(folder, "tp1", "model.json")) as f:
                model = json.load(f)
            self.models[name] = (os.path.join(folder, "tp1"), ckpt, base, model)

    def copy_model(self, name):
        src = self.models[name][0]
        dst = os.path.join(self.work, "case")
        shutil.rmtree(dst, ignore_errors=True)
        shutil.copytree(src, dst)
        return dst

    def run_model(self, folder, ckpt, base):
        out = os.path.join(self.work, "out.bin")
        if os.path.exists(out):
            os.remove(out)
        cmd = [self.runner, folder, "--checkpoint", ckpt, "--output", out]
        rc, text = run(cmd)
        same = None
        if rc == 0 and os.path.exists(out):
            with open(out, "rb") as a, open(base, "rb") as b:
                same = a.read() == b.read()
        return cmd, rc, text, same

    def case_json(self):
        rng = self.rng
        name = rng.choice(list(self.models))
        _, ckpt, base, model = self.models[name]
        folder = self.copy_model(name)
        mutated = copy.deepcopy(model)
        buffers = mutated["buffers"]
        what = rng.random()
        if what < 0.1:
            del buffers[rng.randrange(len(buffers))]
        elif what < 0.15:
            buffers.insert(rng.randrange(len(buffers)),
                           copy.deepcopy(rng.choice(buffers)))
        elif what < 0.2:
            mutated["mesh"] = {"axes": [{"name": "tp", "size": rng.choice([0, 2, 3])}]}
        else:
            b = rng.choice(buffers)
            field = rng.choice(ABI_FIELDS + ("name", "init", "index_bound"))
            if rng.random() < 0.15:
                b.pop(field, None)
            else:
                b[field] = copy.deepcopy(rng.choice(ODD_VALUES))
        with open(os.path.join(folder, "model.json"), "w") as f:
            json.dump(mutated, f)
        cmd, rc, text, same = self.run_model(folder, ckpt, base)
        outcome = classify(rc, text)
        if outcome == "ok" and abi(mutated) != abi(model):
            outcome = "silent"
        elif outcome == "ok" and not same and all(
                a.get("init") == b.get("init") and a.get("name") == b.get("name")
                for a, b in zip(mutated["buffers"], model["buffers"])):
            outcome = "wrong"
        return outcome, cmd, text

    def case_json_bytes(self):
        rng = self.rng
        name = rng.choice(list(self.models))
        _, ckpt, base, _ = self.models[name]
        folder = self.copy_model(name)
        path = os.path.join(folder, "model.json")
        data = bytearray(open(path, "rb").read())
        for _ in range(rng.randint(1, 4)):
            k = rng.randrange(len(data))
            op = rng.random()
            if op < 0.5:
                data[k] = rng.choice(b'{}[]",:0123456789-.eE tnfa\x00\xff')
            elif op < 0.8:
                data[k:k] = bytes([rng.randrange(256)])
            else:
                del data[k:]
        open(path, "wb").write(bytes(data))
        cmd, rc, text, _ = self.run_model(folder, ckpt, base)
        return classify(rc, text), cmd, text

    def case_checkpoint(self):
        rng = self.rng
        name = rng.choice(list(self.models))
        folder, ckpt, base, _ = self.models[name]
        data = bytearray(open(ckpt, "rb").read())
        (length,) = struct.unpack("<Q", data[:8])
        op = rng.random()
        if op < 0.25:
            data = data[:rng.randrange(len(data))]
        elif op < 0.5:
            header = json.loads(data[8:8 + length])
            tensor = header[rng.choice(list(header))]
            key = rng.choice(["dtype", "shape", "data_offsets"])
            tensor[key] = copy.deepcopy(rng.choice(
                ODD_VALUES + ["F16", "BF16", "I32", "U8", "BOOL", "F64",
                              [0, 1 << 62], [64, 0]]))
            text = json.dumps(header).encode()
            data = struct.pack("<Q", len(text)) + text + data[8 + length:]
        elif op < 0.6:
            data[:8] = struct.pack("<Q", rng.choice(
                [0, 1, length + 1, len(data), 1 << 40, (1 << 64) - 1]))
        else:
            for _ in range(rng.randint(1, 8)):
                data[rng.randrange(len(data))] = rng.randrange(256)
        mutated = os.path.join(self.work, "mutated.safetensors")
        open(mutated, "wb").write(bytes(data))
        cmd, rc, text, _ = self.run_model(folder, mutated, base)
        return classify(rc, text), cmd, text

    def case_file(self):
        rng = self.rng
        folder, _, base, _ = self.models["mm"]
        path = os.path.join(self.work, "odd")
        if os.path.lexists(path):
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path)
            else:
                os.remove(path)
        kind = rng.choice(["fifo", "device", "folder", "loop", "missing"])
        if kind == "fifo":
            os.mkfifo(path)
        elif kind == "device":
            os.symlink(rng.choice(["/dev/zero", "/dev/null", "/dev/full"]), path)
        elif kind == "folder":
            os.mkdir(path)
            if rng.random() < 0.5:
                os.mkfifo(os.path.join(path, "model.safetensors"))
        elif kind == "loop":
            os.symlink(path, path)
        cmd, rc, text, _ = self.run_model(folder, path, base)
        outcome = classify(rc, text)
        return ("silent" if outcome == "ok" else outcome), cmd, text

    def case_ids(self):
        rng = self.rng
        folder, _, base, _ = self.models["lookup"]
        ids = [rng.randrange(-4, 40) for _ in range(4)]
        ckpt = os.path.join(self.work, "ids.safetensors")
        write_safetensors(ckpt, [("ids", "i64", [1, 4], ids)])
        cmd, rc, text, _ = self.run_model(folder, ckpt, base)
        outcome = classify(rc, text)
        outside = [i for i in ids if not 0 <= i < 16]
        if outcome == "ok" and outside:
            outcome = "silent"
        elif outcome == "rejected" and (
                not outside or "outside [0, 16)" not in text):
            outcome = "wrong"
        return outcome, cmd, text

    def case_blob(self):
        rng = self.rng
        delta = rng.choice([0] + list(range(-9, 0)) + list(range(1, 10)))
        text = open(os.path.join(INPUTS, "resource-weight.mlir")).read()
        m = re.search(r'w_blob: "0x([0-9A-F]*)"', text)
        hexdata = m.group(1)
        hexdata = hexdata + "AB" * delta if delta >= 0 else hexdata[:2 * delta]
        program = os.path.join(self.work, "blob.mlir")
        open(program, "w").write(text[:m.start(1)] + hexdata + text[m.end(1):])
        cmd = [self.tp_run, program, "--tp", "1", "--compile-only",
               "--work-dir", os.path.join(self.work, "blob")]
        rc, out = run(cmd, timeout=120)
        outcome = classify(rc, out)
        if outcome == "ok" and delta != 0:
            outcome = "silent"
        elif outcome == "rejected" and delta == 0:
            outcome = "wrong"
        return outcome, cmd, out


def save(cmd, work, saved):
    """Copies the regular files and folders `cmd` names under `work` into
    `saved` (never a FIFO, a device or a link: they are in the log)."""
    os.makedirs(saved, exist_ok=True)
    for arg in cmd:
        if not arg.startswith(work) or os.path.islink(arg):
            continue
        target = os.path.join(saved, os.path.basename(arg))
        if os.path.isdir(arg):
            shutil.copytree(arg, target, symlinks=True, dirs_exist_ok=True,
                            ignore=lambda d, names: [
                                n for n in names if not (
                                    os.path.isfile(os.path.join(d, n)) or
                                    os.path.isdir(os.path.join(d, n)))])
        elif os.path.isfile(arg):
            shutil.copy(arg, target)


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--bin", default=os.path.join(HERE, "..", "build", "bin"))
    parser.add_argument("--out", default="fuzz-out")
    parser.add_argument("--seed", type=int, default=int(time.time()) % 1000000)
    args = parser.parse_args()
    if not os.access(os.path.join(args.bin, "tp-runner"), os.X_OK):
        sys.exit("fuzz-runner: no tp-runner in %s (build first)" % args.bin)
    os.makedirs(args.out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="tp-fuzz-runner-")
    rng = random.Random(args.seed)
    fuzzer = Fuzzer(args.bin, work, rng)
    cases = [("json", fuzzer.case_json, 6), ("json-bytes", fuzzer.case_json_bytes, 3),
             ("checkpoint", fuzzer.case_checkpoint, 5), ("file", fuzzer.case_file, 1),
             ("ids", fuzzer.case_ids, 2), ("blob", fuzzer.case_blob, 1)]
    counts = collections.Counter()
    failures = 0
    start = time.time()
    n = 0
    while time.time() - start < args.seconds:
        kind, case, _ = rng.choices(cases, weights=[c[2] for c in cases])[0]
        outcome, cmd, text = case()
        counts[(kind, outcome)] += 1
        if outcome not in ("ok", "rejected"):
            failures += 1
            saved = os.path.join(args.out, "runner-%s-%s-%d" % (kind, outcome, n))
            save(cmd, work, saved)
            with open(saved + ".log", "w") as f:
                f.write(" ".join(cmd) + "\n\n" + text)
            print("fuzz-runner: %s on a %s case: %s.log" % (outcome, kind, saved),
                  flush=True)
        n += 1
    shutil.rmtree(work, ignore_errors=True)
    kinds = sorted({k for k, _ in counts})
    print("fuzz-runner: %d cases in %.0f s (seed %d)" % (n, time.time() - start,
                                                        args.seed))
    for kind in kinds:
        row = ", ".join("%d %s" % (counts[(kind, o)], o) for o in
                        ("ok", "rejected", "crash", "timeout", "silent", "wrong")
                        if counts[(kind, o)])
        print("  %-10s %s" % (kind, row))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
