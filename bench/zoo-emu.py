#!/usr/bin/env python3
"""The zoo and the committed fixtures on the GPU emulator (issue 39): the
table "The zoo on the emulator" of docs/gpu.md.

Every committed front-end fixture (test/frontends/Inputs/*.ref.safetensors:
its module, its checkpoint where it has one, PyTorch's outputs) and every
entry of the Hugging Face zoo (test/frontends/zoo.py: a tiny random model
saved and imported with utils/tp-import, as a new user would), plus the
masked variants below, runs as

  build/bin/tp-run MODEL --backend cuda-emu --tp 2 [--checkpoint FOLDER]
                   --reference REF --work-dir W

(the cuda build, its kernels' PTX on the emulator, cuBLAS, cuBLASLt and NCCL
on the host). One row per model: the kernels in its PTX (distinct entries),
the attention kernel chosen (tensor-core: the fused kernel on mma.sync;
cuda-core; unfused: no fused attention), the largest relative error
against PyTorch over the outputs (limit 1e-5 f32, 2e-2 bf16), the seconds
of tp-run (compile and run) and the verdict, with the reason of a failure.
Models with a sliding window run with it (the zoo's Mistral, Gemma2 and
Cohere: windows of 8 keys at 16 tokens); the -mask variants pass
tp-import's --attention-mask (a left-padded row), the -bf16-d16-mask ones
also export in bf16 with heads of 16 (the tensor-core kernel).

  bench/zoo-emu.py [NAMES] [--fixtures-only] [--markdown] [--json FILE]

Needs the build's tp-run with the CUDA runtime (its cuda-emu libraries) and
Open MPI; the zoo entries need torch, torch-mlir and transformers (run with
that python, or set TP_TORCH_PYTHON; without it only the fixtures run).
Asserts nothing: it prints the table.
"""

import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
INPUTS = os.path.join(ROOT, "test", "frontends", "Inputs")
sys.path.insert(0, os.path.join(ROOT, "test", "frontends"))
import zoo  # noqa: E402

# Masked variants of zoo entries: padding (a left-padded row of the batch)
# on top of what the model has.
MASK_VARIANTS = ["llama", "mistral", "gemma2", "qwen2"]
# Variants for the tensor-core attention (bf16, head dimension 16: 4 heads
# of the zoo's hidden 64, 2 KV heads), exported in bf16 with padding; the
# zoo's own entries have heads of 8, which only the CUDA-core kernel takes.
TC_VARIANTS = ["llama", "mistral", "qwen2"]


def fixtures():
    """(name, module, checkpoint or None, reference) of every committed
    fixture with PyTorch's outputs."""
    out = []
    for ref in sorted(glob.glob(os.path.join(INPUTS, "*.ref.safetensors"))):
        name = os.path.basename(ref)[:-len(".ref.safetensors")]
        mlir = os.path.join(INPUTS, name + ".mlir")
        if not os.path.exists(mlir):
            continue
        ckpt = os.path.join(INPUTS, name + ".safetensors")
        out.append((name, mlir, ckpt if os.path.exists(ckpt) else None, ref))
    # Fixtures that read another's weights: the GPT-2 with its loss reads
    # the GPT-2's checkpoint; the JAX GPT-2 through IREE its weights and
    # logits.
    out = [(n, m, c or (os.path.join(INPUTS, "gpt2-tiny.safetensors")
                        if n == "gpt2-tiny-loss" else None), r)
           for n, m, c, r in out]
    jax = os.path.join(INPUTS, "gpt2-jax-tiny.mlir")
    if os.path.exists(jax):
        out.append(("gpt2-jax-tiny", jax,
                    os.path.join(INPUTS, "gpt2-tiny.safetensors"),
                    os.path.join(INPUTS, "gpt2-tiny.ref.safetensors")))
    return out


