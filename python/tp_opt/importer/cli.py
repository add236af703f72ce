"""The tp-import command (utils/tp-import): options, then models.build,
inputs.make, exporter.export, the self-check, and the files written.
Importable without torch: `--help` works anywhere."""

import argparse
import atexit
import importlib
import os
import shlex
import shutil
import sys
import signal
import tempfile

from .decompositions import NAMES
from .models import DTYPES, EXPERTS, TPImportError

INSTALL_HINT = ("pip install torch==2.15.0 torch-mlir==20261001 "
                "transformers==5.23.0 safetensors")

DESCRIPTION = """\
Export a model's forward to MLIR linalg-on-tensors through torch-mlir, with
the weights as function arguments. Each weight argument carries the unit
attribute `tp.param` and `tp.name = "<the key its checkpoint stores>"`;
each input argument `tp.name = "<input name>"` (input_ids, pixel_values,
...) and each result `tp.name = "<output field>"` (logits, ...; "loss" for
--with-loss). The export then checks itself: tp-run runs it at tp=1 on the
CPU against PyTorch on the same inputs, and nothing is written if they
disagree (--no-check skips this).

MODEL is one of:
  a Hugging Face model folder    (config.json + *.safetensors; from_pretrained)
  a transformers name            (model type `llama`, config class
                                  `LlamaConfig` or model class
                                  `LlamaForCausalLM`; random init from the
                                  config, overridden by --config-json)
  a Python nn.Module             (`package.module:Class` or
                                  `path/to/file.py:Class`; built with
                                  --module-kwargs)
"""

EPILOG = """\
examples:
  utils/tp-import gpt2 --config-json '{"n_embd": 64, "n_head": 8, "n_layer": 2,
      "vocab_size": 256, "n_positions": 64}' --seq 8 \\
      -o gpt2-tiny.mlir --weights gpt2-tiny.safetensors \\
      --reference gpt2-tiny.ref.safetensors
  utils/tp-import path/to/t5-folder --seq 16 --decoder-seq 8 -o t5.mlir
  utils/tp-import path/to/vit-folder -o vit.mlir     # pixel_values from the config
  utils/tp-import path/to/whisper-folder --input input_features=1x80x3000 -o w.mlir

Requires: """ + INSTALL_HINT + "\n"


def die(msg, code=1):
    sys.stderr.write("tp-import: error: %s\n" % msg)
    sys.exit(code)


