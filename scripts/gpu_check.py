#!/usr/bin/env python3
"""The GPU check (docs/gpu.md, "The GPU check"): one device run that cannot
be wasted. scripts/gpu-check.sh is its command line:

  gpu-check.sh --prepare DIR [--build BUILD] [--tiny-only]
  DIR/gpu-check.sh --run DIR [--out OUT] [--dry-run] [--only NAMES]
                   [--timeout NAME=SECONDS]...

--prepare (the build machine: LLVM, the CUDA toolkit; gpu_check_prepare.py)
compiles the models of MODELS, LAYER_MODELS and ATTENTION_MODELS (and the
GEMM models of the 7B layer's cost reports) for the GPU, the CPU
references of those checked against one, and copies the runtime-only
runner, the runtime, its dependencies and Open MPI's launcher into DIR,
which then needs no LLVM.
--run (the GPU machine: python3, no LLVM, nothing to download; this file)
executes plan(DIR).

How --run works:
  1. It restores the executable bits (a transfer may lose them), unpacks
     what --prepare gzipped, builds the library path (the bundle's runtime,
     the bundled dependencies the machine lacks, the caller's
     LD_LIBRARY_PATH, the driver, cuBLAS and NCCL that ldconfig or
     PyTorch's nvidia/* packages have) and finds the GPU (nvidia-smi and
     libcuda.so.1) and the launcher (the bundle's Open MPI, the very build
     its libraries come from; else the machine's mpirun).
  2. plan() lists the stages in the order they run, in two groups: every
     stage of one rank first (conformance, the models at tp=1 against
     their references, compute-sanitizer, the 7B layer fused and unfused,
     its attention alone fused and unfused, the GEMMs (shared-A calls as
     such), PyTorch), then the stages of several ranks sharing the GPU
     through mpirun (cuda-shared), the path that hung before: a hang there
     cannot starve a measurement of one rank.
  3. Each stage runs under its timeout, clipped to what is left of the
     budget (GPU_CHECK_BUDGET, 450 s), with its log in DIR/run/. A stage
     still running at its timeout has its whole process tree killed and is
     reported TIMEOUT; after the first TIMEOUT of a shared stage, the other
     shared stages are skipped (SKIP, saying why) rather than each waiting
     out its own timeout. Out of budget, the remaining stages are skipped.
  4. After every stage OUT holds results.txt, results.json, performance.md
     and logs.tar.gz (every stage log, the machine's description, the
     outputs of failed comparisons), so a run cut short still brings back
     what it did; OUT never holds more than these four files.

Exit status of --run: 0 when every stage that ran passed, 1 when one failed
or timed out, 2 for a bad command line, 3 when there is no GPU (every GPU
stage then says SKIP (no GPU)).
"""

import argparse
import fnmatch
import glob
import gzip
import io
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import tarfile
import time

# What one device run may carry: the bundle together with the repository's
# working tree must stay under the device tool's 64 MiB; the tree is about
# 8 MiB.
LIMIT_MIB = 56
# The whole --run stops starting stages after this many seconds.
DEFAULT_BUDGET = 450
# Files over this size travel gzipped in the bundle.
GZIP_OVER = 4 << 20
# Outputs of failed comparisons up to this size go into logs.tar.gz.
KEEP_OUTPUT = 4 << 20
# Where a driver's libcuda.so.1 may be when ldconfig's cache and the
# library path do not list it (containers mount it in the first two).
DRIVER_DIRS = ["/usr/local/nvidia/lib64", "/usr/local/nvidia/lib",
               "/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib/wsl/lib"]
# What --run leaves in OUT, and nothing else (a device run brings back at
# most 8 files).
OUT_FILES = ("results.txt", "results.json", "performance.md", "logs.tar.gz")

# ---------------------------------------------------------------------------
# The models (one table for --prepare and --run)
# ---------------------------------------------------------------------------

TINY = ["--preset", "tiny", "--gen=--with-embedding"]
# The mid-size model: head_dim 128 with GQA (8 heads, 2 KV heads), rows of
# 1024 (several elements per thread of a 256-thread row kernel), a
# vocabulary that no tp divides; seq 32 keeps its CPU reference cheap.
MID = ["--preset", "tiny", "--gen=--model=llama", "--gen=--layers=1",
       "--gen=--hidden=1024", "--gen=--heads=8", "--gen=--kv-heads=2",
       "--gen=--ffn=2816", "--gen=--vocab=16411", "--gen=--seq=32",
       "--gen=--batch=1"]
# One Llama-2-7B decoder layer, bf16, batch 1 x 4096 tokens (issue 8).
LAYER = ["--preset", "llama2-7b", "--gen=--layers=1", "--gen=--blocks-only",
         "--gen=--seq=4096", "--gen=--batch=1", "--gen=--dtype=bf16"]
UNFUSED = "fuse-attention=false"


class Model:
    """A model of the bundle: models/NAME/tpN for each N of `tps`.

    check: what its outputs are compared with: "ref" (its CPU tp=1 outputs,
    ref/NAME.bin, computed by --prepare), the name of another model (that
    model's tp=1 output of the same run, on the device), or "" (timed
    only). lower: tp-run's --lower-gpu-options. timeouts: seconds for tp=1
    and for tp > 1 (cuda-shared). run: tp-runner's arguments beyond
    --backend and --output. attention: (heads, seq, head_dim), a model
    that is causal attention alone (bf16, batch 1; Q, K and V its inputs),
    written by --prepare (gpu_check_prepare.attention_mlir) instead of
    tp-run's `args`; its stages report TFLOP/s over the flops its mask
    keeps (attention_flops). masks: the arguments of
    utils/masked_attention.py, a model that is one masked attention as
    torch-mlir exports Hugging Face's (written by --prepare).
    """

    def __init__(self, name, args, tps, tiny=(), check="", tol=1e-5,
                 lower="", timeouts=(20, 30), run=(), attention=None,
                 masks=None):
        self.name, self.args, self.tps, self.tiny = name, args, tps, tiny
        self.check, self.tol, self.lower = check, tol, lower
        self.timeouts, self.run = timeouts, list(run)
        self.attention = attention
        self.masks = masks
        self.flops = attention_flops(*attention) if attention else 0

    def lower_args(self):
        return ["--lower-gpu-options=" + self.lower] if self.lower else []


def attention_flops(heads, seq, dim, batch=1):
    """The flops of causal attention: 2 d for Q K^T and 2 d for P V per
    (query, key) pair the mask keeps, seq (seq + 1) / 2 of them per head
    (the count tp-fuse-attention gives the cost report, and the
    convention of FlashAttention's benchmarks up to the diagonal)."""
    return 4.0 * batch * heads * dim * seq * (seq + 1) / 2


# What the first minute checks, before anything else: the tensor-core
# attention where it is most likely wrong (issue 39), against the CPU
# program. One bf16 attention of 200 tokens (4 key tiles, the last partial)
# at head_dim 128, 4 query heads sharing 2 KV heads inside each block (the
# KV-head sharing tp-gen's models never exercise: they expand K and V per
# query head), a sliding window of 40 keys filled with finfo(bf16).min
# (every query past 104 starts with a fully masked tile), and a batch of 2
# whose second element has 70 tokens of left padding (its first 70 queries
# masked entirely: the mean of V over all keys).
MASKS = ["--dtype", "bf16", "--batch", "2", "--heads", "4", "--kv-heads", "2",
         "--seq", "200", "--head-dim", "128", "--mask", "window",
         "--window", "40", "--pad", "left", "--pad-len", "70"]

# The GELU epilogue's tolerance: cuBLASLt documents CUBLASLT_EPILOGUE_GELU
# only as "apply GELU point-wise transform to the results" (cuBLAS 13,
# cublasLtEpilogue_t): neither the formula (tanh or erf form) nor an
# accuracy. The models compute the tanh form; the two forms differ by up to
# 4.7e-4 (at |x| near 2), so a model whose GELU is cuBLASLt's epilogue
# (gpt2-f32: c_fc + bias + GELU) is compared at 1e-3, and the same model
# with gemm-epilogues=false (the GELU a kernel of ours, everything else as
# before) at f32's 1e-5: a failure of the first alone is cuBLASLt's GELU.
GELU_EPILOGUE_TOL = 1e-3