def kernels_of(tp_run, work):
    """(kernels, attention kernel) of a tp-run work folder's tp=2 program:
    its partitioned module (tp2/model.tp.mlir) lowered again by tp-opt to
    the kernels (--tp-lower-gpu stop-after=kernels, as tp-run lowers it):
    the gpu.func kernels, and whether the fused attention is there and on
    mma.sync."""
    path = os.path.join(work, "tp2", "model.tp.mlir")
    tp_opt = os.path.join(os.path.dirname(tp_run), "tp-opt")
    if not os.path.exists(path):
        return None, "-"
    r = subprocess.run([tp_opt, path, "--tp-lower-gpu=chip=sm_90 format=isa "
                        "stop-after=kernels"], capture_output=True, text=True)
    if r.returncode:
        return None, "-"
    kernels = len(re.findall(r"gpu\.func @\S+\(.*\bkernel\b", r.stdout))
    if "tp_fused_attention" not in r.stdout:
        attention = "unfused"
    elif "nvvm.mma.sync" in r.stdout:
        attention = "tensor-core"
    else:
        attention = "cuda-core"
    return kernels, attention


def run_emu(tp_run, mlir, ckpt, ref, work):
    argv = [tp_run, mlir, "--backend", "cuda-emu", "--tp", "2", "--reference",
            ref, "--work-dir", work]
    if ckpt:
        argv += ["--checkpoint", ckpt]
    t0 = time.time()
    r = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT)
    seconds = time.time() - t0
    errors = []
    for line in r.stdout.splitlines():
        m = zoo.MATCH.match(line)
        if m:
            errors.append((m.group(1), float(m.group(2)), float(m.group(3))))
    ok = r.returncode == 0 and errors and all(e <= l for _, e, l in errors)
    why = ""
    if not ok:
        lines = [l for l in (r.stderr + "\n" + r.stdout).splitlines()
                 if l.strip()]
        # The first line that says what went wrong, else the last one.
        bad = [l for l in lines if re.search(
            r"tprt emulator|error|failed|does not match|differs", l)]
        why = zoo.short((bad or lines or ["exit %d" % r.returncode])[0], 240)
    worst = max(errors, key=lambda x: x[1]) if errors else None
    remarks = sorted(set(re.findall(r"remark: (attention[^\n]*)", r.stderr)))
    n, attention = kernels_of(tp_run, work)
    return dict(ok=bool(ok), err=worst[1] if worst else None,
                limit=worst[2] if worst else None, seconds=seconds, why=why,
                kernels=n, attention=attention, remarks=remarks)


def zoo_entries(names):
    out = list(zoo.entries())
    by_name = {e["name"]: e for e in out}
    for base in MASK_VARIANTS:
        e = dict(by_name[base])
        e["name"] = base + "-mask"
        e["args"] = list(e["args"]) + ["--attention-mask"]
        out.append(e)
    for base in TC_VARIANTS:
        e = dict(by_name[base])
        e["name"] = base + "-bf16-d16-mask"
        e["config"] = dict(e["config"], num_attention_heads=4,
                           num_key_value_heads=2)
        e["args"] = list(e["args"]) + ["--dtype", "bf16", "--attention-mask"]
        out.append(e)
    if names:
        out = [e for e in out if e["name"] in names]
    return out


def run_zoo_entry(e, python, tp_run, work, seq):
    folder = os.path.join(work, "folder")
    mlir = os.path.join(work, "model.mlir")
    ref = os.path.join(work, "ref.safetensors")
    row = dict(name=e["name"], source="zoo (%s)" % e["cls"], ok=False,
               err=None, limit=None, seconds=None, kernels=None,
               attention="-", why="", remarks=[])
    try:
        zoo.save_folder(e, folder)
    except Exception as ex:  # noqa: BLE001
        row["why"] = zoo.short("save_pretrained: %s: %s" % (type(ex).__name__, ex))
        return row
    cmd = [python, os.path.join(ROOT, "utils", "tp-import"), folder,
           "--seq", str(seq), "-o", mlir, "--reference", ref,
           "--tp-run", tp_run] + e["args"]
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    if r.returncode != 0:
        err = [l for l in r.stderr.splitlines() if l.startswith("tp-import:")]
        row["why"] = "import: " + zoo.short(
            (err[-1] if err else r.stderr.strip()[-300:]), 300)
        return row
    row.update(run_emu(tp_run, mlir, folder, ref, os.path.join(work, "emu")))
    return row


def fmt(v, spec):
    return "-" if v is None else spec % v


