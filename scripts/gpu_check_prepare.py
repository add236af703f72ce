#!/usr/bin/env python3
"""The build-machine half of the GPU check: `scripts/gpu-check.sh --prepare
DIR [--build BUILD] [--tiny-only]` (docs/gpu.md, "The GPU check").

It compiles, with the build's tp-run, every model of gpu_check.MODELS,
gpu_check.LAYER_MODELS and gpu_check.ATTENTION_MODELS (in a --tiny-only
bundle only their `tiny` tp degrees; a model of attention alone from the
MLIR attention_mlir writes, a masked one from utils/masked_attention.py)
for the GPU (`--backend cuda --compile-only`),
the CPU tp=1 outputs of those checked against a reference, the 7B layer's
GPU cost reports and one GEMM model per GEMM call they list (a shared-A
call as one of as many products); copies the
runtime-only tools, the runtime, its dependencies (by ldd) and Open MPI's
launcher; rewrites every run path to the bundle's lib/ (patchelf); refuses
anything that needs LLVM and a bundle over gpu_check.LIMIT_MIB; and writes
DIR/MANIFEST (every file's SHA-256 prefix and size). The result runs with
`bash DIR/gpu-check.sh --run DIR` (gpu_check.py) where there is no LLVM.
"""

import glob
import gzip
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time

from gpu_check import (ATTENTION_MODELS, BENCH_SCRIPTS, GZIP_OVER, LAYER,
                       LAYER_MODELS, LIMIT_MIB, MODELS, die, gemm_name,
                       gemm_shapes)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), "utils"))
from masked_attention import masked_attention_mlir  # noqa: E402


def gemm_mlir(b, m, n, k, products=1):
    """A bf16 [b x] m x k times k x n product, the weight a tp.param; with
    `products` > 1 (b = 1), that many products of one activation and a
    weight each, which tp-group-gemms makes one shared-A call
    (tprt_mlir_gemm_shared_a<N>_bf16), as Q/K/V and gate/up are in the 7B
    layer."""
    lead = "%dx" % b if b != 1 else ""
    op = "linalg.batch_matmul" if b != 1 else "linalg.matmul"
    ta, tb, tc = ("tensor<%s%dx%dxbf16>" % (lead, r, c)
                  for r, c in ((m, k), (k, n), (m, n)))
    weights = ", ".join(
        '%%b%d: %s {tp.param, tp.init = {kind = "normal", seed = %d : i64, '
        'std = 0.02 : f64}}' % (i, tb, 5 + i) for i in range(products))
    body = ["  %zero = arith.constant 0.0 : bf16",
            "  %%e = tensor.empty() : %s" % tc,
            "  %%c = linalg.fill ins(%%zero : bf16) outs(%%e : %s) -> %s" % (tc, tc)]
    for i in range(products):
        body.append("  %%r%d = %s ins(%%a, %%b%d : %s, %s) outs(%%c : %s) -> %s"
                    % (i, op, i, ta, tb, tc, tc))
    results = ", ".join("%%r%d" % i for i in range(products))
    return "func.func @gemm(%%a: %s, %s) -> (%s) {\n%s\n  return %s : %s\n}\n" % (
        ta, weights, ", ".join([tc] * products), "\n".join(body), results,
        ", ".join([tc] * products))


