"""The export: a model and its example inputs in, torch-mlir's
linalg-on-tensors out, with `tp.param` / `tp.name` on @main's arguments and
`tp.name` on its results (docs/tp-import.md, "How the export works").

  1. The stored parameters (names.py) become inputs of a wrapper module
     whose forward converts them into the model's parameters and calls
     `torch.func.functional_call(model, params, inputs)`; it returns the
     selected outputs (and the loss with with_loss). The same call, run
     eagerly, gives PyTorch's reference outputs.
  2. `torch.export.export(wrapper, (*inputs, *stored), strict=False)`;
     complex values, if any, are rewritten into real pairs
     (decompositions.complex_to_real) and the result exported again.
  3. `run_decompositions` with torch-mlir's table and tp-import's rewrites
     (decompositions.table).
  4. Non-persistent buffers go into the program's state dict (torch-mlir's
     importer otherwise fails with "Could not find state mapping for
     buffer").
  5. `torch_mlir.fx.export_and_import(..., output_type="linalg-on-tensors")`
     and the attributes set through torch-mlir's Python bindings.
  6. Ops outside the upstream dialects are an error.

A failure of torch.export or torch-mlir becomes one ExportError line naming
the op (and the model source line) and what to try.
"""

import os
import re
import sys
import traceback

from . import decompositions
from . import inputs as inputs_mod
from . import names as names_mod
from .models import TPImportError


class ExportError(TPImportError):
    pass


UPSTREAM = {"func", "linalg", "tensor", "arith", "math", "cf", "builtin",
            "affine", "scf", "bufferization", "complex", "ml_program"}


def foreign_ops(text):
    ops = set()
    text = text.split("\n{-#", 1)[0]   # not the dialect_resources blobs
    for m in re.finditer(r"^\s*(?:%[\w:#, %]*=\s*)?\"?([a-z_]\w*)\.([\w.]+)",
                         text, re.M):
        if m.group(1) not in UPSTREAM:
            ops.add(m.group(1) + "." + m.group(2))
    return sorted(ops)


class Result:
    def __init__(self, text, arg_names, result_names, reference, stored):
        self.text = text                  # the module (no header)
        self.arg_names = arg_names        # inputs, then parameters
        self.result_names = result_names
        self.reference = reference        # {name: tensor}: inputs, outputs
        self.stored = stored              # names.StoredParameters


def make_wrapper(torch, model, is_hf, inputs, stored, result_names,
                 with_loss):
    n_in = len(inputs.names)

    class TPImportWrapper(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, *args):
            xs, ps = args[:n_in], args[n_in:]
            out = call_model(torch, self.m, is_hf, inputs, xs, stored, ps)
            results = inputs_mod.select(out, result_names)
            if with_loss:
                ids = xs[inputs.names.index("input_ids")]
                results.append(next_token_loss(torch, results[0], ids))
            return tuple(results)

    return TPImportWrapper(model)


def next_token_loss(torch, logits, ids):
    """Mean next-token cross-entropy: position t predicts token t+1
    (logsumexp minus the gathered target logit, in f32)."""
    v = logits.shape[-1]
    pred = logits[:, :-1, :].reshape(-1, v).float()
    labels = ids[:, 1:].reshape(-1)
    lse = torch.logsumexp(pred, dim=-1)
    picked = torch.gather(pred, 1, labels.unsqueeze(1)).squeeze(1)
    return (lse - picked).mean()


def _user_frame(tb):
    """'modeling_mixtral.py:123 (forward)': the innermost frame of the
    model's code (not torch's) in a traceback."""
    frames = traceback.extract_tb(tb)
    for f in reversed(frames):
        p = f.filename
        if "/torch/" in p or "/torch_mlir/" in p or "tp_opt/importer" in p or \
                "/functorch/" in p:
            continue
        return "%s:%d (%s)" % (p.rsplit("/", 1)[-1], f.lineno, f.name)
    return None


HINTS = [
    (r"histc|sort|topk|grouped_mm|index_put|scatter|nonzero|bincount",
     "the experts code of a MoE model: try --experts-implementation "
     "batched_mm (docs/tp-import.md, \"Mixture of experts\")"),
    (r"scaled_dot_product|flash_attention|efficient_attention",
     "try --attn-implementation eager"),
]
GENERIC_HINT = ("add a decomposition to python/tp_opt/importer/decompositions.py "
                "(docs/tp-import.md, \"Decompositions\"), or pass "
                "--allow-non-upstream to keep the op and inspect the IR")


