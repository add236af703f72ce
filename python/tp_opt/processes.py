"""tp_opt.launch and tp_opt.check (module tp_opt.processes): a plan run on N
local processes (docs/python.md, "launch and check").

launch(fn, nproc, *args) starts nproc Python processes (`python -m
tp_opt.processes JOB RANK`, not multiprocessing: the caller's script is not
imported again, so it needs no `if __name__ == "__main__"` guard), each in a
torch.distributed process group of nproc ranks (gloo by default; the
rendezvous is a file in a temporary folder, no port), and calls
fn(*args) there. fn and args travel pickled (torch.save): fn must be a
function a module defines (not a lambda, not the script's own), args
anything that pickles (a model, a Plan, tensors). It returns the list of
the ranks' return values; a rank that fails raises LaunchError with that
rank's last error line (its whole stderr is in the exception's `log`).

check(model, plan, args) is the question a user asks of a plan: it computes
the unsharded output in this process, launches as many processes as the
plan's mesh has devices, and in each builds the plan's DeviceMesh
(device_mesh), runs tp_opt.parallelize(model, plan, mesh) and the forward
under CommDebugMode; it returns a Check: the largest difference from the
unsharded output over the ranks, relative to its largest magnitude, and the
collectives PyTorch issued against the plan's, per kind. With
backward=True, one backward step of a loss (the output's sum of squares) is
run too and every parameter's gradient (the DTensor's whole tensor) is
compared with the unsharded model's.
"""

import os
import pickle
import re
import subprocess
import sys
import tempfile

from .importer.models import TPImportError


class LaunchError(TPImportError):
    def __init__(self, message, log=""):
        super().__init__(message)
        self.log = log


def device_mesh(plan, device_type="cpu"):
    """The DeviceMesh of `plan`'s mesh (its axes and sizes, major first),
    over the current process group."""
    from torch.distributed.device_mesh import init_device_mesh
    return init_device_mesh(device_type, tuple(plan.mesh.values()),
                            mesh_dim_names=tuple(plan.mesh))