def attention_mlir(heads, seq, dim, dtype="bf16", batch=1, window=None,
                   fill="-inf"):
    """Causal attention alone, spelled as tp-gen's Llama layer spells it
    (tp-gen --preset llama2-7b --dtype bf16: the score product as a
    linalg.generic over [b, s, h, d] operands, the scale and the causal
    mask (linalg.index, cmpi ugt, select -inf) in the f32 widening, max,
    exp(x - max), sum, divide and narrow, the product with V), so that
    tp-fuse-attention makes it the layer's kernel (the tensor-core one for
    bf16 and head dimensions that are multiples of 16). Q, K and V are
    inputs [batch, seq, heads, dim] drawn from normal(0, 1); the result is
    [batch, seq, heads, dim], the layout the layer's output projection
    reads. With `window`, a sliding window of that many keys (i - window
    < j <= i); fill "min" masks with f32's lowest finite float (Hugging
    Face's and JAX's finfo.min) instead of -inf: the spelling in which the
    tensor-core kernel gave NaN (issue 39, test/e2e/run-cuda-emu-masks.test)."""
    qkv = "tensor<%dx%dx%dx%dx%s>" % (batch, seq, heads, dim, dtype)
    s16 = "tensor<%dx%dx%dx%dx%s>" % (batch, heads, seq, seq, dtype)
    s32 = "tensor<%dx%dx%dx%dxf32>" % (batch, heads, seq, seq)
    row = "tensor<%dx%dx%dxf32>" % (batch, heads, seq)
    init = lambda seed: ('{tp.init = {kind = "normal", seed = %d : i64, '
                         'std = 1.0 : f64}}' % seed)
    scale = "%.9e" % (1.0 / dim ** 0.5)
    return """#q = affine_map<(d0, d1, d2, d3, d4) -> (d0, d2, d1, d4)>
#k = affine_map<(d0, d1, d2, d3, d4) -> (d0, d3, d1, d4)>
#s = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>
#v = affine_map<(d0, d1, d2, d3, d4) -> (d0, d4, d2, d3)>
#e = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#r = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
func.func @attention(%%q: %(qkv)s %(iq)s, %%k: %(qkv)s %(ik)s, %%v: %(qkv)s %(iv)s) -> %(qkv)s {
  %%zero = arith.constant 0.0 : %(t)s
  %%e0 = tensor.empty() : %(s16)s
  %%f0 = linalg.fill ins(%%zero : %(t)s) outs(%%e0 : %(s16)s) -> %(s16)s
  %%scores = linalg.generic {indexing_maps = [#q, #k, #s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%%q, %%k : %(qkv)s, %(qkv)s) outs(%%f0 : %(s16)s) {
  ^bb0(%%a: %(t)s, %%b: %(t)s, %%o: %(t)s):
    %%m = arith.mulf %%a, %%b : %(t)s
    %%x = arith.addf %%o, %%m : %(t)s
    linalg.yield %%x : %(t)s
  } -> %(s16)s
  %%e1 = tensor.empty() : %(s32)s
  %%masked = linalg.generic {indexing_maps = [#e, #e], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%%scores : %(s16)s) outs(%%e1 : %(s32)s) {
  ^bb0(%%a: %(t)s, %%o: f32):
    %%w = arith.extf %%a : %(t)s to f32
    %%i = linalg.index 2 : index
    %%j = linalg.index 3 : index
    %%future = arith.cmpi ugt, %%j, %%i : index%(window)s
    %%scale = arith.constant %(scale)s : f32
    %%x = arith.mulf %%w, %%scale : f32
    %%ninf = arith.constant %(fill)s : f32
    %%y = arith.select %(hide)s, %%ninf, %%x : f32
    linalg.yield %%y : f32
  } -> %(s32)s
  %%ninf = arith.constant 0xFF800000 : f32
  %%e2 = tensor.empty() : %(row)s
  %%f2 = linalg.fill ins(%%ninf : f32) outs(%%e2 : %(row)s) -> %(row)s
  %%max = linalg.generic {indexing_maps = [#e, #r], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%%masked : %(s32)s) outs(%%f2 : %(row)s) {
  ^bb0(%%a: f32, %%o: f32):
    %%x = arith.maximumf %%a, %%o : f32
    linalg.yield %%x : f32
  } -> %(row)s
  %%e3 = tensor.empty() : %(s32)s
  %%exp = linalg.generic {indexing_maps = [#e, #r, #e], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%%masked, %%max : %(s32)s, %(row)s) outs(%%e3 : %(s32)s) {
  ^bb0(%%a: f32, %%b: f32, %%o: f32):
    %%x = arith.subf %%a, %%b : f32
    %%y = math.exp %%x : f32
    linalg.yield %%y : f32
  } -> %(s32)s
  %%fzero = arith.constant 0.0 : f32
  %%e4 = tensor.empty() : %(row)s
  %%f4 = linalg.fill ins(%%fzero : f32) outs(%%e4 : %(row)s) -> %(row)s
  %%sum = linalg.generic {indexing_maps = [#e, #r], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%%exp : %(s32)s) outs(%%f4 : %(row)s) {
  ^bb0(%%a: f32, %%o: f32):
    %%x = arith.addf %%a, %%o : f32
    linalg.yield %%x : f32
  } -> %(row)s
  %%e5 = tensor.empty() : %(s16)s
  %%probs = linalg.generic {indexing_maps = [#e, #r, #e], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%%exp, %%sum : %(s32)s, %(row)s) outs(%%e5 : %(s16)s) {
  ^bb0(%%a: f32, %%b: f32, %%o: %(t)s):
    %%x = arith.divf %%a, %%b : f32
    %%y = arith.truncf %%x : f32 to %(t)s
    linalg.yield %%y : %(t)s
  } -> %(s16)s
  %%e6 = tensor.empty() : %(qkv)s
  %%f6 = linalg.fill ins(%%zero : %(t)s) outs(%%e6 : %(qkv)s) -> %(qkv)s
  %%out = linalg.generic {indexing_maps = [#q, #v, #s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%%probs, %%v : %(s16)s, %(qkv)s) outs(%%f6 : %(qkv)s) {
  ^bb0(%%a: %(t)s, %%b: %(t)s, %%o: %(t)s):
    %%m = arith.mulf %%a, %%b : %(t)s
    %%x = arith.addf %%o, %%m : %(t)s
    linalg.yield %%x : %(t)s
  } -> %(qkv)s
  return %%out : %(qkv)s
}
""" % dict(qkv=qkv, s16=s16, s32=s32, row=row, t=dtype, scale=scale,
           iq=init(11), ik=init(12), iv=init(13),
           fill="-3.40282347E+38" if fill == "min" else "0xFF800000",
           hide="%hide" if window else "%future",
           window=("""
    %%w_keys = arith.constant %d : index
    %%j_end = arith.addi %%j, %%w_keys : index
    %%before = arith.cmpi ule, %%j_end, %%i : index
    %%hide = arith.ori %%future, %%before : i1""" % window) if window else "")