# The models checked against their CPU reference or another model's output,
# in the order their stages run (plan()).
MODELS = [
    Model("attention-masks", [], (1,), tiny=(1,), check="ref", tol=2e-2,
          lower="attention=tensor-core", masks=MASKS),
    Model("gpt2-f32", TINY + ["--gen=--model=gpt2"], (1, 2, 4), tiny=(1, 2),
          check="ref", tol=GELU_EPILOGUE_TOL),
    Model("gpt2-f32-no-epilogues", TINY + ["--gen=--model=gpt2"], (1,),
          tiny=(1,), check="ref", lower="gemm-epilogues=false"),
    Model("gpt2-f32-unfused", TINY + ["--gen=--model=gpt2"], (1,),
          tiny=(1,), check="gpt2-f32", lower=UNFUSED),
    Model("llama-f32", TINY + ["--gen=--model=llama"], (1, 2, 4),
          check="ref"),
    Model("llama-bf16", TINY + ["--gen=--model=llama", "--gen=--dtype=bf16"],
          (1, 2), check="ref", tol=2e-2),
    Model("llama-mid-f32", MID, (1, 2, 4, 8), check="ref",
          timeouts=(30, 60)),
    # Attention alone, small enough for the CPU reference and the
    # emulator: 2 heads of 16, 64 tokens, the tensor-core kernel against
    # the CPU, and unfused against it.
    Model("attention-small", [], (1,), tiny=(1,), check="ref", tol=2e-2,
          attention=(2, 64, 16)),
    Model("attention-small-unfused", [], (1,), tiny=(1,),
          check="attention-small", tol=2e-2, lower=UNFUSED,
          attention=(2, 64, 16)),
]

# The 7B layer (too large for a CPU reference): timed at tp = 1, 2, 4, 8,
# and its attention unfused at tp=1, compared with the fused run's output.
LAYER_MODELS = [
    Model("llama7b-layer", LAYER, (1, 2, 4, 8), timeouts=(60, 90),
          run=["--warmup", "2", "--steps", "5"]),
    Model("llama7b-layer-unfused", LAYER, (1,), check="llama7b-layer",
          tol=2e-2, lower=UNFUSED, timeouts=(60, 0),
          run=["--warmup", "1", "--steps", "3"]),
]

# The 7B layer's attention alone (bf16, batch 1, 32 heads, 4096 tokens,
# head_dim 128, causal; Q, K, V [1, 4096, 32, 128] as the layer lays them
# out): the tensor-core kernel timed, then unfused (two batched GEMMs
# around the [32, 4096, 4096] f32 scores and the softmax kernel) compared
# with its output. torch-llama-layer times PyTorch's
# scaled_dot_product_attention on the same shapes.
ATTENTION_MODELS = [
    Model("attention7b", [], (1,), timeouts=(30, 0),
          run=["--warmup", "3", "--steps", "20"], attention=(32, 4096, 128)),
    Model("attention7b-unfused", [], (1,), check="attention7b", tol=2e-2,
          lower=UNFUSED, timeouts=(30, 0), run=["--warmup", "1", "--steps", "5"],
          attention=(32, 4096, 128)),
]

# PyTorch baselines that --prepare copies into bench/ and --run starts.
BENCH_SCRIPTS = ["torch_llama_layer.py", "torch_gemm_shapes.py"]


def die(message, code=1):
    print("gpu-check: " + message, file=sys.stderr)
    sys.exit(code)


# ---------------------------------------------------------------------------
# Outputs and their comparison
# ---------------------------------------------------------------------------

# tp-runner's --output records (docs/model-abi.md): dtype code -> (bytes,
# struct format; bf16 is widened by hand).
DTYPES = {0: (4, "f"), 1: (2, "e"), 2: (2, None), 3: (8, "d"), 4: (4, "i"),
          5: (8, "q"), 6: (1, "b"), 7: (1, "B")}


def read_outputs(path):
    """[(dtype, shape, values)] of a tp-runner output file; values a numpy
    float64 array when numpy is there (the GPU machine), else a list."""
    try:
        import numpy
    except ImportError:
        numpy = None
    data = open(path, "rb").read()
    at, out = 0, []
    while at < len(data):
        if len(data) - at < 12:
            raise ValueError("%s: a truncated record at byte %d" % (path, at))
        magic, dtype, rank = struct.unpack_from("<III", data, at)
        at += 12
        if magic != 0x54504F55 or dtype not in DTYPES:
            raise ValueError("%s is not a tp-runner output file" % path)
        shape = struct.unpack_from("<%dq" % rank, data, at)
        at += 8 * rank
        n = 1
        for s in shape:
            n *= s
        size, code = DTYPES[dtype]
        raw = data[at:at + n * size]
        at += n * size
        if len(raw) != n * size:
            raise ValueError("%s: a truncated record" % path)
        if numpy is not None:
            if dtype == 2:
                v = (numpy.frombuffer(raw, "<u2").astype("<u4") << 16).view("<f4")
            else:
                v = numpy.frombuffer(raw, "<" + code)
            values = v.astype(numpy.float64)
        elif dtype == 2:
            values = [struct.unpack("<f", b"\0\0" + raw[i:i + 2])[0]
                      for i in range(0, len(raw), 2)]
        else:
            values = list(struct.unpack("<%d%s" % (n, code), raw))
        out.append((dtype, tuple(shape), values))
    return out


def compare(got_path, ref_path, tol):
    """(ok, message): every output's largest absolute error over its largest
    reference magnitude at most `tol`; the message also gives the RMS error
    over the RMS of the reference and where the largest error is."""
    try:
        got, ref = read_outputs(got_path), read_outputs(ref_path)
    except (OSError, ValueError) as e:
        return False, "FAIL: %s" % e
    if len(got) != len(ref):
        return False, "FAIL: %d outputs, the reference has %d" % (len(got), len(ref))
    worst, notes = 0.0, []
    for i, ((_, gshape, g), (_, rshape, r)) in enumerate(zip(got, ref)):
        if gshape != rshape:
            return False, "FAIL: output %d has shape %s, the reference %s" % (
                i, list(gshape), list(rshape))
        if hasattr(g, "shape"):
            import numpy
            diff = numpy.abs(g - r)
            finite = bool(numpy.isfinite(g).all())
            at = int(numpy.argmax(diff)) if diff.size else 0
            err = float(diff.max()) if diff.size else 0.0
            scale = float(numpy.abs(r).max()) if r.size else 0.0
            rms_err = float(numpy.sqrt((diff ** 2).mean())) if diff.size else 0.0
            rms_ref = float(numpy.sqrt((r ** 2).mean())) if r.size else 0.0
        else:
            diffs = [abs(a - b) for a, b in zip(g, r)]
            finite = all(v == v and abs(v) != float("inf") for v in g)
            at = max(range(len(diffs)), key=diffs.__getitem__) if diffs else 0
            err = diffs[at] if diffs else 0.0
            scale = max((abs(b) for b in r), default=0.0)
            n = max(len(r), 1)
            rms_err = (sum(d * d for d in diffs) / n) ** 0.5
            rms_ref = (sum(b * b for b in r) / n) ** 0.5
        rel = err / scale if scale > 0 else err
        if not finite or rel != rel:
            return False, "FAIL: output %d has values that are not finite" % i
        index, rest = [], at
        for s in reversed(gshape):
            index.append(rest % s)
            rest //= s
        where = "[%s]" % ",".join(str(v) for v in reversed(index))
        notes.append("output %d: max error %.3e at %s, rms %.3e of rms %.3e" % (
            i, rel, where, rms_err / rms_ref if rms_ref > 0 else rms_err,
            rms_ref))
        if rel > tol:
            return False, "FAIL: output %d: relative error %.3e > %.0e (%s)" % (
                i, rel, tol, notes[-1])
        worst = max(worst, rel)
    return True, "ok: %d outputs, max relative error %.3e (limit %.0e); %s" % (
        len(got), worst, tol, "; ".join(notes))