def table(rows, markdown):
    head = ["model", "source", "kernels", "attention", "error (limit)",
            "seconds", "result"]
    lines = []
    for r in rows:
        result = "pass" if r["ok"] else "FAIL: " + (r["why"] or "?")
        attention = r["attention"]
        if r["remarks"]:
            attention += " (" + "; ".join(r["remarks"]) + ")"
        elif attention == "unfused":
            attention = "none (no softmax attention matched)"
        lines.append([r["name"], r["source"], fmt(r["kernels"], "%d"),
                      attention,
                      "-" if r["err"] is None else "%.1e (%.0e)" % (r["err"], r["limit"]),
                      fmt(r["seconds"], "%.1f"), result])
    if markdown:
        out = ["| " + " | ".join(head) + " |",
               "|" + "|".join("---" for _ in head) + "|"]
        return "\n".join(out + ["| " + " | ".join(l) + " |" for l in lines])
    widths = [max([len(h)] + [len(l[i]) for l in lines]) for i, h in enumerate(head)]
    out = ["  ".join(h.ljust(w) for h, w in zip(head, widths))]
    return "\n".join(out + ["  ".join(c.ljust(w) for c, w in zip(l, widths))
                            for l in lines])


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("names", nargs="*", help="models (default: all)")
    p.add_argument("--fixtures-only", action="store_true")
    p.add_argument("--seq", type=int, default=16)
    p.add_argument("--tp-run", default=os.path.join(ROOT, "build", "bin", "tp-run"))
    p.add_argument("--markdown", action="store_true")
    p.add_argument("--json", metavar="FILE",
                   help="write the rows (after each model)")
    p.add_argument("--table-from", metavar="FILE",
                   help="print the table of an earlier --json file")
    p.add_argument("--keep", metavar="DIR",
                   help="keep each model's folders and work in DIR")
    args = p.parse_args()
    if args.table_from:
        print(table(json.load(open(args.table_from)), args.markdown))
        return 0
    rows = []

    def done(row):
        rows.append(row)
        print("zoo-emu: %-22s %s (%s s)%s" % (
            row["name"], "pass" if row["ok"] else "FAIL",
            fmt(row["seconds"], "%.0f"),
            "" if row["ok"] else ": " + row["why"]), flush=True)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(rows, f, indent=1)

    base = args.keep or tempfile.mkdtemp(prefix="tp-zoo-emu-")
    try:
        for name, mlir, ckpt, ref in fixtures():
            if args.names and name not in args.names:
                continue
            row = dict(name=name, source="fixture")
            row.update(run_emu(args.tp_run, mlir, ckpt, ref,
                               os.path.join(base, name)))
            done(row)
        if not args.fixtures_only:
            python = sys.executable if zoo.have_torch() else zoo.find_torch_python()
            if python is None:
                print("zoo-emu: the zoo skipped: no python with torch, "
                      "torch-mlir and transformers (TP_TORCH_PYTHON)")
            else:
                for e in zoo_entries(args.names):
                    work = os.path.join(base, e["name"])
                    os.makedirs(work, exist_ok=True)
                    if python == sys.executable:
                        done(run_zoo_entry(e, python, args.tp_run, work, args.seq))
                    else:
                        # save_pretrained needs torch: in that python.
                        r = subprocess.run(
                            [python, __file__, e["name"], "--tp-run",
                             args.tp_run, "--seq", str(args.seq), "--json",
                             os.path.join(work, "row.json"), "--zoo-only"],
                            capture_output=True, text=True)
                        try:
                            done(json.load(open(os.path.join(work, "row.json")))[0])
                        except (OSError, ValueError, IndexError):
                            done(dict(name=e["name"], source="zoo", ok=False,
                                      err=None, limit=None, seconds=None,
                                      kernels=None, attention="-", remarks=[],
                                      why=zoo.short(r.stderr.strip()[-200:])))
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
    print()
    print(table(rows, args.markdown))
    npass = sum(1 for r in rows if r["ok"])
    print("\n%d of %d models pass on the emulator at tp=2" % (npass, len(rows)))
    return 0


if __name__ == "__main__":
    if "--zoo-only" in sys.argv:
        # One zoo entry inside the torch python (see main).
        sys.argv.remove("--zoo-only")
        p = argparse.ArgumentParser()
        p.add_argument("name")
        p.add_argument("--tp-run")
        p.add_argument("--seq", type=int)
        p.add_argument("--json")
        a = p.parse_args()
        e = [x for x in zoo_entries([a.name])][0]
        work = os.path.dirname(a.json)
        row = run_zoo_entry(e, sys.executable, a.tp_run, work, a.seq)
        json.dump([row], open(a.json, "w"))
        sys.exit(0)
    sys.exit(main())