def parser():
    p = argparse.ArgumentParser(
        prog="tp-import", description=DESCRIPTION, epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", metavar="MODEL",
                   help="Hugging Face folder, transformers name, or module:Class")
    p.add_argument("-o", "--output", metavar="OUT.mlir", default="-",
                   help="where to write the MLIR (default: stdout)")
    p.add_argument("--weights", metavar="OUT.safetensors",
                   help="write the parameters (f32, under the keys "
                        "save_pretrained stores them by, in argument order)")
    p.add_argument("--reference", metavar="OUT.safetensors",
                   help="write the example inputs and PyTorch's outputs "
                        "(computed in --dtype, stored in f32)")
    p.add_argument("--seq", type=int, default=8,
                   help="sequence length of id and mask inputs (8)")
    p.add_argument("--batch", type=int, default=1, help="batch size (1)")
    p.add_argument("--decoder-seq", type=int, metavar="N",
                   help="length of an encoder-decoder's decoder_input_ids "
                        "(default: --seq)")
    p.add_argument("--input", metavar="NAME[=SHAPE[xDTYPE]]", action="append",
                   default=[],
                   help="an input of the forward and its shape, e.g. "
                        "pixel_values=1x3x224x224, input_features=1x80x3000, "
                        "x=2x8x16xf32 (repeatable; a transformers model's "
                        "defaults are its main input, decoder_input_ids and "
                        "--attention-mask; a module's, input_ids)")
    p.add_argument("--attention-mask", action="store_true",
                   help="also pass attention_mask [batch, seq] (an argument of "
                        "@main; the example is all ones but for a left-padded "
                        "last row)")
    p.add_argument("--outputs", metavar="NAMES",
                   help="comma-separated output fields to return, e.g. "
                        "last_hidden_state or logits,encoder_last_hidden_state "
                        "(default: logits, else the first tensor field)")
    p.add_argument("--layers", type=int, metavar="K",
                   help="keep the first K blocks (sets num_hidden_layers, and "
                        "an encoder-decoder's encoder and decoder layers)")
    p.add_argument("--dtype", choices=sorted(DTYPES), default="f32",
                   help="parameter and compute dtype of the export (f32)")
    p.add_argument("--config-json", metavar="JSON", action="append", default=[],
                   help="config overrides: a JSON object or @file.json "
                        "(repeatable, later wins)")
    p.add_argument("--model-class", metavar="NAME",
                   help="transformers model class to build (default: the "
                        "config's `architectures`, else AutoModelForCausalLM, "
                        "...ForSeq2SeqLM, ...ForMaskedLM, "
                        "...ForImageClassification, AutoModel)")
    p.add_argument("--module-kwargs", metavar="JSON", default="{}",
                   help="constructor keyword arguments for module:Class")
    p.add_argument("--vocab", type=int,
                   help="id inputs are drawn from [0, VOCAB) (default: the "
                        "config's vocab_size, else the first nn.Embedding's "
                        "size)")
    p.add_argument("--seed", type=int, default=0,
                   help="seed of the random init and of the inputs (0)")
    p.add_argument("--with-loss", action="store_true",
                   help="also return the mean next-token cross-entropy of the "
                        "logits against the input ids shifted by one")
    p.add_argument("--attn-implementation", default="eager",
                   help="transformers attention implementation (eager; sdpa "
                        "lowers to tm_tensor ops that MLIR 22 cannot parse)")
    p.add_argument("--experts-implementation", choices=EXPERTS,
                   default="batched_mm",
                   help="transformers' MoE experts code: batched_mm (default: "
                        "gathers each token's expert weights, a batched "
                        "matmul), grouped_mm (sorts tokens by expert, grouped "
                        "matmuls; exported through tp-import's "
                        "decompositions), eager (a loop over nonzero(): "
                        "torch.export cannot trace it)")
    p.add_argument("--no-check", action="store_true",
                   help="skip the self-check (tp-run at tp=1 against "
                        "PyTorch)")
    p.add_argument("--check-layers", type=int, metavar="K",
                   help="self-check the first K blocks only (embedding, K "
                        "blocks and head, with the checkpoint's own weights, "
                        "against PyTorch running the same truncated model); "
                        "the default when the whole model does not fit in "
                        "memory (K=2)")
    p.add_argument("--report", metavar="FILE.json",
                   help="write the seconds of each stage, peak memory and "
                        "what the self-check covered as JSON")
    p.add_argument("--check-tol", type=float, metavar="R",
                   help="the self-check's relative error limit (default: "
                        "1e-5 for f32 outputs, 2e-2 for bf16 and f16)")
    p.add_argument("--tp-run", metavar="PATH",
                   help="the tp-run of the self-check (default: $TP_RUN, "
                        "else build/bin/tp-run of this checkout, else PATH)")
    p.add_argument("--skip-decomposition", metavar="NAME", action="append",
                   default=[],
                   help="leave out one of tp-import's rewrites (%s), to see "
                        "torch-mlir's own lowering" % ", ".join(NAMES))
    p.add_argument("--allow-non-upstream", action="store_true",
                   help="write the module even when it holds ops outside the "
                        "upstream dialects (tm_tensor, torch); implies "
                        "--no-check")
    p.add_argument("--no-header", action="store_true",
                   help="omit the `// Generated by:` header")
    return p


def require(modules):
    missing = []
    for m in modules:
        try:
            importlib.import_module(m)
        except ImportError as e:
            missing.append("%s (%s)" % (m, e))
    if missing:
        sys.stderr.write(
            "tp-import: error: missing Python packages: %s\n"
            "tp-import needs torch, torch-mlir, transformers and safetensors; "
            "install them in a virtual environment with:\n"
            "  python3 -m venv ~/tpvenv && ~/tpvenv/bin/%s\n"
            "and run tp-import with that python (~/tpvenv/bin/python "
            "utils/tp-import ...).\n" % (", ".join(missing), INSTALL_HINT))
        sys.exit(1)


def torch_mlir_version():
    try:
        import importlib.metadata as md
        return md.version("torch-mlir")
    except Exception:
        return "unknown"