def _hint(op):
    for pattern, hint in HINTS:
        if re.search(pattern, op):
            return hint
    return GENERIC_HINT


def torch_mlir_error(e, diagnostics=""):
    """One line for an exception out of torch-mlir (and the diagnostics MLIR
    printed): the first error, the op that did not lower and its model
    source line, what to try."""
    if "ml_dtypes" in str(e):   # a bf16 constant (a buffer) to write
        return ("torch-mlir needs the Python package ml_dtypes to write the "
                "model's bf16 constants (buffers): pip install ml_dtypes")
    text = diagnostics + "\n" + str(e)
    first = next((l for l in text.splitlines() if "error: " in l), "")
    loc = re.search(r'"([^"]+\.py)":(\d+)', first)
    where = " (%s:%s)" % (loc.group(1).rsplit("/", 1)[-1], loc.group(2)) \
        if loc else ""
    message = first.split("error: ", 1)[1].strip() if first else ""
    m = re.match(r"failed to legalize operation '([\w.]+)'", message)
    if m:
        op = m.group(1)
        named = re.search(r'name = "([\w.]+)"', message)
        if op == "torch.operator" and named:   # an op torch-mlir does not know
            op = named.group(1)
        return "torch-mlir cannot lower %s%s: %s" % (op, where, _hint(op))
    if message:
        return "torch-mlir cannot lower the module%s: %s: %s" % (
            where, message[:200], _hint(message))
    return "torch-mlir failed (%s: %s): %s" % (
        type(e).__name__, str(e).strip().splitlines()[0][:200]
        if str(e).strip() else "", GENERIC_HINT)


def _fixed_experts(module):
    """A transformers model whose experts code cannot be switched
    (set_experts_implementation refuses its class: DBRX's experts loop over
    the experts `nonzero()` finds, in transformers 5)."""
    can = getattr(type(module), "_can_set_experts_implementation", None)
    if can is None:
        return False
    try:
        return not can()
    except Exception:
        return False


DATA_DEPENDENT = re.compile(r"data.dependent|GuardOnDataDependent|Could not "
                            r"guard|Could not extract|DynamicOutputShape")


def torch_export_error(e, module=None):
    """One line for a torch.export failure: where in the model, the first
    line of the error, what it means and what to try."""
    text = str(e).strip()
    first = next((l.strip() for l in text.splitlines() if l.strip()),
                 type(e).__name__)
    first = re.sub(r"\s*\(unhinted:.*$", "", first)[:200]
    if type(e).__name__ == "DynamicOutputShapeException":
        first = "the output shape of %s depends on its input's values" % first
    where = _user_frame(e.__traceback__)
    frames = " ".join("%s %s %s" % (f.filename, f.name, f.line or "")
                      for f in traceback.extract_tb(e.__traceback__))
    advice = "torch.export needs a forward without Python control flow on " \
             "tensor values"
    if DATA_DEPENDENT.search(type(e).__name__ + " " + text):
        advice = "a branch or a shape depends on tensor values"
    if re.search(r"moe|expert", frames, re.I):
        if module is not None and _fixed_experts(module):
            import transformers
            advice += ("; %s's experts have no other implementation in "
                       "transformers %s (--experts-implementation does not "
                       "apply to it), so tp-import cannot export it" % (
                           type(module).__name__, transformers.__version__))
        else:
            advice += "; try --experts-implementation batched_mm"
    return "torch.export cannot trace the model%s: %s: %s" % (
        " at " + where if where else "", first, advice)


def _probe_error(e):
    where = _user_frame(e.__traceback__)
    return TPImportError("the model fails in PyTorch on these inputs%s: %s: %s"
                         % (" at " + where if where else "", type(e).__name__,
                            str(e).strip().splitlines()[0][:200]
                            if str(e).strip() else ""))


def reference_outputs(torch, model, inputs, result_names, with_loss=False):
    """PyTorch's outputs {name: f32 tensor} of a model with weights on
    `inputs`, in the order of `result_names` (then the loss): what the
    self-check compares the module with."""
    stored = names_mod.stored_parameters(torch, model.module, model.is_hf)
    if model.is_hf:
        model.module.config.use_cache = False
    try:
        out = call_model(torch, model.module, model.is_hf, inputs,
                         inputs.tensors, stored, stored.tensors)
    except Exception as e:   # the model's own code, before any export
        raise _probe_error(e)
    outs = inputs_mod.select(out, result_names)
    if with_loss:
        outs.append(next_token_loss(
            torch, outs[0], inputs.tensors[inputs.names.index("input_ids")]))
    names = list(result_names) + (["loss"] if with_loss else [])
    return {n: _ref_tensor(torch, t) for n, t in zip(names, outs)}, stored


