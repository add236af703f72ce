"""The tp-import command (utils/tp-import): options, then models.build,
inputs.make, exporter.export, the self-check, and the files written.
Importable without torch: `--help` works anywhere."""

import argparse
import importlib
import os
import shlex
import shutil
import sys
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


def main(argv):
    args = parser().parse_args(argv)
    validate(args)
    require(["torch", "torch_mlir", "transformers", "safetensors"]
            if not (":" in args.model and not os.path.isdir(args.model))
            else ["torch", "torch_mlir", "safetensors"])
    import torch
    from . import exporter, inputs as inputs_mod, models, selfcheck

    torch.set_grad_enabled(False)
    tp_run = None
    check = not args.no_check and not args.allow_non_upstream
    if check:
        try:
            tp_run = selfcheck.find_tp_run(args.tp_run)
        except TPImportError as e:
            die(str(e))
        if tp_run is None:
            die("the self-check needs tp-run, which is not built "
                "(./scripts/build.sh builds build/bin/tp-run; or pass "
                "--tp-run PATH, or --no-check to skip the check)")
    try:
        model = models.build(
            torch, args.model, dtype=args.dtype, config_json=args.config_json,
            layers=args.layers, model_class=args.model_class,
            module_kwargs=args.module_kwargs, seed=args.seed,
            attn_implementation=args.attn_implementation,
            experts_implementation=args.experts_implementation)
        dtype = getattr(torch, models.DTYPES[args.dtype])
        ins = inputs_mod.make(
            torch, model.module, model.is_hf, args.input, batch=args.batch,
            seq=args.seq, decoder_seq=args.decoder_seq, vocab=args.vocab,
            attention_mask=args.attention_mask, seed=args.seed, dtype=dtype)
        outputs = [o.strip() for o in args.outputs.split(",")] \
            if args.outputs else None
        result = exporter.export(
            torch, model, ins, outputs=outputs, with_loss=args.with_loss,
            skip=set(args.skip_decomposition),
            allow_non_upstream=args.allow_non_upstream)
    except TPImportError as e:
        die(str(e))

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
    text = header + result.text

    from safetensors.torch import save_file

    def weights_dict():
        return {n: t.float().contiguous().clone()
                for n, t in zip(result.stored.names, result.stored.tensors)}

    if check:
        tmp = tempfile.mkdtemp(prefix="tp-import-")
        try:
            mod_path = os.path.join(tmp, "model.mlir")
            with open(mod_path, "w") as f:
                f.write(text)
            ref_path = os.path.join(tmp, "reference.safetensors")
            save_file(result.reference, ref_path)
            # The folder itself when the names are its keys: the check then
            # also proves that tp-run --checkpoint FOLDER reads it.
            ckpt = model.folder if result.stored.as_saved else None
            if ckpt is None:
                ckpt = os.path.join(tmp, "weights.safetensors")
                save_file(weights_dict(), ckpt)
            lines = selfcheck.run(tp_run, mod_path, ckpt, ref_path,
                                  os.path.join(tmp, "run"),
                                  tolerance=args.check_tol)
        except TPImportError as e:
            die(str(e))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        sys.stderr.write("tp-import: self-check (tp-run at tp=1 on the CPU "
                         "against PyTorch): %s\n" % "; ".join(lines))

    if args.output == "-":
        sys.stdout.write(text)
    else:
        with open(args.output, "w") as f:
            f.write(text)
    if args.weights:
        save_file(weights_dict(), args.weights)
    if args.reference:
        save_file(result.reference, args.reference)
    return 0