def validate(args):
    if args.seq < 1 or args.batch < 1:
        die("--seq and --batch must be at least 1")
    if args.seq < 2 and args.with_loss:
        die("--with-loss needs --seq >= 2")
    if args.decoder_seq is not None and args.decoder_seq < 1:
        die("--decoder-seq must be at least 1")
    if args.layers is not None and args.layers < 1:
        die("--layers must be at least 1")
    if args.check_layers is not None and args.check_layers < 1:
        die("--check-layers must be at least 1")
    if args.check_layers is not None and (args.no_check or
                                          args.allow_non_upstream):
        die("--check-layers asks for a self-check, which %s skips"
            % ("--no-check" if args.no_check else "--allow-non-upstream"))
    if args.check_tol is not None and not args.check_tol >= 0:
        die("--check-tol must be a non-negative number")
    bad = [s for s in args.skip_decomposition if s not in NAMES]
    if bad:
        die("--skip-decomposition %s: not one of %s"
            % (", ".join(bad), ", ".join(NAMES)))
    from . import inputs
    for s in args.input:
        try:
            inputs.parse_input(s)
        except TPImportError as e:
            die(str(e))


_private_temp = None


def private_temp():
    """torch makes $TMPDIR/torchinductor_<user> (its inductor cache, found
    through tempfile.gettempdir() whatever TORCHINDUCTOR_CACHE_DIR says)
    and leaves it behind. tp-import compiles nothing with inductor, so its
    temporary files, torch's included, go into one folder of its own,
    removed at exit. SIGTERM and SIGHUP end tp-import through Python's
    exit, so that the folder goes then too (and a self-check's tp-run is
    killed)."""
    global _private_temp
    if _private_temp:     # once a process (tp-import-batch.py runs many)
        return
    folder = _private_temp = tempfile.mkdtemp(prefix="tp-import-")
    atexit.register(shutil.rmtree, folder, True)
    tempfile.tempdir = folder
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR",
                          os.path.join(folder, "torchinductor"))
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda number, frame: sys.exit(128 + number))