class _stage:
    """Adds the seconds of a `with` block to timings[name]."""

    def __init__(self, timings, name):
        self.timings, self.name = timings, name

    def __enter__(self):
        import time
        self.start = time.monotonic()

    def __exit__(self, *exc):
        import time
        if self.timings is not None:
            self.timings[self.name] = self.timings.get(self.name, 0.0) + \
                time.monotonic() - self.start
        return False


def export(torch, model, inputs, outputs=None, with_loss=False, skip=(),
           allow_non_upstream=False, eager=True, timings=None):
    """model: models.Model; inputs: inputs.Inputs; outputs: names or None.
    eager=False skips the eager run (a model too large to run here, at
    published shapes), and a model without weights (model.meta) has none:
    the outputs' names then come from a run on fake tensors (shapes only),
    and the Result's reference holds the inputs only. `timings` ({stage: seconds}) gets the seconds of
    torch.export, the decompositions, torch-mlir and the printing. Returns a
    Result. Raises ExportError."""
    from torch_mlir import fx, ir

    module, is_hf = model.module, model.is_hf
    if is_hf:
        module.config.use_cache = False
    stored = names_mod.stored_parameters(torch, module, is_hf)
    eager = eager and not getattr(model, "meta", False)

    # The traced parameters: the stored tensors, or fake tensors of their
    # shapes when there are no weights (or no eager run is wanted).
    fake_mode = None
    params = stored.tensors
    if not eager:
        from .meta import fake_tensors
        fake_mode, params = fake_tensors(torch, stored.tensors)

    # The eager run: output names and PyTorch's reference.
    if eager:
        try:
            probe_out = call_model(torch, module, is_hf, inputs,
                                   inputs.tensors, stored, stored.tensors)
        except Exception as e:   # the model's own code, before any export
            raise _probe_error(e)
        result_names = inputs_mod.output_names(probe_out, outputs)
    else:   # the outputs' structure from a run on fake tensors
        try:
            with fake_mode:
                probe_out = call_model(torch, module, is_hf, inputs,
                                       inputs.tensors, stored, params)
        except Exception as e:
            # A shape that depends on values stops torch.export alike.
            if DATA_DEPENDENT.search("%s %s" % (type(e).__name__, e)):
                raise ExportError(torch_export_error(e, module))
            raise _probe_error(e)
        result_names = inputs_mod.output_names(probe_out, outputs)
    if with_loss:
        if "input_ids" not in inputs.names or result_names[0] != "logits":
            raise TPImportError("--with-loss needs an input_ids input and "
                                "logits as the first output")
    wrapper = make_wrapper(torch, module, is_hf, inputs, stored, result_names,
                           with_loss).eval()
    args = tuple(inputs.tensors) + tuple(params)
    outs = inputs_mod.select(probe_out, result_names) if eager else []
    if with_loss and eager:
        outs.append(next_token_loss(
            torch, outs[0], inputs.tensors[inputs.names.index("input_ids")]))
    all_results = result_names + (["loss"] if with_loss else [])
    reference = {}
    for n, t in zip(inputs.names, inputs.tensors):
        reference[n] = _ref_tensor(torch, t)
    for n, t in zip(all_results, outs):
        reference[n] = _ref_tensor(torch, t)

    with _stage(timings, "torch.export"):
        try:
            prog = torch.export.export(wrapper, args, strict=False)
        except Exception as e:
            raise ExportError(torch_export_error(e, module))
        if decompositions.has_complex(prog.graph) and "complex" not in skip:
            gm = prog.module()
            try:
                decompositions.complex_to_real(torch, gm)
            except decompositions.ComplexRewriteError as e:
                raise ExportError(str(e) + ": " + GENERIC_HINT)
            try:
                prog = torch.export.export(gm, args, strict=False)
            except Exception as e:
                raise ExportError(torch_export_error(e, module))
    try:
        with _stage(timings, "decompositions"):
            prog = prog.run_decompositions(decompositions.table(torch, skip))
    except Exception as e:
        where = _user_frame(e.__traceback__)
        raise ExportError("the decompositions failed%s: %s: %s" % (
            " at " + where if where else "", type(e).__name__,
            str(e).strip().splitlines()[0][:240] if str(e).strip() else ""))

    # Buffers that are not in the state dict (non-persistent ones such as
    # Llama's rotary inv_freq) trip torch-mlir's importer: put them there,
    # after the decompositions, whose verifier rejects them.
    module_buffers = dict(wrapper.named_buffers(remove_duplicate=False))
    for spec in prog.graph_signature.input_specs:
        if spec.kind.name == "BUFFER" and spec.target not in prog.state_dict:
            if spec.target in prog.constants:
                prog.state_dict[spec.target] = prog.constants[spec.target]
            elif spec.target in module_buffers:
                prog.state_dict[spec.target] = module_buffers[spec.target]

    # MLIR prints its diagnostics on file descriptor 2 (a ~1 KB loc(...)
    # line each): keep them for the error message instead.
    with _captured_stderr() as captured, _stage(timings, "torch-mlir"):
        try:
            mod = fx.export_and_import(prog, output_type="linalg-on-tensors",
                                       func_name="main", decomposition_table={})
            error = None
        except Exception as e:
            error = e
    if error is not None:
        if os.environ.get("TP_IMPORT_VERBOSE"):
            sys.stderr.write(captured.text() + "\n" + str(error) + "\n")
        raise ExportError(torch_mlir_error(error, captured.text()))

    arg_names = list(inputs.names) + list(stored.names)
    with mod.context:
        main_fn = None
        for op in mod.body.operations:
            if op.operation.name == "func.func" and \
                    ir.StringAttr(op.attributes["sym_name"]).value == "main":
                main_fn = op
        if main_fn is None:
            raise ExportError("torch-mlir produced no @main")
        ftype = ir.FunctionType(
            ir.TypeAttr(main_fn.attributes["function_type"]).value)
        if len(ftype.inputs) != len(arg_names):
            raise ExportError("@main has %d arguments, expected %d inputs and "
                              "%d parameters" % (len(ftype.inputs),
                                                 len(inputs.names),
                                                 len(stored.names)))
        if len(ftype.results) != len(all_results):
            raise ExportError("@main has %d results, expected %d (%s)"
                              % (len(ftype.results), len(all_results),
                                 ", ".join(all_results)))
        attrs = [ir.DictAttr.get({"tp.name": ir.StringAttr.get(n)})
                 for n in inputs.names]
        for n in stored.names:
            attrs.append(ir.DictAttr.get({"tp.name": ir.StringAttr.get(n),
                                          "tp.param": ir.UnitAttr.get()}))
        main_fn.attributes["arg_attrs"] = ir.ArrayAttr.get(attrs)
        main_fn.attributes["res_attrs"] = ir.ArrayAttr.get(
            [ir.DictAttr.get({"tp.name": ir.StringAttr.get(r)})
             for r in all_results])
        with _stage(timings, "print"):
            text = str(mod)

    bad = foreign_ops(text)
    if bad and not allow_non_upstream:
        raise ExportError(
            "the exported module holds ops outside the upstream dialects: %s "
            "(%s)" % (", ".join(bad), _hint(" ".join(bad))))
    return Result(text, arg_names, all_results, reference, stored)


class _captured_stderr:
    """Redirects file descriptor 2 into a temporary file while active."""

    def __enter__(self):
        import tempfile
        sys.stderr.flush()
        self.file = tempfile.TemporaryFile(mode="w+b")
        self.saved = os.dup(2)
        os.dup2(self.file.fileno(), 2)
        return self

    def __exit__(self, *exc):
        sys.stderr.flush()
        os.dup2(self.saved, 2)
        os.close(self.saved)
        self.file.seek(0)
        self.data = self.file.read().decode("utf-8", "replace")
        self.file.close()
        return False

    def text(self):
        return self.data


def call_model(torch, module, is_hf, inputs, xs, stored, ps):
    """The model's own output on inputs `xs` and stored parameters `ps`."""
    params = stored.to_model(dict(zip(stored.names, ps)))
    if inputs.keyword:
        kwargs = dict(zip(inputs.names, xs))
        if is_hf:
            kwargs.update(use_cache=False, return_dict=True)
        return torch.func.functional_call(module, params, (), kwargs)
    return torch.func.functional_call(module, params, tuple(xs))


def _ref_tensor(torch, t):
    t = t.detach()
    if t.is_floating_point():
        t = t.float()
    return t.contiguous().clone()