# ---------------------------------------------------------------------------
# --run: the stages
# ---------------------------------------------------------------------------

class Stage:
    """One step of --run.

    group: "gpu" (one rank) or "shared" (ranks under mpirun, after every
    "gpu" stage). cmds: argv lists run one after the other (each stage's
    log has them all). judge(run, stage, log) -> (status, detail) when every
    command exited 0. gpu: needs a GPU; needs: "torch" or "sanitizer" (else
    SKIP saying which is missing). output: the --output file, for the
    comparisons. machine_env: run with the caller's environment (Python),
    not the bundle's library path.
    """

    def __init__(self, name, group, timeout, cmds, judge, gpu=True,
                 needs="", output="", machine_env=False):
        self.name, self.group, self.timeout = name, group, timeout
        self.cmds, self.judge, self.gpu = cmds, judge, gpu
        self.needs, self.output, self.machine_env = needs, output, machine_env


def first_line(log, pattern):
    """The first line of LOG matching PATTERN (commands excluded)."""
    for line in log.splitlines():
        if not line.startswith("+ ") and re.search(pattern, line):
            return line.strip()
    return ""


def why(log):
    """The line of a failed stage's log that says what failed."""
    line = first_line(log, r"tp-runner:|tprt|rror|failed|FAIL|Killed|Abort")
    if line:
        return line
    lines = [l for l in log.splitlines()
             if l.strip() and not l.startswith(("+ ", "---"))]
    return lines[-1].strip() if lines else "no output"


def grep(log, pattern):
    return " ".join(l.strip() for l in log.splitlines()
                    if re.match(pattern, l))


def number(pattern, text):
    m = re.search(pattern, text, re.M)
    return float(m.group(1)) if m else None


def judge_conformance(run, stage, log):
    line = first_line(log, r"^tprt-conformance: .* checks")
    return ("PASS", line) if line else ("FAIL", "no summary line")


def judge_timing(run, stage, log):
    if not re.search(r"^time per step: ", log, re.M):
        return "FAIL", "no time per step in the log"
    return "PASS", grep(log, r"^(time per step|throughput|communication:)")


def judge_against(check, tol):
    """Compare the stage's output with a reference file or another stage's
    output (check: "ref:PATH" or "stage:NAME")."""
    def judge(run, stage, log):
        kind, what = check.split(":", 1)
        if kind == "stage":
            other = run.stage(what)
            ref = other.output if other else ""
            if not ref or run.status.get(what) != "PASS":
                return "FAIL", "no output of %s to compare with (%s)" % (
                    what, run.status.get(what, "not run"))
        else:
            ref = what
        ok, message = compare(stage.output, ref, tol)
        t = grep(log, r"^time per step")
        if kind == "stage":
            message += "; against %s" % what
        if not ok:
            run.keep.append(stage.output)
        return ("PASS" if ok else "FAIL"), message + ("; " + t if t else "")
    return judge


def judge_gemm(flops):
    def judge(run, stage, log):
        t = number(r"^time per step: ([0-9.eE+-]+) s", log)
        if not t:
            return "FAIL", "no time per step"
        return "PASS", "%.6g s per GEMM, %.1f TFLOP/s" % (t, flops / t / 1e12)
    return judge


def with_rate(judge, flops):
    """`judge`, its detail followed by the rate of `flops` per time per
    step (a model that is one attention: TFLOP/s over the causal flops)."""
    def rated(run, stage, log):
        status, detail = judge(run, stage, log)
        t = number(r"^time per step: ([0-9.eE+-]+) s", log)
        if t:
            detail += "; %.4g TFLOP/s over %.4g GFLOP" % (flops / t / 1e12,
                                                          flops / 1e9)
        return status, detail
    return rated


def judge_lines(pattern, count=False):
    def judge(run, stage, log):
        lines = [l for l in log.splitlines() if re.match(pattern, l)]
        if not lines:
            return "FAIL", "no line matching %s" % pattern
        return "PASS", ("%d shapes" % len(lines)) if count else " ".join(lines)
    return judge


def judge_sanitizer(run, stage, log):
    summaries = re.findall(r"^=+ (?:ERROR|RACECHECK) SUMMARY: .*$", log, re.M)
    if len(summaries) < 3:
        return "FAIL", "%d of the 3 tools printed a summary" % len(summaries)
    return "PASS", "; ".join(s.strip("= ") for s in summaries)


def judge_collectives(run, stage, log):
    """The largest size's row of tprt-bench's table."""
    rows = [l.split() for l in log.splitlines()
            if len(l.split()) == 5 and l.split()[0].isdigit()]
    if not rows:
        return "FAIL", "no row in tprt-bench's table"
    size, _, us, _, busbw = rows[-1]
    return "PASS", "%g MiB all_reduce: %s us per call, busbw %s GB/s" % (
        int(size) / 2**20, us, busbw)