def launch(fn, nproc, *args, backend="gloo", threads=None):
    """Runs fn(*args) in nproc processes of one process group (`backend`);
    returns their results, rank 0's first. threads: torch's intra-op
    threads per process (default: the cores shared out, at least 1)."""
    import torch
    if not isinstance(nproc, int) or nproc < 1:
        raise LaunchError("nproc=%r: a positive number of processes"
                          % (nproc,))
    if getattr(fn, "__module__", None) == "__main__" or \
            getattr(fn, "__name__", "") == "<lambda>":
        raise LaunchError(
            "%s: launch runs a function a module defines (the processes "
            "import it by name), not a lambda or the script's own"
            % getattr(fn, "__name__", fn))
    threads = threads or max(1, (os.cpu_count() or 1) // nproc)
    with tempfile.TemporaryDirectory(prefix="tp-opt-launch-") as tmp:
        job = os.path.join(tmp, "job.pt")
        torch.save({"fn": fn, "args": args, "nproc": nproc,
                    "backend": backend, "threads": threads,
                    "store": os.path.join(tmp, "store")}, job)
        env = dict(os.environ)
        # The children import this tp_opt (installed or from a checkout).
        here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        env["PYTHONPATH"] = os.pathsep.join(
            [here] + [p for p in [env.get("PYTHONPATH")] if p])
        procs = []
        for rank in range(nproc):
            err = open(os.path.join(tmp, "stderr.%d" % rank), "w")
            procs.append((subprocess.Popen(
                [sys.executable, "-m", "tp_opt.processes", job, str(rank)],
                env=env, stderr=err), err))
        codes = []
        for p, err in procs:
            codes.append(p.wait())
            err.close()
        for rank, code in enumerate(codes):
            if code != 0:
                with open(os.path.join(tmp, "stderr.%d" % rank)) as f:
                    log = f.read()
                lines = [re.sub(r"^\[rank\d+\]:\s*", "", l)
                         for l in log.splitlines() if l.strip()]
                raise LaunchError("rank %d of %d exited with %d: %s" % (
                    rank, nproc, code, lines[-1] if lines else
                    "no message"), log)
        out = []
        for rank in range(nproc):
            with open(os.path.join(tmp, "result.%d" % rank), "rb") as f:
                out.append(pickle.load(f))
        return out


def _rank_main(job, rank):
    import torch
    import torch.distributed as dist
    spec = torch.load(job, weights_only=False)
    torch.set_num_threads(spec["threads"])
    dist.init_process_group(spec["backend"], init_method="file://" +
                            spec["store"], rank=rank,
                            world_size=spec["nproc"])
    try:
        result = spec["fn"](*spec["args"])
        dist.barrier()
    finally:
        dist.destroy_process_group()
    with open(os.path.join(os.path.dirname(job), "result.%d" % rank),
              "wb") as f:
        pickle.dump(result, f)


def _tensor(out):
    """The tensor a forward returned: `logits` of a transformers output,
    else the first tensor."""
    import torch
    if isinstance(out, torch.Tensor):
        return out
    for key in ("logits", "last_hidden_state"):
        v = getattr(out, key, None)
        if isinstance(v, torch.Tensor):
            return v
    if isinstance(out, dict):
        out = list(out.values())
    for v in out:
        if isinstance(v, torch.Tensor):
            return v
    raise LaunchError("the model's output holds no tensor to compare (%s)"
                      % type(out).__name__)


def _rel(a, b):
    return ((a - b).abs().max() / b.abs().max().clamp_min(1e-30)).item()


def _loss(out):
    return _tensor(out).float().pow(2).sum()


def _grads(model):
    from torch.distributed.tensor import DTensor
    out = {}
    for n, p in model.named_parameters():
        if p.grad is not None:
            g = p.grad
            out[n] = g.full_tensor() if isinstance(g, DTensor) else g
    return out


def _check_rank(model, plan, args, kwargs, backward):
    import torch
    from torch.distributed.tensor.debug import CommDebugMode
    from .parallel import count_collectives, parallelize
    parallelize(model, plan, device_mesh(plan))
    with torch.set_grad_enabled(backward), CommDebugMode() as comm:
        out = model(*args, **kwargs)
    counts = count_collectives(comm)
    result = {"output": _tensor(out).detach(), "forward": counts,
              "whole": list(model._tp_opt_whole)}
    if backward:
        model.zero_grad()
        with CommDebugMode() as comm:
            _loss(out).backward()
        result["backward"] = count_collectives(comm)
        result["grads"] = _grads(model)
    return result


class Check:
    """What check() measured: error (the largest difference from the
    unsharded output over the ranks, relative to its largest magnitude),
    limit, ok, plan_collectives and torch_collectives ({kind: count}, one
    forward), difference (lines, empty when equal); with backward:
    grad_error (the largest over the parameters, each relative to its
    unsharded gradient's largest magnitude), grad_worst (that parameter),
    backward_collectives; whole: the fused parameters stored whole (their
    pieces laid out differently by the plan, see parallelize)."""

    def __init__(self, plan, error, limit, torch_counts, grad_error=None,
                 grad_worst=None, backward_counts=None, whole=()):
        from .parallel import compare
        self.mesh = dict(plan.mesh)
        self.error, self.limit = error, limit
        self.plan_collectives = plan.collectives()
        self.torch_collectives = torch_counts
        self.difference = compare(self.plan_collectives, torch_counts)
        self.grad_error, self.grad_worst = grad_error, grad_worst
        self.backward_collectives = backward_counts
        self.whole = list(whole)
        self.ok = error <= limit and (grad_error is None or
                                      grad_error <= limit)

    def __bool__(self):
        return self.ok

    def __str__(self):
        from .parallel import format_counts
        mesh = " x ".join("%s=%d" % kv for kv in self.mesh.items())
        if self.error <= self.limit:
            head = "%s: matches the unsharded model to %.1e" % (mesh,
                                                                self.error)
        else:
            head = "%s: DIFFERS from the unsharded model by %.1e" % (
                mesh, self.error)
        lines = [head + " (limit %.0e)" % self.limit,
                 "  collectives (forward): plan %s; PyTorch %s: %s" % (
                     format_counts(self.plan_collectives),
                     format_counts(self.torch_collectives),
                     "equal" if not self.difference else
                     "differ: " + "; ".join(self.difference))]
        if self.whole:
            lines.append("  stored whole on every device: " +
                         "; ".join(self.whole))
        if self.grad_error is not None:
            lines.append("  gradients %s the unsharded model's to %.1e "
                         "(worst: %s); backward collectives: %s" % (
                             "match" if self.grad_error <= self.limit else
                             "DIFFER FROM", self.grad_error, self.grad_worst,
                             format_counts(self.backward_collectives)))
        return "\n".join(lines)

    __repr__ = __str__


def check(model, plan, args=(), kwargs=None, limit=1e-5, backward=False):
    """Runs `plan` on as many local gloo processes as its mesh has devices
    (tp_opt.parallelize in each) and compares the output with the
    unsharded model's; returns a Check. args: the model's positional
    inputs (a tuple), kwargs its keyword inputs. The model travels to the
    processes pickled, so this is a check for models that fit one host."""
    import copy
    import math
    import torch
    from .parallel import check_arguments, executable
    check_arguments(torch, "tp_opt.check", model, plan)
    if isinstance(limit, bool) or not isinstance(limit, (int, float)) or \
            not math.isfinite(limit) or limit < 0:
        raise LaunchError("tp_opt.check: limit=%r: a finite relative error "
                          "of at least 0 (default 1e-5)" % (limit,))
    local = sorted({type(m).__name__ for m in model.modules()
                    if type(m).__module__ == "__main__"})
    if local:
        raise LaunchError(
            "tp_opt.check sends the model to its processes pickled, and "
            "they cannot import the class%s %s that the running script "
            "defines itself (__main__): define %s in a module of its own and "
            "import it from the script" % (
                "es" if len(local) > 1 else "", ", ".join(local),
                "them" if len(local) > 1 else "it"))
    executable(plan)
    if not isinstance(args, (tuple, list)):
        args = (args,)
    kwargs = kwargs or {}
    nproc = 1
    for n in plan.mesh.values():
        nproc *= n
    model.eval()
    reference = copy.deepcopy(model) if backward else model
    with torch.set_grad_enabled(backward):
        out = reference(*args, **kwargs)
    ref = _tensor(out).detach()
    ref_grads = {}
    if backward:
        _loss(out).backward()
        ref_grads = _grads(reference)
    results = launch(_check_rank, nproc, model, plan, tuple(args), kwargs,
                     backward)
    error = max(_rel(r["output"], ref) for r in results)
    grad_error = grad_worst = None
    if backward:
        grad_error = -1.0
        for r in results:
            missing = sorted(set(ref_grads) - set(r["grads"]))
            if missing:
                raise LaunchError("parallelized model has no gradient for "
                                  "%s" % ", ".join(missing[:3]))
            for n, g in ref_grads.items():
                e = _rel(r["grads"][n], g)
                if e > grad_error:
                    grad_error, grad_worst = e, n
    return Check(plan, error, limit, results[0]["forward"], grad_error,
                 grad_worst, results[0].get("backward"),
                 results[0]["whole"])


if __name__ == "__main__":
    _rank_main(sys.argv[1], int(sys.argv[2]))