SYSTEM_LIBS = ("libc.so", "libm.so", "libdl.so", "librt.so", "libpthread.so",
               "ld-linux", "libstdc++.so", "libgcc_s.so")
# The GPU machine has its own versions of these.
CUDA_LIBS = ("libcuda.so", "libcudart.so", "libcublas", "libnccl.so",
             "libnvidia", "libnvJitLink")
# Open MPI plugins that need a network fabric library stay behind: shared
# memory is all one machine needs.
FABRIC_LIBS = ("libucm", "libucp", "libucs", "libuct", "libfabric", "libpsm",
               "libibverbs", "librdmacm", "libinfinipath", "libefa", "libnl-")
OMPI_PLUGINS = "/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3"


def ldd(paths, library_path=None):
    """{path: [(soname, resolved path)]}: what ldd resolves for each file
    (one ldd for them all)."""
    env = dict(os.environ)
    if library_path:
        env["LD_LIBRARY_PATH"] = library_path
    paths = list(paths)
    if not paths:
        return {}
    out = subprocess.run(["ldd"] + paths, capture_output=True, text=True,
                         env=env).stdout
    if len(paths) == 1:
        out = paths[0] + ":\n" + out
    found, current = {p: [] for p in paths}, None
    for line in out.splitlines():
        if not line.startswith(("\t", " ")) and line.endswith(":"):
            current = line[:-1]
            continue
        m = re.match(r"\s*(\S+) => (/\S+)", line)
        if m and current in found:
            found[current].append(m.groups())
    return found


def set_runpath(path, runpath):
    if not shutil.which("patchelf"):
        die("patchelf is missing (scripts/setup.sh installs it)")
    if subprocess.run(["patchelf", "--set-rpath", runpath, path]).returncode:
        die("cannot set the run path of %s" % path)


def soname(path):
    out = subprocess.run(["readelf", "-d", path], capture_output=True,
                         text=True).stdout
    m = re.search(r"\(SONAME\).*\[(.*)\]", out)
    return m.group(1) if m else ""


def copy_dependencies(files, deps, library_path=None, skip=()):
    """Copies into `deps` what `files` need beyond the C/C++ runtime (and
    `skip`), by soname."""
    for needed in ldd(files, library_path).values():
        for base, dep in needed:
            if base.startswith(SYSTEM_LIBS + tuple(skip)):
                continue
            target = os.path.join(deps, base)
            if not os.path.exists(target) and not os.path.exists(target + ".gz"):
                shutil.copy(dep, target)