def main(argv):
    args = parser().parse_args(argv)
    validate(args)
    private_temp()
    require(["torch", "torch_mlir", "transformers", "safetensors"]
            if not (":" in args.model and not os.path.isdir(args.model))
            else ["torch", "torch_mlir", "safetensors"])
    import torch
    from . import exporter, inputs as inputs_mod, meta, models, resources

    torch.set_grad_enabled(False)
    clock = resources.Stages()
    tp_run = None
    check = not args.no_check and not args.allow_non_upstream
    if check:
        try:
            tp_run = selfcheck_tool(args)
        except models.TPImportError as e:
            die(str(e))
    # Files are written at the end, after minutes of work: a folder that
    # is not there is an error now.
    for flag, path in (("-o", args.output), ("--weights", args.weights),
                       ("--reference", args.reference),
                       ("--report", args.report)):
        if path and path != "-":
            folder = os.path.dirname(os.path.abspath(path))
            if not os.path.isdir(folder):
                die("%s %s: the folder %s does not exist" % (flag, path,
                                                             folder))
            if os.path.isdir(path):
                die("%s %s is a folder, not a file" % (flag, path))
    outputs = [o.strip() for o in args.outputs.split(",")] \
        if args.outputs else None
    dtype = getattr(torch, models.DTYPES[args.dtype])

    def build(layers, with_weights):
        return models.build(
            torch, args.model, dtype=args.dtype, config_json=args.config_json,
            layers=layers, model_class=args.model_class,
            module_kwargs=args.module_kwargs, seed=args.seed,
            attn_implementation=args.attn_implementation,
            experts_implementation=args.experts_implementation,
            meta=not with_weights)

    def make_inputs(model):
        return inputs_mod.make(
            torch, model.module, model.is_hf, args.input, batch=args.batch,
            seq=args.seq, decoder_seq=args.decoder_seq, vocab=args.vocab,
            attention_mask=args.attention_mask, seed=args.seed, dtype=dtype)

    def export(model, ins, timings=None):
        return exporter.export(
            torch, model, ins, outputs=outputs, with_loss=args.with_loss,
            skip=set(args.skip_decomposition),
            allow_non_upstream=args.allow_non_upstream, timings=timings)

    report = {"model": args.model, "stages": clock.seconds}
    real = None          # the model with its weights, once built
    try:
        # The export, from shapes alone (meta.py): the parameters have no
        # storage, whatever the model's size.
        with clock.stage("build"):
            try:
                model = build(args.layers, False)
            except meta.MissingBuffers as e:
                n = getattr(e, "parameter_bytes", 0) + resources.MARGIN
                if not resources.fits(resources.Need(n, n)):
                    die("%s, and the model with its weights (%s) does not fit "
                        "the %s available" % (
                            e, resources.gb(n),
                            resources.gb(resources.available())))
                sys.stderr.write("tp-import: warning: %s; building the model "
                                 "with its weights\n" % e)
                model = real = build(args.layers, True)
        report.update(parameters=sum(p.numel() for p in
                                     model.module.parameters()),
                      parameter_bytes=model.parameter_bytes(),
                      layers=model.layer_count())
        if model.checkpoint is not None and model.checkpoint.missing:
            # A config-only folder imports from shapes alone; the weights
            # it lacks are what the self-check and the files need.
            if check or args.weights or args.reference:
                die("%s: the self-check, --weights and --reference need them "
                    "(--no-check imports the model from config.json alone)"
                    % model.checkpoint.missing)
            sys.stderr.write("tp-import: warning: %s: the module is written "
                             "from config.json alone; tp-run --checkpoint "
                             "needs a folder with the weights\n"
                             % model.checkpoint.missing)
        elif model.checkpoint is not None:
            # Before minutes of export: the folder stores every argument.
            from .names import stored_parameters
            st = stored_parameters(torch, model.module, True)
            if st.as_saved:
                model.checkpoint.check_arguments(
                    st.names, [t.shape for t in st.tensors])
        ins = make_inputs(model)
        result = export(model, ins, clock.seconds)

        # The full model with weights: for --weights and --reference, and
        # for the full self-check.
        need_real = bool(args.weights or args.reference)
        if need_real:
            files_need = resources.needed_for_files(model, bool(args.weights))
            if not resources.fits(files_need):
                die("--weights and --reference need the model with its "
                    "weights (%s), more than this machine has available "
                    "(%s)" % (resources.gb(files_need.total),
                              resources.gb(resources.available())))
        plan = check_plan(args, model, resources) if check \
            else {"mode": "off"}
        if need_real or plan["mode"] == "full":
            if real is None:
                with clock.stage("build with weights"):
                    real = build(args.layers, True)
        result_names = result.result_names[:len(result.result_names) - (
            1 if args.with_loss else 0)]
        reference = stored = None
        if real is not None and (need_real or plan["mode"] == "full"):
            with clock.stage("PyTorch reference"):
                reference, stored = exporter.reference_outputs(
                    torch, real, ins, result_names, with_loss=args.with_loss)
        lines = []
        if plan["mode"] == "full":
            with clock.stage("self-check"):
                lines = self_check(torch, args, tp_run, real, ins, result,
                                   reference, stored)
        elif plan["mode"] == "prefix":
            k = plan["layers"]
            with clock.stage("self-check"):
                small = build(k, False)
                small_ins = make_inputs(small)
                small_result = export(small, small_ins)
                small_real = build(k, True)
                ref, st = exporter.reference_outputs(
                    torch, small_real, small_ins, result_names,
                    with_loss=args.with_loss)
                try:
                    lines = self_check(torch, args, tp_run, small_real,
                                       small_ins, small_result, ref, st)
                except models.TPImportError as e:
                    raise models.TPImportError(str(e).replace(
                        "self-check failed:", "self-check of the first %d of "
                        "%d layers failed:" % (k, plan["of"]), 1))
                del small_real, ref, st
    except models.TPImportError as e:
        die(str(e))

    if plan["mode"] == "full":
        sys.stderr.write("tp-import: self-check (tp-run at tp=1 on the CPU "
                         "against PyTorch): %s\n" % "; ".join(lines))
    elif plan["mode"] == "prefix":
        sys.stderr.write(
            "tp-import: self-check of the first %d of %d layers (tp-run at "
            "tp=1 on the CPU against PyTorch running the same %d layers%s; "
            "%s): %s\n" % (
                plan["layers"], plan["of"], plan["layers"],
                ", with the checkpoint's weights" if model.folder else "",
                plan["why"], "; ".join(lines)))
    elif plan["mode"] == "skipped":
        sys.stderr.write("tp-import: warning: not self-checked: %s\n"
                         % plan["why"])
    plan["outputs"] = lines
    report["check"] = plan

    header = ""
    if not args.no_header:
        try:
            import transformers
            tv = transformers.__version__
        except ImportError:
            tv = "none"
        header = ("// Generated by: %s\n// torch %s, torch-mlir %s, "
                  "transformers %s\n"
                  % (shlex.join([sys.argv[0]] + list(argv)),
                     torch.__version__, torch_mlir_version(), tv))
        if plan["mode"] == "prefix":
            header += ("// Self-checked on its first %d of %d layers "
                       "(tp-import --check-layers)\n"
                       % (plan["layers"], plan["of"]))
        elif plan["mode"] == "skipped":
            header += "// Not self-checked: %s\n" % plan["why"]
    text = header + result.text

    from safetensors.torch import save_file
    with clock.stage("write"):
        if args.output == "-":
            sys.stdout.write(text)
        else:
            with open(args.output, "w") as f:
                f.write(text)
        if args.weights:
            save_file({n: t.float().contiguous().clone()
                       for n, t in zip(stored.names, stored.tensors)},
                      args.weights)
        if args.reference:
            ref = {n: exporter._ref_tensor(torch, t)
                   for n, t in zip(ins.names, ins.tensors)}
            ref.update(reference)
            save_file(ref, args.reference)
    report["peak_rss_bytes"] = resources.peak_rss()
    sys.stderr.write("tp-import: %s\n" % clock.line(report))
    if args.report:
        import json
        try:
            with open(args.report, "w") as f:
                json.dump(report, f, indent=1)
                f.write("\n")
        except OSError as e:
            die("--report %s: %s" % (args.report, e.strerror))
    return 0


