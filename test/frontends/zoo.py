#!/usr/bin/env python3
"""The Hugging Face zoo through tp-import, as a new user would run it
(docs/frontends.md, "The zoo"; issue 29).

For each architecture: a tiny random config built here in code (nothing is
downloaded), `save_pretrained` into a folder (safetensors, f32 unless the
entry says bf16), then

  utils/tp-import FOLDER --seq 16 -o model.mlir --reference ref.safetensors
  build/bin/tp-run model.mlir --tp 2 --checkpoint FOLDER --reference ref.safetensors
  build/bin/tp-run model.mlir --tp 4 --checkpoint FOLDER --reference ref.safetensors

(tp-import's own self-check runs the module at tp=1 first). Prints one row
per architecture: import (ok, or the error), the plan at tp=2 and tp=4
(collectives per step), the relative error against PyTorch at tp=2 and
tp=4 (limit 1e-5 for f32 outputs, 2e-2 for bf16), and the verdict;
--markdown prints the table of docs/frontends.md.

  test/frontends/zoo.py                    # all (~30-60 minutes on 2 cores)
  test/frontends/zoo.py llama mixtral t5   # some (names from --list)
  test/frontends/zoo.py --list

Needs torch, torch-mlir, transformers and safetensors: run it with that
python, or it finds one ($TP_TORCH_PYTHON, /root/tpvenv/bin/python) and
re-runs itself with it; without one it prints why and exits 0 (skipped).
Needs build/bin/tp-run (--tp-run) and Open MPI for tp=2 and 4. Exits 1 when
an architecture expected to pass does not.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# Tiny shapes: hidden 64, 8 heads of 8 (4 kv heads where the model has
# them), 2 layers, intermediate 128, vocab 256, 64 positions: every head,
# kv head, intermediate and vocab count divisible by 2 and 4.
H, HEADS, KV, LAYERS, INTER, VOCAB, POS = 64, 8, 4, 2, 128, 256, 64
DECODER = dict(hidden_size=H, num_attention_heads=HEADS,
               num_key_value_heads=KV, num_hidden_layers=LAYERS,
               intermediate_size=INTER, vocab_size=VOCAB,
               max_position_embeddings=POS)
TOKENS = dict(pad_token_id=0, bos_token_id=1, eos_token_id=2)
MOE = dict(num_experts_per_tok=2, moe_intermediate_size=32)
# Whisper's encoder takes 16 mel bins x 64 frames (2 x max_source_positions).
WHISPER = dict(d_model=H, encoder_attention_heads=HEADS,
               decoder_attention_heads=HEADS, encoder_layers=LAYERS,
               decoder_layers=LAYERS, encoder_ffn_dim=INTER,
               decoder_ffn_dim=INTER, vocab_size=VOCAB,
               max_target_positions=POS, num_mel_bins=16,
               max_source_positions=32, decoder_start_token_id=1, **TOKENS)

# name, model class, config, extra tp-import options, dtype of the folder.
ZOO = [
    ("gpt2", "GPT2LMHeadModel",
     dict(n_embd=H, n_head=HEADS, n_layer=LAYERS, n_inner=INTER,
          vocab_size=VOCAB, n_positions=POS, bos_token_id=0, eos_token_id=0)),
    ("gpt-neo", "GPTNeoForCausalLM",
     dict(hidden_size=H, num_heads=HEADS, num_layers=LAYERS,
          attention_types=[[["global", "local"], 1]], window_size=8,
          intermediate_size=INTER, vocab_size=VOCAB,
          max_position_embeddings=POS)),
    ("gpt-j", "GPTJForCausalLM",
     dict(n_embd=H, n_head=HEADS, n_layer=LAYERS, n_inner=INTER,
          rotary_dim=4, vocab_size=VOCAB, n_positions=POS)),
    ("gpt-neox", "GPTNeoXForCausalLM",
     dict(DECODER, num_key_value_heads=None, rotary_pct=0.5)),
    ("bloom", "BloomForCausalLM",
     dict(hidden_size=H, n_head=HEADS, n_layer=LAYERS, vocab_size=VOCAB)),
    ("opt", "OPTForCausalLM",
     dict(hidden_size=H, num_attention_heads=HEADS, num_hidden_layers=LAYERS,
          ffn_dim=INTER, word_embed_proj_dim=H, vocab_size=VOCAB,
          max_position_embeddings=POS, pad_token_id=1, bos_token_id=2,
          eos_token_id=2)),
    ("falcon", "FalconForCausalLM",
     dict(hidden_size=H, num_attention_heads=HEADS, num_hidden_layers=LAYERS,
          vocab_size=VOCAB, new_decoder_architecture=True, num_kv_heads=KV)),
    ("llama", "LlamaForCausalLM", dict(DECODER, **TOKENS)),
    ("mistral", "MistralForCausalLM",
     dict(DECODER, sliding_window=8, **TOKENS)),
    ("qwen2", "Qwen2ForCausalLM", dict(DECODER, **TOKENS)),
    ("qwen3", "Qwen3ForCausalLM", dict(DECODER, head_dim=8, **TOKENS)),
    ("phi", "PhiForCausalLM",
     dict(DECODER, num_key_value_heads=HEADS, partial_rotary_factor=0.5)),
    ("phi3", "Phi3ForCausalLM",
     dict(DECODER, original_max_position_embeddings=POS, **TOKENS)),
    ("stablelm", "StableLmForCausalLM", dict(DECODER)),
    ("olmo", "OlmoForCausalLM", dict(DECODER, **TOKENS)),
    ("olmo2", "Olmo2ForCausalLM", dict(DECODER, **TOKENS)),
    ("granite", "GraniteForCausalLM", dict(DECODER, **TOKENS)),
    ("cohere", "CohereForCausalLM", dict(DECODER, **TOKENS)),
    ("mpt", "MptForCausalLM",
     dict(d_model=H, n_heads=HEADS, n_layers=LAYERS, expansion_ratio=2,
          vocab_size=VOCAB, max_seq_len=POS)),
    ("codegen", "CodeGenForCausalLM",
     dict(n_embd=H, n_head=HEADS, n_layer=LAYERS, n_inner=INTER,
          rotary_dim=4, vocab_size=VOCAB, n_positions=POS, n_ctx=POS)),
    ("gemma", "GemmaForCausalLM", dict(DECODER, head_dim=8, **TOKENS)),
    ("gemma2", "Gemma2ForCausalLM",
     dict(DECODER, head_dim=8, sliding_window=8, **TOKENS)),
    ("gemma3-text", "Gemma3ForCausalLM",
     dict(DECODER, head_dim=8, sliding_window=8, **TOKENS)),
    ("starcoder2", "Starcoder2ForCausalLM", dict(DECODER, **TOKENS)),
    ("mamba", "MambaForCausalLM",
     dict(hidden_size=H, state_size=8, num_hidden_layers=LAYERS,
          expand=2, conv_kernel=4, vocab_size=VOCAB)),
    ("rwkv", "RwkvForCausalLM",
     dict(hidden_size=H, attention_hidden_size=H, intermediate_size=INTER,
          num_hidden_layers=LAYERS, vocab_size=VOCAB, context_length=POS)),
    ("mixtral", "MixtralForCausalLM",
     dict(DECODER, num_local_experts=4, num_experts_per_tok=2, **TOKENS)),
    ("qwen2-moe", "Qwen2MoeForCausalLM",
     dict(DECODER, num_experts=4, shared_expert_intermediate_size=64,
          **MOE, **TOKENS)),
    ("qwen3-moe", "Qwen3MoeForCausalLM",
     dict(DECODER, head_dim=8, num_experts=4, **MOE, **TOKENS)),
    ("deepseek-v2", "DeepseekV2ForCausalLM",
     dict(DECODER, num_key_value_heads=HEADS, kv_lora_rank=16,
          q_lora_rank=None, qk_rope_head_dim=8, qk_nope_head_dim=8,
          v_head_dim=8, n_routed_experts=4, n_shared_experts=1,
          first_k_dense_replace=1, **MOE, **TOKENS)),
    ("deepseek-v3", "DeepseekV3ForCausalLM",
     dict(DECODER, num_key_value_heads=HEADS, kv_lora_rank=16,
          q_lora_rank=32, qk_rope_head_dim=8, qk_nope_head_dim=8,
          v_head_dim=8, n_routed_experts=8, n_shared_experts=1, n_group=2,
          topk_group=1, first_k_dense_replace=1, **MOE, **TOKENS)),
    ("bert", "BertForMaskedLM",
     dict(hidden_size=H, num_attention_heads=HEADS, num_hidden_layers=LAYERS,
          intermediate_size=INTER, vocab_size=VOCAB,
          max_position_embeddings=POS, type_vocab_size=2)),
    ("roberta", "RobertaForMaskedLM",
     dict(hidden_size=H, num_attention_heads=HEADS, num_hidden_layers=LAYERS,
          intermediate_size=INTER, vocab_size=VOCAB,
          max_position_embeddings=POS + 2, type_vocab_size=1,
          pad_token_id=1)),
    ("distilbert", "DistilBertForMaskedLM",
     dict(dim=H, n_heads=HEADS, n_layers=LAYERS, hidden_dim=INTER,
          vocab_size=VOCAB, max_position_embeddings=POS)),
    ("bart", "BartForConditionalGeneration",
     dict(d_model=H, encoder_attention_heads=HEADS,
          decoder_attention_heads=HEADS, encoder_layers=LAYERS,
          decoder_layers=LAYERS, encoder_ffn_dim=INTER, decoder_ffn_dim=INTER,
          vocab_size=VOCAB, max_position_embeddings=POS)),
    ("t5", "T5ForConditionalGeneration",
     dict(d_model=H, d_kv=8, d_ff=INTER, num_layers=LAYERS,
          num_decoder_layers=LAYERS, num_heads=HEADS, vocab_size=VOCAB,
          decoder_start_token_id=0)),
    ("t5-encoder", "T5EncoderModel",
     dict(d_model=H, d_kv=8, d_ff=INTER, num_layers=LAYERS, num_heads=HEADS,
          vocab_size=VOCAB)),
    ("whisper-decoder", "WhisperForCausalLM",
     WHISPER),
    ("whisper", "WhisperForConditionalGeneration",
     WHISPER),
    ("vit", "ViTForImageClassification",
     dict(hidden_size=H, num_attention_heads=HEADS, num_hidden_layers=LAYERS,
          intermediate_size=INTER, image_size=32, patch_size=8,
          num_channels=3, num_labels=8)),
]
# Variants: a bf16 folder imported in f32 (the Hub's usual dtype), a bf16
# export (its limit is 2e-2; Mixtral's: its experts' 16-bit products routed),
# an attention mask.
VARIANTS = [
    ("llama-bf16-folder", "llama", dict(folder_dtype="bf16")),
    ("gpt2-bf16-folder", "gpt2", dict(folder_dtype="bf16")),
    ("qwen2-bf16-folder", "qwen2", dict(folder_dtype="bf16")),
    ("llama-bf16-export", "llama", dict(args=["--dtype", "bf16"])),
    ("bert-mask", "bert", dict(args=["--attention-mask"])),
    ("mixtral-grouped-mm", "mixtral",
     dict(args=["--experts-implementation", "grouped_mm"])),
    ("mixtral-bf16-export", "mixtral", dict(args=["--dtype", "bf16"])),
]


def entries():
    out = [dict(name=n, cls=c, config=cfg, args=[], folder_dtype="f32")
           for n, c, cfg in ZOO]
    by_name = {e["name"]: e for e in out}
    for name, base, extra in VARIANTS:
        e = dict(by_name[base])
        e["name"] = name
        e["args"] = list(extra.get("args", []))
        e["folder_dtype"] = extra.get("folder_dtype", "f32")
        out.append(e)
    return out


def find_torch_python():
    for cand in (os.environ.get("TP_TORCH_PYTHON"), "/root/tpvenv/bin/python"):
        if cand and os.access(cand, os.X_OK):
            r = subprocess.run([cand, "-c", "import torch, torch_mlir, "
                                "transformers, safetensors"],
                               capture_output=True)
            if r.returncode == 0:
                return cand
    return None


def have_torch():
    try:
        import torch, torch_mlir, transformers, safetensors  # noqa: F401
        return True
    except ImportError:
        return False


def save_folder(e, folder, seed=0):
    import torch
    import transformers
    transformers.utils.logging.disable_progress_bar()
    cls = getattr(transformers, e["cls"])
    config = cls.config_class(**e["config"])
    torch.manual_seed(seed)
    model = cls(config).eval()
    if e["folder_dtype"] == "bf16":
        model = model.to(torch.bfloat16)
    model.save_pretrained(folder)


PLAN = re.compile(r"^plan: (\d+) all-reduce, (\d+) all-gather, (\d+) "
                  r"reduce-scatter, (\d+) all-to-all")
MATCH = re.compile(r"^(\S+): (?:matches reference to|differs from reference "
                   r"by) (\S+) \(relative, limit (\S+)\)")


def short(text, n=160):
    text = " ".join(text.split())
    return text if len(text) <= n else text[:n - 3] + "..."


def run_tp(tp_run, mlir, folder, ref, tp, work):
    r = subprocess.run([tp_run, mlir, "--tp", str(tp), "--checkpoint", folder,
                        "--reference", ref, "--work-dir", work],
                       capture_output=True, text=True, cwd=ROOT)
    plan, errors = None, []
    for line in r.stdout.splitlines():
        m = PLAN.match(line)
        if m:
            ar, ag, rs, a2a = (int(x) for x in m.groups())
            plan = "%d AR, %d AG%s%s" % (ar, ag, ", %d RS" % rs if rs else "",
                                         ", %d A2A" % a2a if a2a else "")
        m = MATCH.match(line)
        if m:
            errors.append((m.group(1), float(m.group(2)), float(m.group(3))))
    ok = r.returncode == 0 and errors and all(e <= l for _, e, l in errors)
    why = ""
    if not ok:
        err = [l for l in r.stderr.splitlines() if l.strip()]
        why = short(err[-1] if err else "exit %d" % r.returncode)
    worst = max((e for _, e, _ in errors), default=None)
    return ok, plan, worst, why


def run_entry(e, python, tp_run, work, seq):
    folder = os.path.join(work, "folder")
    mlir = os.path.join(work, "model.mlir")
    ref = os.path.join(work, "ref.safetensors")
    row = dict(name=e["name"], cls=e["cls"], folder_dtype=e["folder_dtype"],
               args=e["args"], imported=False, error="", plan={}, err={},
               ok={})
    t0 = time.time()
    try:
        save_folder(e, folder)
    except Exception as ex:
        row["error"] = short("save_pretrained: %s: %s" % (type(ex).__name__, ex))
        return row
    cmd = [python, os.path.join(ROOT, "utils", "tp-import"), folder,
           "--seq", str(seq), "-o", mlir, "--reference", ref,
           "--tp-run", tp_run] + e["args"]
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    row["import_s"] = time.time() - t0
    if r.returncode != 0:
        err = [l for l in r.stderr.splitlines() if l.startswith("tp-import:")]
        row["error"] = short((err[-1] if err else r.stderr.strip()[-300:])
                             .replace("tp-import: error: ", ""), 400)
        return row
    row["imported"] = True
    m = re.search(r"self-check[^:]*: (.*)$", r.stderr, re.M)
    row["self_check"] = m.group(1) if m else ""
    for tp in (2, 4):
        ok, plan, worst, why = run_tp(tp_run, mlir, folder, ref, tp,
                                      os.path.join(work, "tp%d" % tp))
        row["ok"][tp], row["plan"][tp], row["err"][tp] = ok, plan, worst
        if not ok and not row["error"]:
            row["error"] = "tp=%d: %s" % (tp, why)
    row["total_s"] = time.time() - t0
    return row


def fmt_err(v):
    return "-" if v is None else "%.1e" % v


def table(rows, markdown):
    head = ["architecture", "class", "import", "plan tp=2", "plan tp=4",
            "tp=2", "tp=4", "result"]
    lines = []
    for r in rows:
        passed = r["imported"] and all(r["ok"].get(tp) for tp in (2, 4))
        name = r["name"]
        result = "pass" if passed else ("FAIL: " + r["error"])
        lines.append([name, r["cls"], "ok" if r["imported"] else "fails",
                      r["plan"].get(2) or "-", r["plan"].get(4) or "-",
                      fmt_err(r["err"].get(2)), fmt_err(r["err"].get(4)),
                      result])
    if markdown:
        out = ["| " + " | ".join(head) + " |",
               "|" + "|".join("---" for _ in head) + "|"]
        out += ["| " + " | ".join(l) + " |" for l in lines]
        return "\n".join(out)
    widths = [max(len(h), *(len(l[i]) for l in lines)) if lines else len(h)
              for i, h in enumerate(head)]
    out = ["  ".join(h.ljust(w) for h, w in zip(head, widths))]
    out += ["  ".join(c.ljust(w) for c, w in zip(l, widths)) for l in lines]
    return "\n".join(out)


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("names", nargs="*", help="architectures (default: all)")
    p.add_argument("--list", action="store_true")
    p.add_argument("--seq", type=int, default=16)
    p.add_argument("--tp-run", default=os.path.join(ROOT, "build", "bin",
                                                     "tp-run"))
    p.add_argument("--markdown", action="store_true",
                   help="print the table as Markdown")
    p.add_argument("--json", metavar="FILE", help="also write the rows")
    p.add_argument("--table-from", metavar="FILE",
                   help="print the table of an earlier run's --json file")
    p.add_argument("--keep", metavar="DIR",
                   help="keep each architecture's folder and module in DIR")
    p.add_argument("--save", metavar="DIR",
                   help="only save the folder of the one architecture named "
                        "into DIR (for tests)")
    args = p.parse_args()

    all_entries = entries()
    if args.table_from:
        with open(args.table_from) as f:
            rows = json.load(f)
        for r in rows:   # JSON keys are strings
            for k in ("plan", "err", "ok"):
                r[k] = {int(tp): v for tp, v in r[k].items()}
        print(table(rows, args.markdown))
        return 0
    if args.list:
        for e in all_entries:
            print("%-20s %-32s %s" % (e["name"], e["cls"],
                                      " ".join(e["args"]) or
                                      ("bf16 folder" if e["folder_dtype"] ==
                                       "bf16" else "")))
        return 0
    if not have_torch():
        python = find_torch_python()
        if python is None:
            print("zoo: skipped: no python with torch, torch-mlir, "
                  "transformers and safetensors (run this script with one, "
                  "or set TP_TORCH_PYTHON)")
            return 0
        os.execv(python, [python] + sys.argv)
    if args.save:
        known = {e["name"]: e for e in all_entries}
        if len(args.names) != 1 or args.names[0] not in known:
            sys.exit("zoo: --save takes one architecture (--list)")
        save_folder(known[args.names[0]], args.save)
        return 0
    if not os.access(args.tp_run, os.X_OK):
        print("zoo: skipped: no tp-run at %s (build it: ./scripts/build.sh, "
              "or pass --tp-run)" % args.tp_run)
        return 0
    chosen = all_entries
    if args.names:
        known = {e["name"]: e for e in all_entries}
        bad = [n for n in args.names if n not in known]
        if bad:
            sys.exit("zoo: unknown architectures: %s (--list)" % ", ".join(bad))
        chosen = [known[n] for n in args.names]

    rows = []
    base = args.keep or tempfile.mkdtemp(prefix="tp-zoo-")
    try:
        for e in chosen:
            work = os.path.join(base, e["name"])
            shutil.rmtree(work, ignore_errors=True)
            os.makedirs(work)
            row = run_entry(e, sys.executable, args.tp_run, work, args.seq)
            rows.append(row)
            passed = row["imported"] and all(row["ok"].get(tp) for tp in (2, 4))
            print("zoo: %-20s %s (%.0f s)%s" % (
                e["name"], "pass" if passed else "FAIL",
                row.get("total_s", row.get("import_s", 0)),
                "" if passed else ": " + row["error"]), flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
    print()
    print(table(rows, args.markdown))
    npass = sum(1 for r in rows if r["imported"] and
                all(r["ok"].get(tp) for tp in (2, 4)))
    print("\n%d of %d architectures pass at tp=2 and tp=4" % (npass, len(rows)))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0 if npass == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