def plan(run):
    """The stages of the bundle in the order they run: every stage of one
    rank, then every stage of several ranks (cuda-shared, under mpirun).
    Add a stage here, with the timeout it needs.

    Timeouts: at least 3 times the stage's time under the emulator
    (GPU_CHECK_ASSUME_GPU=1 with tp-run's cuda-emu libraries, on 2 cores:
    tiny models 0.5-0.7 s at tp=1 and 2-3 s at tp = 2, 4; the mid-size
    model 6, 11, 15 and 20 s at tp = 1, 2, 4, 8; the conformance suite 0.6 s
    on one rank, 3.4 s on 2 and 4) and at least 20 s for a GPU context, NCCL
    and cuBLAS to start. The 7B layer, the GEMMs and PyTorch are too large
    for the emulator: their timeouts allow several times the host-side
    initialisation of their weights (200 M bf16 values for the layer)."""
    d = run.dir
    have = lambda name, tp: os.path.isdir(os.path.join(d, "models", name, "tp%d" % tp))
    runner = os.path.join(d, "bin", "tp-runner")
    conformance = os.path.join(d, "bin", "tprt-conformance")
    bench = os.path.join(d, "bin", "tprt-bench")
    python = [sys.executable or "python3"]
    single, shared = [], []

    def model_stage(model, tp, label=None, run_args=None):
        name = label or "%s-tp%d" % (model.name, tp)
        # An output to compare, or one another model is compared with.
        compared = model.check or (tp == 1 and not label and any(
            m.check == model.name for m in MODELS + LAYER_MODELS +
            ATTENTION_MODELS))
        out = os.path.join(run.work, name + ".bin") if compared else ""
        argv = [runner, os.path.join(d, "models", model.name, "tp%d" % tp)]
        argv += ["--backend", "nccl" if tp == 1 else "cuda-shared"]
        argv += model.run if run_args is None else run_args
        argv += ["--output", out] if out else []
        timeout = model.timeouts[0 if tp == 1 else 1]
        if model.check == "ref":
            judge = judge_against("ref:" + os.path.join(d, "ref", model.name + ".bin"), model.tol)
        elif model.check:
            judge = judge_against("stage:%s-tp1" % model.check, model.tol)
        else:
            judge = judge_timing
        if model.flops:
            judge = with_rate(judge, model.flops)
        if tp == 1:
            return Stage(name, "gpu", timeout, [argv], judge, output=out)
        return Stage(name, "shared", timeout, [run.mpirun(tp) + argv], judge,
                     output=out)

    # One rank. The bundle loads (no GPU needed); the conformance suite on
    # the nccl backend; the models against their references.
    single.append(Stage("bundle-load", "gpu", 20, [[conformance, "single"]],
                        judge_conformance, gpu=False))
    single.append(Stage("conformance-nccl-np1", "gpu", 20,
                        [[conformance, "nccl"]], judge_conformance))
    single += [model_stage(m, 1) for m in MODELS if have(m.name, 1)]
    # compute-sanitizer's memcheck, racecheck and synccheck on a tiny model.
    if have("gpt2-f32", 1):
        argv = [runner, os.path.join(d, "models", "gpt2-f32", "tp1"),
                "--backend", "nccl"]
        single.append(Stage(
            "sanitizer-gpt2-f32-tp1", "gpu", 90,
            [[run.sanitizer or "compute-sanitizer", "--tool", tool,
              "--error-exitcode", "97", "--print-limit", "20",
              "--report-api-errors", "no"] + argv
             for tool in ("memcheck", "racecheck", "synccheck")],
            judge_sanitizer, needs="sanitizer"))
    # The 7B layer at tp=1: timed with its fused attention, then unfused
    # and compared with the fused run's output.
    single += [model_stage(m, 1) for m in LAYER_MODELS if have(m.name, 1)]
    # Its attention alone: the tensor-core kernel timed, then unfused and
    # compared with it (TFLOP/s over the causal flops; PyTorch's SDPA on the
    # same shapes in torch-llama-layer).
    single += [model_stage(m, 1) for m in ATTENTION_MODELS if have(m.name, 1)]
    # The GEMMs of the layer (its shared-A calls as such: one call of S
    # products of one activation) and the 8192^3 GEMM through the runtime.
    shapes = os.path.join(d, "bench", "gemm-shapes.txt")
    for b, m, n, k, s in gemm_shapes(shapes):
        name = gemm_name(b, m, n, k, s)
        if have(name, 1):
            single.append(Stage(
                name, "gpu", 20,
                [[runner, os.path.join(d, "models", name, "tp1"), "--backend",
                  "nccl", "--warmup", "3", "--steps", "20"]],
                judge_gemm(2.0 * b * m * n * k * s)))
    # PyTorch on the same GPU: the layer (eager, SDPA) and the GEMM shapes.
    if have("llama7b-layer", 1):
        single.append(Stage(
            "torch-llama-layer", "gpu", 90,
            [python + [os.path.join(d, "bench", "torch_llama_layer.py")]],
            judge_lines(r"^(eager|sdpa|attention|gemm):"), needs="torch",
            machine_env=True))
    if os.path.exists(shapes):
        single.append(Stage(
            "torch-gemm-shapes", "gpu", 60,
            [python + [os.path.join(d, "bench", "torch_gemm_shapes.py"), shapes]],
            judge_lines(r"^shape ", count=True), needs="torch",
            machine_env=True))

    # Several ranks on the one GPU (cuda-shared, under mpirun): the
    # launcher (no GPU needed), the conformance suite, the models at tp > 1.
    shared.append(Stage("bundle-mpi", "shared", 20,
                        [run.mpirun(2) + [conformance, "mpi"]],
                        judge_conformance, gpu=False))
    for n in (2, 4):
        shared.append(Stage("conformance-cuda-shared-np%d" % n, "shared", 30,
                            [run.mpirun(n) + [conformance, "cuda-shared"]],
                            judge_conformance))
    shared += [model_stage(m, tp) for m in MODELS for tp in m.tps
               if tp > 1 and have(m.name, tp)]
    # The tp=N programs of the 7B layer, their N ranks on the one GPU:
    # per-rank compute is estimated as (time per step - communication) / N.
    for tp in (8, 2, 4):
        if have("llama7b-layer", tp):
            shared.append(model_stage(LAYER_MODELS[0], tp,
                                      "llama7b-layer-tp%d-shared" % tp,
                                      run_args=["--warmup", "1", "--steps", "3"]))
    # Collective time per call: tprt-bench on cuda-shared ranks, for the
    # layer's all-reduce sizes (1 to 32 MiB of bf16, 10 calls each) where
    # the layer is in the bundle, else 1 MiB twice (the bench runs).
    sizes = (["-e", "32M", "-w", "2", "-n", "10"] if have("llama7b-layer", 1)
             else ["-e", "1M", "-w", "1", "-n", "2"])
    if os.path.exists(bench):
        for n in (2, 8):
            shared.append(Stage(
                "collectives-cuda-shared-np%d" % n, "shared", 60,
                [run.mpirun(n) + [bench, "cuda-shared", "-c", "all_reduce", "-d",
                                  "bf16", "-b", "1M", "-f", "2"] + sizes],
                judge_collectives))
    return single + shared


def gemm_shapes(path):
    """The GEMM shapes of a bundle's gemm-shapes.txt (the 7B layer's, from
    its cost reports), then 8192^3 (the chip's GEMM rate): (batch, M, N, K,
    S) per line "B M N K [S]", S the products of one shared-A call (one
    activation times S weights of K x N; 1, the default, a plain call)."""
    shapes = []
    if os.path.exists(path):
        for l in open(path).read().splitlines():
            if l.strip():
                v = [int(x) for x in l.split()]
                shapes.append(tuple(v + [1] * (5 - len(v))))
    big = (1, 8192, 8192, 8192, 1)
    return shapes + [big] * (big not in shapes)


def gemm_name(b, m, n, k, s=1):
    """The model and stage name of a GEMM shape: gemm-BxMxNxK, or
    gemm-sharedS-MxNxK for a shared-A call of S products."""
    if s > 1:
        return "gemm-shared%d-%dx%dx%d" % (s, m, n, k)
    return "gemm-%dx%dx%dx%d" % (b, m, n, k)


# ---------------------------------------------------------------------------
# --run: the machine and the runner
# ---------------------------------------------------------------------------