def selfcheck_tool(args):
    from . import selfcheck
    tp_run = selfcheck.find_tp_run(args.tp_run)
    if tp_run is None:
        die("the self-check needs tp-run, which is not built "
            "(./scripts/build.sh builds build/bin/tp-run; or pass "
            "--tp-run PATH, or --no-check to skip the check)")
    return tp_run


def check_plan(args, model, resources):
    """What the self-check covers: {"mode": "full"} (the whole model),
    {"mode": "prefix", "layers": K, "of": N, "why": ...} (--check-layers,
    or a model too big for this machine), or {"mode": "skipped", "why":
    ...} (not even a prefix fits)."""
    n = model.layer_count()
    k = args.check_layers
    if k is not None:
        if n is None:
            die("--check-layers: %s has no layer count in its config (a "
                "plain module is checked whole)" % args.model)
        if k >= n:
            return {"mode": "full"}
        return {"mode": "prefix", "layers": k, "of": n,
                "why": "--check-layers %d" % k}
    full = resources.needed(model)
    if resources.fits(full):
        return {"mode": "full"}
    avail = resources.gb(resources.available())
    if n is None or n <= 1:
        return {"mode": "skipped",
                "why": "the model with its weights needs about %s, more than "
                       "the %s available" % (resources.gb(full.total), avail)}
    k = min(2, n - 1)
    part = resources.needed(model, prefix=k)
    if not resources.fits(part):
        return {"mode": "skipped",
                "why": "the model with its weights needs about %s, and its "
                       "first %d layers %s, more than the %s available; run "
                       "tp-import --check-layers %d where they fit" % (
                           resources.gb(full.total), k,
                           resources.gb(part.total), avail, k)}
    return {"mode": "prefix", "layers": k, "of": n,
            "why": "the whole model with its weights needs about %s, more "
                   "than the %s available" % (resources.gb(full.total), avail)}


def _unshared(tensors):
    """The tensors, each with storage of its own (safetensors refuses views
    of one storage: experts unstacked from one tensor)."""
    seen, out = set(), []
    for t in tensors:
        t = t.contiguous()
        key = t.untyped_storage().data_ptr()
        if key in seen:
            t = t.clone()
        seen.add(key)
        out.append(t)
    return out


def self_check(torch, args, tp_run, real, ins, result, reference, stored):
    """tp-run at tp=1 on `result.text` against PyTorch's `reference` outputs
    of `real` (the model with weights, whose stored parameters are
    `stored`) on `ins`; the per-output lines."""
    from safetensors.torch import save_file
    from . import exporter, selfcheck
    if stored.names != result.stored.names:
        raise selfcheck.CheckFailed(
            "self-check: the model with its weights has other parameters "
            "than the one exported from shapes (%d against %d arguments)"
            % (len(stored.names), len(result.stored.names)))
    tmp = tempfile.mkdtemp(prefix="tp-import-")
    try:
        mod_path = os.path.join(tmp, "model.mlir")
        with open(mod_path, "w") as f:
            f.write(result.text)
        ref_path = os.path.join(tmp, "reference.safetensors")
        ref = {n: exporter._ref_tensor(torch, t)
               for n, t in zip(ins.names, ins.tensors)}
        ref.update(reference)
        save_file(ref, ref_path)
        # The folder itself when the names are its keys: the check then
        # also proves that tp-run --checkpoint FOLDER reads it.
        ckpt = real.folder if stored.as_saved else None
        if ckpt is None:
            ckpt = os.path.join(tmp, "weights.safetensors")
            save_file(dict(zip(stored.names, _unshared(stored.tensors))),
                      ckpt)
        return selfcheck.run(tp_run, mod_path, ckpt, ref_path,
                             os.path.join(tmp, "run"),
                             tolerance=args.check_tol)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
