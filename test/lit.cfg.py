# -*- Python -*-
# lit configuration for the tp-opt regression tests.

import os
import platform
import shutil
import subprocess
import sys

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "TP"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.tp_obj_root, "test")
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py",
                   "unittests", "Inputs"]

llvm_config.use_default_substitutions()
config.substitutions.append(("%tp_src_root", config.tp_src_root))
config.substitutions.append(("%mlir_include_dir", config.mlir_include_dir))
config.substitutions.append(("%mlir_tblgen", config.mlir_tblgen))
config.substitutions.append(("%tp_obj_root", config.tp_obj_root))
# %plan-summary REPORT.json: one line per collective of a tp-propagate report.
config.substitutions.append(
    ("%plan-summary",
     "%s %s" % (sys.executable,
                os.path.join(config.tp_src_root, "utils", "plan-summary.py"))))
# %doc-blocks extract|check PAGE ...: the code blocks of a docs/ page that the
# tests run or check (utils/doc-blocks.py).
config.substitutions.append(
    ("%doc-blocks",
     "%s %s" % (sys.executable,
                os.path.join(config.tp_src_root, "utils", "doc-blocks.py"))))
# %expect-exit CODE cmd...: succeeds when cmd exits with exactly CODE (a crash
# never does).
config.substitutions.append(
    ("%expect-exit",
     "%s %s" % (sys.executable,
                os.path.join(config.tp_src_root, "utils", "expect-exit.py"))))

tool_dirs = [config.tp_tools_dir, config.llvm_tools_dir]
tools = [
    "tp-opt",
    "tp-gen",
    "tp-run",
    "tp-capi-test",
    ToolSubst("mlir-opt", unresolved="fatal"),
    ToolSubst("mlir-translate", unresolved="fatal"),
]
llvm_config.add_tool_substitutions(tools, tool_dirs)

# Build-time capabilities.
if config.tp_have_cuda:
    config.available_features.add("cuda")
if config.tp_have_mpi:
    config.available_features.add("mpi")
# sanitized: built with TP_SANITIZE; its libraries cannot be loaded into an
# uninstrumented program (stock mlir-opt) or linked into one (test/embed).
if getattr(config, "tp_sanitize", ""):
    config.available_features.add("sanitized")
# x86_64: the host is an x86-64 (tests that name x86 CPUs to tp-run --cpu).
if platform.machine() in ("x86_64", "AMD64"):
    config.available_features.add("x86_64")

# cuda-gpu: a usable NVIDIA GPU is present. Never set on the build machines
# or in CI; tests that only a device can run carry `REQUIRES: cuda-gpu`,
# GPU execution tests that the emulator runs too `REQUIRES: gpu-run`.
smi = shutil.which("nvidia-smi")
if smi:
    try:
        out = subprocess.run([smi, "-L"], capture_output=True, text=True,
                             timeout=20)
        if out.returncode == 0 and "GPU" in out.stdout:
            config.available_features.add("cuda-gpu")
    except (OSError, subprocess.SubprocessError):
        pass

# gpu-run: GPU programs can run here, on a GPU (cuda-gpu) or, in a build with
# CUDA, on the emulator (runtime/emu: the emulated libcuda.so.1,
# libnccl.so.2 and libcublas.so.13 under lib/mock-*). %gpu-env prefixes a
# command with what it needs to run on the emulator (nothing on a GPU):
# the emulated libraries first on LD_LIBRARY_PATH, 8 devices, 64 GiB each;
# %gpu-backend is tp-run's backend for one GPU per rank: cuda on a GPU,
# cuda-emu otherwise.
if "cuda-gpu" in config.available_features:
    config.available_features.add("gpu-run")
    config.substitutions.append(("%gpu-env", "env"))
    config.substitutions.append(("%gpu-backend", "cuda"))
elif config.tp_have_cuda:
    config.available_features.add("gpu-run")
    emu_dirs = ":".join(os.path.join(config.tp_obj_root, "lib", d)
                        for d in ("mock-cuda", "mock-nccl", "mock-cublas",
                                  "mock-cublaslt"))
    config.substitutions.append(
        ("%gpu-env", "env LD_LIBRARY_PATH=%s MOCK_CUDA_DEVICES=8 "
                     "MOCK_CUDA_MEMORY=68719476736" % emu_dirs))
    config.substitutions.append(("%gpu-backend", "cuda-emu"))

# unprivileged: permissions hold for `%unprivileged CMD`. Run as root, CMD
# runs as nobody (setpriv), when nobody can run this build's tp-run and read
# the test inputs; otherwise as the user running the suite.
def _unprivileged():
    if os.geteuid() != 0:
        return ""
    setpriv = shutil.which("setpriv")
    if not setpriv:
        return None
    prefix = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"]
    probe = ["sh", "-c", 'test -x "$1" && test -r "$2" && test -x "$3"', "-",
             os.path.join(config.tp_tools_dir, "tp-run"),
             os.path.join(config.tp_src_root, "test", "e2e", "Inputs",
                          "mm.mlir"),
             config.test_exec_root]
    try:
        if subprocess.run(prefix + probe, capture_output=True,
                          timeout=20).returncode == 0:
            return " ".join(prefix)
    except (OSError, subprocess.SubprocessError):
        pass
    return None


_tp_unprivileged = _unprivileged()
if _tp_unprivileged is not None:
    config.available_features.add("unprivileged")
    config.substitutions.append(("%unprivileged", _tp_unprivileged))

# torch and torch-mlir: a python with torch, transformers and safetensors
# (the `torch` feature: tp_opt.parallelize's tests, test/python) and also
# torch-mlir (the `torch-mlir` feature: utils/tp-import and tp_opt.plan,
# which export through it) is at hand: $TP_TORCH_PYTHON, else the developer
# venv /root/tpvenv/bin/python. Never set in CI; those tests carry
# `REQUIRES: torch` or `REQUIRES: torch-mlir`. %torch_python runs it.
def _torch_python():
    for cand in (os.environ.get("TP_TORCH_PYTHON"), "/root/tpvenv/bin/python"):
        if not cand or not os.access(cand, os.X_OK):
            continue
        try:
            out = subprocess.run(
                [cand, "-c", "import torch, transformers, safetensors\n"
                 "try:\n import torch_mlir; print('mlir')\n"
                 "except ImportError: print('no')"],
                capture_output=True, timeout=120, text=True)
            if out.returncode == 0:
                return cand, out.stdout.strip() == "mlir"
        except (OSError, subprocess.SubprocessError):
            pass
    return None, False


_tp_torch_python, _tp_torch_mlir = _torch_python()
if _tp_torch_python:
    config.available_features.add("torch")
    config.environment["TP_TORCH_PYTHON"] = _tp_torch_python
if _tp_torch_mlir:
    config.available_features.add("torch-mlir")
# tp_opt (python/) runs this build's tp-opt.
config.environment["TP_OPT_BIN"] = config.tp_tools_dir
# tp-import's self-check runs this build's tp-run.
config.environment["TP_RUN"] = os.path.join(config.tp_tools_dir, "tp-run")
config.substitutions.append(("%torch_python",
                             _tp_torch_python or "false torch-python"))