def descendants(pid):
    """Every process below `pid` (from /proc), and every process of the
    session `pid` leads (a stage runs in a session of its own: ranks that a
    dying mpirun left behind, reparented, are still in it)."""
    children, found = {}, set()
    for stat in glob.glob("/proc/[0-9]*/stat"):
        try:
            text = open(stat).read()
            fields = text[text.rindex(")") + 2:].split()
            child = int(stat.split("/")[2])
            children.setdefault(int(fields[1]), []).append(child)
            if int(fields[3]) == pid and child != pid:
                found.add(child)
        except (OSError, ValueError, IndexError):
            pass
    todo = [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            found.add(c)
            todo.append(c)
    return sorted(found)


def alive(pid):
    """Whether `pid` runs (a zombie does not)."""
    try:
        text = open("/proc/%d/stat" % pid).read()
        return text[text.rindex(")") + 2] != "Z"
    except (OSError, ValueError, IndexError):
        return False


def kill_tree(proc):
    """SIGTERM to the process, its group and everything below it (mpirun's
    ranks too, even once mpirun is gone); SIGKILL to what is left after 5 s."""
    pids = {proc.pid}
    for sig in (signal.SIGTERM, signal.SIGKILL):
        pids |= set(descendants(proc.pid))
        for pid in pids:
            try:
                os.kill(pid, sig)
            except OSError:
                pass
        try:
            os.killpg(proc.pid, sig)
        except OSError:
            pass
        deadline = time.time() + 5
        while time.time() < deadline:
            proc.poll()
            # Processes forked while the signal went out count too.
            pids |= set(descendants(proc.pid))
            for pid in pids:
                if alive(pid):
                    try:
                        os.kill(pid, sig)
                    except OSError:
                        pass
            if not any(alive(p) for p in pids):
                proc.wait()
                return
            time.sleep(0.1)
    proc.wait()


class Stopped(Exception):
    """gpu-check itself got SIGINT or SIGTERM."""


# While a stage's process starts, a stop is kept for after (`proc` must be
# known to kill its tree): the signal's name, or "" while starting.
STARTING = None


def stop(signum, frame):
    global STARTING
    # One stop: `timeout` signals the process and then its group, so a
    # second SIGTERM may follow at once; it must not interrupt kill_tree.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if STARTING is not None:
        STARTING = signal.Signals(signum).name
        return
    raise Stopped(signal.Signals(signum).name)


class Run:
    def __init__(self, args):
        self.args = args
        self.dir = os.path.abspath(args.run)
        self.outdir = os.path.abspath(args.out or self.dir)
        self.work = os.path.join(self.dir, "run")
        self.budget = float(os.environ.get("GPU_CHECK_BUDGET", DEFAULT_BUDGET))
        self.start = time.time()
        self.status, self.results, self.keep = {}, [], []
        self.header = []
        self.stages = []
        self.gpu = True
        self.assumed = ""
        self.launcher = None
        self.sanitizer = None
        self.torch = None
        self.overrides = {}
        for item in args.timeout or []:
            name, _, seconds = item.partition("=")
            try:
                self.overrides[name] = float(seconds)
            except ValueError:
                die("--timeout %s: expected NAME=SECONDS" % item, 2)

    def stage(self, name):
        return next((s for s in self.stages if s.name == name), None)

    def left(self):
        return self.budget - (time.time() - self.start)

    def say(self, line):
        print(line, flush=True)
        if not self.args.dry_run:
            self.header.append(line)
            with open(os.path.join(self.outdir, "results.txt"), "a") as f:
                f.write(line + "\n")

    def mpirun(self, n):
        return [self.launcher or "mpirun", "--oversubscribe", "--mca", "btl",
                "self,vader", "--mca", "pml", "ob1", "--mca",
                "btl_vader_single_copy_mechanism", "none", "--mca",
                "mca_base_component_show_load_errors", "0", "-np", str(n)]

    # The machine -----------------------------------------------------------

    def setup(self):
        d = self.dir
        # Executable bits (a transfer may drop them), then what --prepare
        # gzipped.
        for pattern in ("bin/*", "mpi/bin/*", "gpu-check.sh", "gpu_check.py"):
            for f in glob.glob(os.path.join(d, pattern)):
                if os.path.isfile(f) and not os.path.islink(f):
                    os.chmod(f, os.stat(f).st_mode | 0o755)
        for gz in glob.glob(os.path.join(d, "deps", "*.gz")):
            with gzip.open(gz) as src, open(gz[:-3], "wb") as dst:
                shutil.copyfileobj(src, dst)
        self.orig_ld = os.environ.get("LD_LIBRARY_PATH", "")
        # The launcher: the bundle's Open MPI (the build its libraries come
        # from), relocated with OPAL_PREFIX; else the machine's mpirun.
        bundled = os.path.join(d, "mpi", "bin", "orterun")
        if os.path.exists(bundled):
            self.launcher = bundled
        else:
            self.launcher = shutil.which("mpirun")
        # The bundled libraries the machine lacks (by soname), in
        # deps-used/; with the bundle's launcher, all of Open MPI's (plugins
        # and libraries must be one build).
        ldconfig = shutil.which("ldconfig") or next(
            (p for p in ("/sbin/ldconfig", "/usr/sbin/ldconfig")
             if os.path.exists(p)), None)
        cache = subprocess.run([ldconfig, "-p"], capture_output=True,
                               text=True).stdout if ldconfig else ""
        known = set(re.findall(r"^\s*(\S+) \(", cache, re.M))
        used = os.path.join(d, "deps-used")
        shutil.rmtree(used, ignore_errors=True)
        os.makedirs(used)
        missing = []
        for dep in sorted(glob.glob(os.path.join(d, "deps", "*"))):
            base = os.path.basename(dep)
            if base.endswith(".gz"):
                continue
            ompi = base.startswith(("libmpi.so", "libopen-", "libmca_common",
                                    "libpmix", "liboshmem"))
            if base in known and not (ompi and self.launcher == bundled):
                continue
            os.symlink(dep, os.path.join(used, base))
            missing.append(base)
        # The library path: the bundle's, the caller's, then the driver,
        # cuBLAS and NCCL that ldconfig knows, then PyTorch's nvidia/*.
        paths = [os.path.join(d, "lib"), used]
        paths += [p for p in self.orig_ld.split(":") if p]
        for want in ("libcuda.so.1", "libcublas.so", "libcublasLt.so",
                     "libnccl.so.2"):
            m = re.search(r"^\s*%s\S* \(.*=> (\S+)$" % re.escape(want), cache, re.M)
            if m and os.path.dirname(m.group(1)) not in paths:
                paths.append(os.path.dirname(m.group(1)))
        site = subprocess.run(
            [sys.executable, "-c",
             "import site; print('\\n'.join(site.getsitepackages() + "
             "[site.getusersitepackages()]))"],
            capture_output=True, text=True).stdout.split()
        for root in site:
            for lib in sorted(glob.glob(os.path.join(root, "nvidia", "*", "lib*"))):
                if os.path.isdir(lib) and lib not in paths:
                    paths.append(lib)
        # The driver: on that path, in ldconfig's cache, or where
        # containers mount it (then its folder joins the path).
        driver = ""
        for p in paths + DRIVER_DIRS:
            if os.path.exists(os.path.join(p, "libcuda.so.1")):
                driver = os.path.join(p, "libcuda.so.1")
                break
        if not driver and "libcuda.so.1" in known:
            driver = re.search(r"libcuda\.so\.1 \(.*=> (\S+)", cache).group(1)
        if driver and os.path.dirname(driver) not in paths:
            paths.append(os.path.dirname(driver))
        self.env = dict(os.environ)
        self.env["LD_LIBRARY_PATH"] = ":".join(paths)
        self.env.update(OMPI_ALLOW_RUN_AS_ROOT="1",
                        OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        if self.launcher == bundled:
            self.env["OPAL_PREFIX"] = os.path.join(d, "mpi")
            self.env["PATH"] = os.path.join(d, "mpi", "bin") + ":" + self.env.get("PATH", "")
        self.machine_env = dict(os.environ, PYTHONUNBUFFERED="1")

        self.say("# gpu-check --run %s, %s on %s" % (
            d, time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            os.uname().nodename))
        self.say("library path: %s" % self.env["LD_LIBRARY_PATH"])
        self.say("bundled libraries used: %s" % (
            " ".join(missing) or "none (the machine has them all)"))
        if self.launcher == bundled:
            self.say("mpirun: the bundle's (%s)" % os.path.join(d, "mpi"))
        else:
            self.say("mpirun: %s" % (self.launcher or "none"))

        # The GPU: nvidia-smi lists one (and a driver is there).
        smi = shutil.which("nvidia-smi")
        listed = smi and self.capture([smi, "-L"]).find("GPU") >= 0
        if listed:
            smi_text = self.capture([smi])
            for line in smi_text.rstrip().splitlines():
                self.say(line)
            self.machine = {"nvidia-smi": smi_text,
                            "start": self.query_gpu(smi)}
        else:
            self.gpu = False
            self.machine = {}
            self.say("no GPU: nvidia-smi is missing or lists no GPU")
        if not driver and listed:
            self.say("libcuda.so.1 is in none of the library folders or %s; "
                     "the GPU stages will say whether the loader finds it"
                     % " ".join(DRIVER_DIRS))
        elif not driver:
            self.gpu = False
            self.say("no GPU: no NVIDIA driver (libcuda.so.1 not found)")
        if self.args.dry_run:
            self.gpu = True
            self.say("dry run: the stages a GPU machine would run, none run")
        elif not self.gpu and os.environ.get("GPU_CHECK_ASSUME_GPU") == "1":
            self.gpu = True
            self.assumed = driver or "none"
            self.say("GPU_CHECK_ASSUME_GPU=1: running the GPU stages anyway "
                     "(libcuda.so.1: %s)" % self.assumed)
        self.say("driver: %s" % (driver or "none"))
        # The tools some stages need.
        self.sanitizer = shutil.which("compute-sanitizer") or next(
            iter(sorted(glob.glob("/usr/local/cuda*/bin/compute-sanitizer") +
                        glob.glob("/usr/local/cuda*/compute-sanitizer/compute-sanitizer") +
                        glob.glob("/opt/nvidia/*/compute-sanitizer"))), None)

    def capture(self, argv):
        try:
            return subprocess.run(argv, capture_output=True, text=True,
                                  timeout=30).stdout
        except (OSError, subprocess.SubprocessError):
            return ""

    def query_gpu(self, smi):
        """The GPU's name, driver, clocks, power and memory now."""
        fields = ("name,driver_version,pstate,clocks.sm,clocks.max.sm,"
                  "clocks.mem,clocks.max.mem,power.draw,power.limit,"
                  "temperature.gpu,memory.used,memory.total")
        text = self.capture([smi, "--query-gpu=" + fields,
                             "--format=csv,noheader"])
        values = [v.strip() for v in text.strip().splitlines()[0].split(",")] if text.strip() else []
        return dict(zip(fields.split(","), values))

    # The stages ----------------------------------------------------------

    def skip_reason(self, stage, shared_timeout):
        if stage.gpu and not self.gpu:
            return "no GPU"
        if stage.needs == "torch" and not self.args.dry_run:
            if self.torch is None:
                self.torch = subprocess.run(
                    [sys.executable, "-c", "import torch"],
                    capture_output=True, env=self.machine_env).returncode == 0
            if not self.torch:
                return "no PyTorch"
        if stage.needs == "sanitizer" and not self.sanitizer and not self.args.dry_run:
            return "no compute-sanitizer"
        if stage.group == "shared" and not self.launcher:
            return "no mpirun (neither the machine's nor the bundle's)"
        if stage.group == "shared" and shared_timeout:
            return ("not started: %s timed out on the shared mpirun path, "
                    "which may hang again" % shared_timeout)
        return ""

    def execute(self, stage):
        """Runs the stage's commands under its timeout: (status, detail)."""
        timeout = self.overrides.get(stage.name, stage.timeout)
        clipped = min(timeout, self.left())
        if self.left() < 5:
            return "SKIP", "out of time: %.0f s of the %.0f s budget spent" % (
                time.time() - self.start, self.budget)
        log_path = os.path.join(self.work, stage.name + ".log")
        env = self.machine_env if stage.machine_env else self.env
        began = time.time()
        rc = 0
        with open(log_path, "w") as log:
            for argv in stage.cmds:
                log.write("+ %s\n" % " ".join(argv))
                log.flush()
                # A stop while the stage starts waits until `proc` is known
                # (else its process tree would be left running).
                global STARTING
                STARTING = ""
                try:
                    proc = subprocess.Popen(argv, stdout=log,
                                            stderr=subprocess.STDOUT, env=env,
                                            start_new_session=True)
                except OSError as e:
                    log.write("gpu-check: cannot start %s: %s\n" % (argv[0], e))
                    rc = 127
                    break
                finally:
                    pending, STARTING = STARTING, None
                try:
                    if pending:
                        raise Stopped(pending)
                    rc = proc.wait(max(clipped - (time.time() - began), 0.1))
                except subprocess.TimeoutExpired:
                    kill_tree(proc)
                    rc = None
                except Stopped:
                    # The stage runs in its own session: a signal to
                    # gpu-check does not reach it.
                    kill_tree(proc)
                    stage.seconds = time.time() - began
                    raise
                if rc != 0:
                    break
        stage.seconds = time.time() - began
        text = open(log_path, errors="replace").read()
        if rc is None:
            cause = ("its %.0f s timeout" % timeout if clipped >= timeout else
                     "the end of the budget (%.0f s of its %.0f s timeout)" % (
                         clipped, timeout))
            return "TIMEOUT", "killed at %s; log: %s" % (cause, why(text))
        if rc != 0:
            if stage.output and os.path.exists(stage.output):
                self.keep.append(stage.output)
            return "FAIL", "exit %d: %s" % (rc, why(text))
        return stage.judge(self, stage, text)

    def record(self, stage, status, detail):
        self.status[stage.name] = status
        seconds = getattr(stage, "seconds", None)
        self.results.append({"stage": stage.name, "group": stage.group,
                             "status": status, "detail": detail,
                             "seconds": seconds,
                             "timeout": self.overrides.get(stage.name, stage.timeout)})
        self.say("stage %s: %s%s%s" % (
            stage.name, status,
            " [%.1f s]" % seconds if seconds is not None else "",
            " (%s)" % detail if detail else ""))
        self.write_out()

    def main(self):
        if not os.path.isdir(self.dir):
            die("no folder %s" % self.dir)
        if not os.path.exists(os.path.join(self.dir, "MANIFEST")):
            die("%s has no MANIFEST (make it with --prepare)" % self.dir)
        if not self.args.dry_run:
            os.makedirs(self.outdir, exist_ok=True)
            for f in OUT_FILES:
                if os.path.exists(os.path.join(self.outdir, f)):
                    os.remove(os.path.join(self.outdir, f))
            shutil.rmtree(self.work, ignore_errors=True)
            os.makedirs(self.work)
        self.setup()
        self.stages = plan(self)
        selected = self.stages
        if self.args.only:
            patterns = self.args.only.split(",")
            selected = [s for s in self.stages
                        if any(fnmatch.fnmatch(s.name, p) for p in patterns)]
            if not selected:
                die("--only %s names no stage of this bundle" % self.args.only, 2)
        unknown = [n for n in self.overrides if not self.stage(n)]
        if unknown:
            die("--timeout: no stage %s in this bundle" % ", ".join(unknown), 2)
        if self.args.dry_run:
            return self.dry_run(selected)
        self.say("stages: %d, %.0f s of timeouts in all; the run stops "
                 "starting stages after %.0f s (GPU_CHECK_BUDGET)" % (
                     len(selected), sum(self.overrides.get(s.name, s.timeout)
                                        for s in selected), self.budget))
        shared_timeout, stage = "", None
        try:
            for stage in selected:
                reason = self.skip_reason(stage, shared_timeout)
                if reason:
                    self.record(stage, "SKIP", reason)
                    continue
                status, detail = self.execute(stage)
                if status == "TIMEOUT" and stage.group == "shared":
                    shared_timeout = stage.name
                self.record(stage, status, detail)
        except Stopped as signame:
            # Signalled: the stage running was killed (execute); say so and
            # leave OUT complete.
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            if stage and stage.name not in self.status:
                self.record(stage, "FAIL", "stopped by %s: gpu-check was "
                            "stopped, its stage killed" % signame)
            self.say("gpu-check: stopped by %s; the stages after %s did not "
                     "run" % (signame, stage.name if stage else "none"))
            self.write_out()
            return 1
        smi = shutil.which("nvidia-smi")
        if self.machine and smi:
            self.machine["end"] = self.query_gpu(smi)
        passed = sum(1 for r in self.results if r["status"] == "PASS")
        failed = sum(1 for r in self.results if r["status"] in ("FAIL", "TIMEOUT"))
        timeouts = sum(1 for r in self.results if r["status"] == "TIMEOUT")
        self.say("gpu-check: %d passed, %d failed (%d timed out), %d skipped, "
                 "%.0f s" % (passed, failed, timeouts,
                             len(self.results) - passed - failed,
                             time.time() - self.start))
        self.write_out()
        if failed:
            return 1
        return 0 if self.gpu else 3

    def dry_run(self, selected):
        total = 0
        group = None
        for s in selected:
            if s.group != group:
                group = s.group
                print("# %s" % ("one rank" if group == "gpu" else
                                "several ranks on one GPU: mpirun -np N is %s"
                                % " ".join(self.mpirun(0)[:-1] + ["N"])))
            timeout = self.overrides.get(s.name, s.timeout)
            total += timeout
            cmds = " && ".join(" ".join(c) for c in s.cmds)
            for n in range(1, 9):
                cmds = cmds.replace(" ".join(self.mpirun(n)), "mpirun -np %d" % n)
            cmds = cmds.replace(self.work + "/", "run/").replace(self.dir + "/", "")
            print("plan: %s: at most %.0f s: %s" % (s.name, timeout, cmds))
        print("gpu-check: dry run: %d stages, at most %.0f s of timeouts in "
              "all; the run stops starting stages after %.0f s "
              "(GPU_CHECK_BUDGET)" % (len(selected), total, self.budget))
        return 0

    # What comes back ---------------------------------------------------

    def write_out(self):
        """OUT's four files, rewritten after every stage."""
        json_path = os.path.join(self.outdir, "results.json")
        with open(json_path + ".tmp", "w") as f:
            json.dump({"bundle": self.dir, "gpu": self.gpu,
                       "assumed_gpu": self.assumed, "budget": self.budget,
                       "seconds": time.time() - self.start,
                       "machine": self.machine, "stages": self.results},
                      f, indent=1)
        os.replace(json_path + ".tmp", json_path)
        perf = os.path.join(self.outdir, "performance.md")
        with open(perf + ".tmp", "w") as f:
            f.write(performance(self))
        os.replace(perf + ".tmp", perf)
        archive = os.path.join(self.outdir, "logs.tar.gz")
        with tarfile.open(archive + ".tmp", "w:gz") as tar:
            def add(name, data):
                info = tarfile.TarInfo("gpu-check/" + name)
                info.size, info.mtime = len(data), int(time.time())
                tar.addfile(info, io.BytesIO(data))
            for log in sorted(glob.glob(os.path.join(self.work, "*.log"))):
                data = open(log, "rb").read()
                if len(data) > 2 << 20:   # a log that ran away: its ends
                    data = data[:1 << 20] + b"\n[... cut ...]\n" + data[-(1 << 20):]
                add(os.path.basename(log), data)
            for out in self.keep:
                if os.path.exists(out) and os.path.getsize(out) <= KEEP_OUTPUT:
                    add(os.path.basename(out), open(out, "rb").read())
            if self.machine.get("nvidia-smi"):
                add("nvidia-smi.txt", self.machine["nvidia-smi"].encode())
            add("environment.txt", "".join(
                "%s=%s\n" % kv for kv in sorted(self.env.items())
                if re.match(r"(LD_|PATH|OPAL|OMPI|CUDA|NCCL|TPRT|TP_|GPU_CHECK|MOCK)", kv[0])
            ).encode())
            manifest = os.path.join(self.dir, "MANIFEST")
            add("MANIFEST", open(manifest, "rb").read())
        os.replace(archive + ".tmp", archive)


# ---------------------------------------------------------------------------
# performance.md
# ---------------------------------------------------------------------------

def performance(run):
    """OUT/performance.md (docs/performance.md is a copy of one): the
    machine, the stage table, the numerics, the 7B layer beside PyTorch,
    the GEMMs, the collectives. Ratios are of figures of the same run."""
    def read(name):
        try:
            return open(os.path.join(run.work, name), errors="replace").read()
        except OSError:
            return ""
    L = ["# Performance on one GPU (scripts/gpu-check.sh --run)", "",
         run.header[0][2:] + "." if run.header else "", ""]
    if run.assumed:
        L += ["No GPU: the stages ran with GPU_CHECK_ASSUME_GPU=1 (libcuda.so.1: "
              "%s); no time below is a GPU's." % run.assumed, ""]
    elif not run.gpu:
        L += ["No GPU was found on this machine: nothing below was measured.", ""]
    # The machine: driver, clocks at the start and the end of the run.
    if run.machine.get("start"):
        cuda = re.search(r"CUDA Version: (\S+)", run.machine.get("nvidia-smi", ""))
        L += ["## The machine", "",
              "| | at the start | at the end |", "|---|---|---|"]
        start, end = run.machine["start"], run.machine.get("end", {})
        for key in start:
            L.append("| %s | %s | %s |" % (key, start[key], end.get(key, "")))
        if cuda:
            L.append("| CUDA version (driver) | %s | |" % cuda.group(1))
        L.append("")
    L += ["## Stages", "", "| stage | result | seconds (timeout) | detail |",
          "|---|---|---|---|"]
    for r in run.results:
        L.append("| %s | %s | %s | %s |" % (
            r["stage"], r["status"],
            "%.1f (%.0f)" % (r["seconds"], r["timeout"]) if r["seconds"] is not None else "",
            r["detail"].replace("|", "/")))
    L.append("")
    # Numerics: every comparison, with its error.
    rows = []
    for r in run.results:
        m = re.match(r"(ok|FAIL): .*?relative error ([0-9.e+-]+)", r["detail"])
        if m:
            stage = run.stage(r["stage"])
            against = re.search(r"; against ([^;\s]+)", r["detail"])
            rows.append("| %s | %s | %s | %s |" % (
                r["stage"], "%s's output" % against.group(1) if against else "CPU reference",
                m.group(2), r["status"]))
    if rows:
        L += ["## Numerics", "", "| stage | compared with | max relative error | result |",
              "|---|---|---|---|"] + rows + [
              "", "Relative error: the largest absolute error over the largest "
              "reference magnitude, per output (results.txt also gives the RMS "
              "error and where the largest error is).", ""]
    # The 7B layer: ours at tp = 1 (fused, unfused) and as cuda-shared
    # ranks, PyTorch eager and SDPA.
    torch_log = read("torch-llama-layer.log")
    eager = number(r"^eager: ([0-9.]+) ms", torch_log)
    sdpa = number(r"^sdpa: ([0-9.]+) ms", torch_log)
    costs = {}
    for tp in (1, 8):
        try:
            costs[tp] = json.load(open(os.path.join(
                run.dir, "bench", "cost-tp%d.json" % tp)))["functions"][0]
        except (OSError, ValueError, KeyError, IndexError):
            pass
    L += ["## Llama-2-7B decoder layer, bf16, 1 x 4096 tokens, forward", "",
          "| program | time per step | per-rank compute | time / PyTorch eager | "
          "time / PyTorch SDPA | kernels, GEMMs (cost report) | bytes moved "
          "per rank (minimum) | achieved bandwidth |",
          "|---|---|---|---|---|---|---|---|"]
    for label, log, tp in [("ours, tp=1", "llama7b-layer-tp1.log", 1),
                           ("ours, tp=1, attention unfused",
                            "llama7b-layer-unfused-tp1.log", 1)] + [
            ("ours, tp=%d (cuda-shared ranks)" % n,
             "llama7b-layer-tp%d-shared.log" % n, n) for n in (2, 4, 8)]:
        text = read(log)
        t = number(r"^time per step: ([0-9.eE+-]+) s", text)
        if t is None:
            continue
        comm = number(r"^communication: ([0-9.eE+-]+) s", text) or 0.0
        per_rank = t if tp == 1 else (t - comm) / tp
        ms = per_rank * 1e3
        cost = costs.get(tp) if "unfused" not in log else None
        L.append("| %s | %.3f ms | %.3f ms | %s | %s | %s | %s | %s |" % (
            label, t * 1e3, ms,
            "%.2fx" % (ms * tp / eager) if eager else "-",
            "%.2fx" % (ms * tp / sdpa) if sdpa else "-",
            "%d, %d" % (cost["kernel_launches"], cost["gemm_launches"]) if cost else "-",
            "%.0f MiB (%.0f MiB)" % (cost["bytes_moved"] / 2**20,
                                     cost["minimum_bytes"] / 2**20) if cost else "-",
            "%.2f TB/s" % (cost["bytes_moved"] / per_rank / 1e12)
            if cost and per_rank > 0 else "-"))
    if eager:
        L.append("| PyTorch eager | %.3f ms | | 1x | | | | |" % eager)
    if sdpa:
        L.append("| PyTorch scaled_dot_product_attention | %.3f ms | | | 1x | | | |" % sdpa)
    L += ["", "Per-rank compute of tp=N on one GPU: (time per step - "
          "communication) / N; the ratios divide N x that by PyTorch's "
          "one-GPU time (below 1: faster per GPU-second). Bandwidth: the cost "
          "report's bytes moved per rank over the per-rank time.", ""]
    # The attention alone: ours (the tensor-core kernel, and unfused)
    # against PyTorch's scaled_dot_product_attention on the same shapes.
    L += attention_table(run, read)
    # GEMMs: ours (the runtime's cuBLAS call, one-GEMM models) against
    # torch.matmul; a shared-A call of S products against S torch.matmul
    # calls and against one of the S weights concatenated.
    torch_gemm = {}
    for m in re.finditer(r"^shape (\d+) (\d+) (\d+) (\d+)(?: x(\d+))?: "
                         r"([0-9.eE+-]+) s[^;\n]*(?:; concatenated: ([0-9.eE+-]+) s)?",
                         read("torch-gemm-shapes.log"), re.M):
        key = tuple(int(v) for v in m.groups()[:4]) + (int(m.group(5) or 1),)
        torch_gemm[key] = (float(m.group(6)),
                           float(m.group(7)) if m.group(7) else None)
    L += ["## GEMMs of the layer (bf16)", "",
          "| GEMM | ours (runtime, cuBLAS) | torch.matmul (cuBLAS) | "
          "torch time / ours | torch.matmul, the S weights concatenated |",
          "|---|---|---|---|---|"]
    for st in run.stages:
        m = re.match(r"gemm-(?:(\d+)x|shared(\d+)-)(\d+)x(\d+)x(\d+)$", st.name)
        if not m:
            continue
        b, shared, mm, n, k = (int(v) if v else 0 for v in m.groups())
        b, shared = b or 1, shared or 1
        t = number(r"^time per step: ([0-9.eE+-]+) s", read(st.name + ".log"))
        tt, cat = torch_gemm.get((b, mm, n, k, shared), (None, None))
        flops = 2.0 * b * mm * n * k * shared
        cell = lambda x: "%.3f ms, %.0f TFLOP/s" % (x * 1e3, flops / x / 1e12) if x else "-"
        label = ("%d x %d x %d x %d" % (b, mm, n, k) if shared == 1 else
                 "shared-A, S = %d: %d x %d x %d each" % (shared, mm, n, k))
        L.append("| %s | %s | %s | %s | %s |" % (
            label, cell(t), cell(tt), "%.2f" % (tt / t) if t and tt else "-",
            cell(cat) if shared > 1 else ""))
    L += ["", "Above 1: ours is faster. Ours is tp-runner's time per step of a "
          "one-GEMM model, its per-step overhead included; a shared-A call is "
          "one runtime call of S products of one activation (the layer's "
          "Q/K/V and gate/up), against S torch.matmul calls and against one "
          "torch.matmul of the S weights side by side (a fused QKV weight).", ""]
    # Collectives: per call, from the layer runs and tprt-bench.
    L += ["## Collectives", "", "| run | collective | calls per step | time per call |",
          "|---|---|---|---|"]
    for tp in (2, 4, 8):
        for m in re.finditer(r"^  (\w+): ([0-9.]+) \(plan \d+\), ([0-9.]+) bytes, "
                             r"([0-9.eE+-]+) s$",
                             read("llama7b-layer-tp%d-shared.log" % tp), re.M):
            calls = float(m.group(2))
            if calls > 0:
                L.append("| llama7b-layer tp=%d | %s (%.1f MiB a step) | %g | %.1f us |" % (
                    tp, m.group(1), float(m.group(3)) / 2**20, calls,
                    float(m.group(4)) / calls * 1e6))
    for n in (2, 8):
        for row in read("collectives-cuda-shared-np%d.log" % n).splitlines():
            f = row.split()
            if len(f) == 5 and f[0].isdigit():
                L.append("| tprt-bench cuda-shared, %d ranks | all_reduce bf16 %.0f MiB "
                         "| | %s us (busbw %s GB/s) |" % (n, int(f[0]) / 2**20, f[2], f[4]))
    return "\n".join(L) + "\n"


def attention_table(run, read):
    """performance.md's rows for the attention alone: ours fused (the
    tensor-core kernel) and unfused, PyTorch's SDPA (is_causal=True) with
    its default and each of its backends, from torch-llama-layer's
    `attention: BACKEND: T ms, ...` lines; ratios to the default SDPA."""
    model = ATTENTION_MODELS[0]
    heads, seq, dim = model.attention
    flops = model.flops
    torch_log = read("torch-llama-layer.log")
    sdpa = {m.group(1): float(m.group(2)) * 1e-3 for m in re.finditer(
        r"^attention: (\w+): ([0-9.]+) ms", torch_log, re.M)}
    rows = []
    for label, name in (("ours, tensor-core kernel (`tp-fuse-attention`)", "attention7b"),
                        ("ours, unfused (`fuse-attention=false`: batched GEMMs, softmax kernel)",
                         "attention7b-unfused")):
        t = number(r"^time per step: ([0-9.eE+-]+) s", read(name + "-tp1.log"))
        if t:
            rows.append((label, t))
    for backend in ("default", "flash", "cudnn", "efficient", "math"):
        if backend in sdpa:
            rows.append(("PyTorch `scaled_dot_product_attention`, %s" % (
                "default backend" if backend == "default" else backend + " backend"),
                         sdpa[backend]))
    L = ["## Attention alone, bf16, 1 x %d heads x %d tokens, head_dim %d, causal"
         % (heads, seq, dim), "",
         "| program | time | TFLOP/s over %.1f causal GFLOP | time / PyTorch SDPA (default) |"
         % (flops / 1e9), "|---|---|---|---|"]
    ref = sdpa.get("default")
    for label, t in rows:
        L.append("| %s | %.3f ms | %.1f | %s |" % (
            label, t * 1e3, flops / t / 1e12, "%.2fx" % (t / ref) if ref else "-"))
    unavailable = re.findall(r"^attention: (\w+): unavailable", torch_log, re.M)
    L += ["", "Causal flops: 4 x head_dim per (query, key) pair the mask keeps "
          "(seq (seq + 1) / 2 per head). Ours is tp-runner's time per step of a "
          "model that is the attention alone (Q, K, V [1, %d, %d, %d] as the "
          "layer lays them out), its per-step overhead included; PyTorch's "
          "inputs are the same tensors as [1, %d, %d, %d] views.%s" % (
              seq, heads, dim, heads, seq, dim,
              " SDPA backends unavailable here: %s." % ", ".join(unavailable)
              if unavailable else ""), ""]
    return L


# ---------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------

def main(argv):
    parser = argparse.ArgumentParser(
        prog="gpu-check.sh", description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--prepare", metavar="DIR",
                      help="make the bundle DIR (on the build machine)")
    mode.add_argument("--run", metavar="DIR",
                      help="run the bundle DIR's stages (on the GPU machine)")
    mode.add_argument("--compare", nargs=3, metavar=("OUT", "REF", "TOL"),
                      help="compare two tp-runner output files")
    parser.add_argument("--build", help="--prepare: the build folder "
                        "(default $TP_BUILD_DIR, else build/)")
    parser.add_argument("--tiny-only", action="store_true",
                        help="--prepare: the models of a --tiny-only bundle "
                        "(tiny GPT-2 at tp = 1, 2, unfused at tp = 1, and attention-small "
                        "fused and unfused: the CI test)")
    parser.add_argument("--out", help="--run: where results.txt, results.json, "
                        "performance.md and logs.tar.gz go (default DIR)")
    parser.add_argument("--dry-run", action="store_true",
                        help="--run: list the stages and their timeouts, run nothing")
    parser.add_argument("--only", metavar="NAMES",
                        help="--run: only the stages named (comma-separated, "
                        "shell patterns), e.g. to rerun the failed ones")
    parser.add_argument("--timeout", action="append", metavar="NAME=SECONDS",
                        help="--run: another timeout for one stage")
    args = parser.parse_args(argv)
    if args.prepare:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from gpu_check_prepare import prepare
        return prepare(args)
    if args.compare:
        ok, message = compare(args.compare[0], args.compare[1],
                              float(args.compare[2]))
        print(message)
        return 0 if ok else 1
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        return Run(args).main()
    except Stopped as signame:   # before the first stage
        die("stopped by %s" % signame)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