def prepare(args):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    build = os.path.abspath(args.build or os.environ.get("TP_BUILD_DIR")
                            or os.path.join(root, "build"))
    bindir, libdir = os.path.join(build, "bin"), os.path.join(build, "lib")
    for f in ("bin/tp-run", "bin/tp-runner", "bin/tprt-conformance",
              "lib/libtprt.so", "lib/libtprt_cuda.so"):
        if not os.path.exists(os.path.join(build, f)):
            die("%s is missing (build with the CUDA toolkit and NCCL: "
                "TP_ENABLE_CUDA)" % os.path.join(build, f))
    start = time.time()
    out = os.path.abspath(args.prepare)
    shutil.rmtree(out, ignore_errors=True)
    for sub in ("bin", "lib", "deps", "models", "ref", "bench", "work"):
        os.makedirs(os.path.join(out, sub))
    work = os.path.join(out, "work")
    log = open(os.path.join(work, "prepare.log"), "w")

    # Runtime only: the runner, the conformance suite, the collective bench
    # and the libraries (the real files; the symlinks rebuilt). The tools
    # find the bundle's lib/ by $ORIGIN/../lib.
    for tool in ("tp-runner", "tprt-conformance", "tprt-bench"):
        if os.path.exists(os.path.join(bindir, tool)):
            shutil.copy(os.path.join(bindir, tool), os.path.join(out, "bin"))
            set_runpath(os.path.join(out, "bin", tool), "$ORIGIN/../lib")
    for name in ("libtprt.so", "libtprt_cuda.so"):
        real = os.path.realpath(os.path.join(libdir, name))
        shutil.copy(real, os.path.join(out, "lib"))
        for link in (name, soname(real)):
            if link and link != os.path.basename(real):
                os.symlink(os.path.basename(real),
                           os.path.join(out, "lib", link))
    mine = sorted(glob.glob(os.path.join(out, "bin", "*")) +
                  glob.glob(os.path.join(out, "lib", "*.so")))
    lib_path = os.path.join(out, "lib")
    # Nothing may need LLVM or MLIR.
    for f, needed in ldd(mine, lib_path).items():
        bad = [b for b, _ in needed
               if re.search(r"libLLVM|libMLIR|mlir_", b, re.I)]
        if bad:
            die("%s depends on LLVM/MLIR: %s" % (f, " ".join(bad)))

    # Open MPI's launcher, for the stages of several ranks: orterun, orted,
    # the plugins and help texts in Debian's layout under mpi/ (--run
    # relocates it with OPAL_PREFIX).
    deps = os.path.join(out, "deps")
    orterun = os.path.realpath(shutil.which("mpirun") or "/nonexistent")
    if os.path.exists(orterun) and os.path.isdir(OMPI_PLUGINS):
        rel = "lib/x86_64-linux-gnu/openmpi/lib/openmpi3"
        mpi = os.path.join(out, "mpi")
        for sub in ("bin", rel, "share"):
            os.makedirs(os.path.join(mpi, sub), exist_ok=True)
        shutil.copy(orterun, os.path.join(mpi, "bin", "orterun"))
        if os.path.exists("/usr/bin/orted"):
            shutil.copy("/usr/bin/orted", os.path.join(mpi, "bin"))
        os.symlink("orterun", os.path.join(mpi, "bin", "mpirun"))
        if os.path.isdir("/usr/share/openmpi"):
            shutil.copytree("/usr/share/openmpi",
                            os.path.join(mpi, "share", "openmpi"))
        plugins = ldd(sorted(glob.glob(os.path.join(OMPI_PLUGINS, "*.so"))))
        for plugin, needed in plugins.items():
            if not any(b.startswith(FABRIC_LIBS) for b, _ in needed):
                shutil.copy(plugin, os.path.join(mpi, rel))
        copy_dependencies(glob.glob(os.path.join(mpi, "bin", "*")) +
                          glob.glob(os.path.join(mpi, rel, "*.so")), deps)
    # The dependencies of the runtime that a GPU machine may lack (Open MPI,
    # OpenBLAS, ...): not the CUDA libraries, which it has in its own
    # versions. --run uses only those the machine lacks (by soname).
    copy_dependencies(mine, deps, lib_path, skip=CUDA_LIBS + ("libtprt",))
    for f in glob.glob(os.path.join(deps, "*")):
        if os.path.getsize(f) > GZIP_OVER:
            with open(f, "rb") as src, gzip.open(f + ".gz", "wb", 1) as dst:
                shutil.copyfileobj(src, dst)
            os.remove(f)
    # This script, its command line and the PyTorch baselines.
    for f in ("gpu-check.sh", "gpu_check.py"):
        shutil.copy(os.path.join(root, "scripts", f), out)
    for f in BENCH_SCRIPTS:
        shutil.copy(os.path.join(root, "bench", f), os.path.join(out, "bench"))

    tp_run = os.path.join(bindir, "tp-run")

    def tool(argv, what):
        log.write("$ %s\n" % " ".join(argv))
        log.flush()
        if subprocess.run(argv, stdout=log, stderr=subprocess.STDOUT).returncode:
            log.close()
            tail = open(os.path.join(work, "prepare.log")).read().splitlines()
            die("%s failed:\n%s" % (what, "\n".join(tail[-20:])))

    def compile_gpu(name, tp, model_args):
        print("gpu-check: compiling %s tp=%d for cuda" % (name, tp), flush=True)
        w = os.path.join(work, name)
        tool([tp_run] + model_args + ["--backend", "cuda", "--tp", str(tp),
                                      "--compile-only", "--work-dir", w],
             "compiling %s tp=%d" % (name, tp))
        dest = os.path.join(out, "models", name, "tp%d" % tp)
        os.makedirs(dest)
        for f in ("model.json", "model.so"):
            shutil.copy(os.path.join(w, "tp%d" % tp, f), dest)
        set_runpath(os.path.join(dest, "model.so"), "$ORIGIN/../../../lib")

    def model_args(model):
        """tp-run's model arguments: the model's, or the file of a model
        that is attention alone (written here)."""
        if model.masks:
            src = os.path.join(work, model.name + ".mlir")
            if not os.path.exists(src):
                with open(src, "w") as f:
                    f.write(masked_attention_mlir(model.masks))
            return [src] + model.args
        if not model.attention:
            return model.args
        src = os.path.join(work, "attention-%dx%dx%d.mlir" % model.attention)
        if not os.path.exists(src):
            with open(src, "w") as f:
                f.write(attention_mlir(*model.attention))
        return [src] + model.args

    for model in MODELS + LAYER_MODELS + ATTENTION_MODELS:
        tps = model.tiny if args.tiny_only else model.tps
        for tp in tps:
            compile_gpu(model.name, tp, model_args(model) + model.lower_args())
        if tps and model.check == "ref":
            print("gpu-check: CPU reference of %s" % model.name, flush=True)
            w = os.path.join(work, model.name + "-cpu")
            tool([tp_run] + model_args(model) + ["--backend", "cpu", "--tp", "1",
                                                 "--work-dir", w],
                 "the CPU reference of %s" % model.name)
            shutil.copy(os.path.join(w, "tp1", "outputs.bin"),
                        os.path.join(out, "ref", model.name + ".bin"))

    if not args.tiny_only:
        # The 7B layer's GPU cost reports at tp = 1 and 8 (kernels, GEMM
        # flops, bytes moved: docs/passes/lower-gpu.md) and the GEMM calls
        # they list, each compiled as a model of that one call to time
        # against torch.matmul on the same shapes: a shared-A call (Q/K/V,
        # gate/up) as a shared-A call of as many products.
        layer = os.path.join(work, "layer.mlir")
        tool([os.path.join(bindir, "tp-gen"), "--preset", "llama2-7b"] +
             [a[len("--gen="):] for a in LAYER if a.startswith("--gen=")] +
             ["-o", layer], "tp-gen of the 7B layer")
        shapes = []
        for tp in (1, 8):
            print("gpu-check: cost report of llama7b-layer tp=%d" % tp,
                  flush=True)
            report = os.path.join(out, "bench", "cost-tp%d.json" % tp)
            sharded = os.path.join(work, "layer-tp%d.mlir" % tp)
            tool([os.path.join(bindir, "tp-opt"), layer,
                  "--tp-shard=tp=%d" % tp, "-o", sharded], "sharding the layer")
            tool([os.path.join(bindir, "tp-opt"), sharded,
                  "--tp-lower-gpu=chip=sm_90 format=isa stop-after=kernels "
                  "cost-report=" + report, "-o", os.devnull],
                 "the cost report of tp=%d" % tp)
            for f in json.load(open(report))["functions"]:
                for e in f["launches"]:
                    if e["kind"] != "gemm":
                        continue
                    # A shared-A call's batch is its number of products
                    # (S), each of the per-product shape: "1 M N K S".
                    shared = e["name"].startswith("tprt_mlir_gemm_shared_a")
                    shape = ((1, e["m"], e["n"], e["k"], e["batch"]) if shared
                             else (e["batch"], e["m"], e["n"], e["k"], 1))
                    if shape not in shapes:
                        shapes.append(shape)
        with open(os.path.join(out, "bench", "gemm-shapes.txt"), "w") as f:
            f.writelines("%d %d %d %d %d\n" % s for s in shapes)
        for shape in gemm_shapes(os.path.join(out, "bench", "gemm-shapes.txt")):
            name = gemm_name(*shape)
            src = os.path.join(work, name + ".mlir")
            with open(src, "w") as f:
                f.write(gemm_mlir(*shape))
            compile_gpu(name, 1, [src])

    log.close()
    shutil.rmtree(work)
    files = []
    for top, _, names in os.walk(out):
        files += [os.path.relpath(os.path.join(top, n), out) for n in names]
    with open(os.path.join(out, "MANIFEST"), "w") as m:
        m.write("# tp-opt GPU bundle: DIR/gpu-check.sh --run DIR (docs/gpu.md)\n")
        m.write("# prepared %s on %s from %s\n" % (
            time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            os.uname().nodename, build))
        m.write("# models: %s\n" % " ".join(sorted(os.listdir(
            os.path.join(out, "models")))))
        for f in sorted(files):
            path = os.path.join(out, f)
            if os.path.islink(path):
                continue
            digest = hashlib.sha256(open(path, "rb").read()).hexdigest()[:16]
            m.write("%s %d %s\n" % (digest, os.path.getsize(path), f))
    size = sum(os.path.getsize(os.path.join(top, n))
               for top, _, names in os.walk(out) for n in names
               if not os.path.islink(os.path.join(top, n)))
    line = ("bundle: %s, %d files, %d bytes (%d MiB of at most %d), "
            "prepared in %.0f s" % (out, len(files) + 1, size,
                                    (size + (1 << 20) - 1) >> 20, LIMIT_MIB,
                                    time.time() - start))
    print(line)
    with open(os.path.join(out, "MANIFEST"), "a") as m:
        m.write(line + "\n")
    note = travel_note(out, size)
    if note:
        print(note)
    if size > LIMIT_MIB << 20:
        die("the bundle is over %d MiB" % LIMIT_MIB)
    return 0


def travel_note(out, size):
    """Where the bundle is inside a git working tree: what the device tool
    would carry (tracked and untracked files git does not ignore), with the
    bundle whether it travels with the tree or must be named in `carry`."""
    git = lambda *a: subprocess.run(["git", "-C", out] + list(a),
                                    capture_output=True)
    top = git("rev-parse", "--show-toplevel")
    if top.returncode:
        return ""
    top = top.stdout.decode().strip()
    listed = git("-C", top, "ls-files", "-z", "--cached", "--others",
                 "--exclude-standard").stdout.decode(errors="replace")
    tree = sum(os.path.getsize(os.path.join(top, f))
               for f in listed.split("\0") if f and
               os.path.isfile(os.path.join(top, f)) and
               not os.path.islink(os.path.join(top, f)))
    ignored = git("check-ignore", "-q", out).returncode == 0
    total = tree + size if ignored else tree
    return ("travel: %s and the bundle are %d MiB of the device tool's 64 "
            "(%s)" % (top, (total + (1 << 20) - 1) >> 20,
                      "the bundle is ignored by git: name it in carry"
                      if ignored else "the bundle travels with the tree"))
