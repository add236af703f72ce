#!/usr/bin/env python3
"""One attention with a mask, spelled as torch-mlir exports Hugging Face's.

Usage: masked_attention.py [--dtype bf16|f32] [--batch B] [--heads H]
           [--kv-heads KV] [--seq S] [--head-dim D]
           [--mask none|causal|window] [--window W] [--fill min|ninf]
           [--pad left|right|none] [--pad-len P] [--pad-spelling and|bert]
           [--spelling add|select]

Prints a module whose @main(q [B, H, S, D], k [B, KV, S, D], v [B, KV, S, D])
returns the attention's output [B, S, H * D], written the way torch-mlir's
linalg-on-tensors export of an eager Hugging Face attention reads:

  * K and V repeated to H heads by a copy generic to [B, KV, H/KV, S, D] and
    a collapse_shape (repeat_kv), K transposed by linalg.transpose;
  * Q.K^T a linalg.batch_matmul on [B*H, S, D] x [B*H, D, S] into f32,
    truncated to bf16 for bf16 models, then times the scale (an f64
    constant truncated in the body);
  * the mask from index compares of arange generics (linalg.index):
    causal j <= i, a sliding window i - W < j <= i (Mistral, Gemma2), and
    the padding of batch element 1 from an attention_mask constant [B, S]
    of ones and zeros (left: its first P keys, right: its last P), and-ed
    into one i1 [B, 1, S, S] (transformers 5's masking_utils), or (bert)
    added as (1 - mask) * min on top of it (BERT's extended mask);
  * the fill: the dtype's lowest finite float (torch.finfo(dtype).min, the
    0-d constants of the export) or -inf;
  * `add`: scores + where(mask, 0, fill); `select`: where(mask, scores,
    fill) (masked_fill);
  * softmax in f32 (extf for bf16): max with argmax, sub, exp, sum, div,
    truncated back; P.V a second batch_matmul; the heads transposed back
    and collapsed.

Used by test/e2e/run-cuda-emu-masks.test, bench/attention-masks.sh and the
device bundle (scripts/gpu_check_prepare.py); masked_attention_mlir(argv)
returns the module's text.
"""

import argparse
import sys

MIN = {"bf16": "-3.38953139E+38", "f32": "-3.40282347E+38"}


def parser():
    p = argparse.ArgumentParser(description="One masked attention, spelled "
                                "as torch-mlir exports Hugging Face's.")
    p.add_argument("--dtype", default="bf16", choices=["bf16", "f32"])
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--heads", type=int, default=2)
    p.add_argument("--kv-heads", type=int, default=0)
    p.add_argument("--seq", type=int, default=130)
    p.add_argument("--head-dim", type=int, default=64)
    p.add_argument("--mask", default="causal",
                   choices=["none", "causal", "window"])
    p.add_argument("--window", type=int, default=16)
    p.add_argument("--fill", default="min", choices=["min", "ninf"])
    p.add_argument("--pad", default="none", choices=["none", "left", "right"])
    p.add_argument("--pad-len", type=int, default=70)
    p.add_argument("--pad-spelling", default="and", choices=["and", "bert"])
    p.add_argument("--spelling", default="add", choices=["add", "select"])
    return p


def masked_attention_mlir(argv=()):
    """The module for command-line arguments `argv` (see the usage)."""
    return emit(parser().parse_args(list(argv)))


def emit(a):
    t = a.dtype
    B, H, S, D = a.batch, a.heads, a.seq, a.head_dim
    KV = a.kv_heads or H
    G = H // KV
    BH = B * H
    fill = MIN[t] if a.fill == "min" else "0xFF80" if t == "bf16" else "0xFF800000"
    fill_attr = ("dense<%s>" % MIN[t]) if a.fill == "min" else (
        "dense<%s>" % fill)
    out = []
    w = out.append
    w("#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>")
    w("#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>")
    w("#id1 = affine_map<(d0) -> (d0)>")
    w("#rowstat = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, 0)>")
    w("#rowmax = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>")
    w("#rows = affine_map<(d0, d1, d2, d3) -> (0, 0, d2, 0)>")
    w("#cols = affine_map<(d0, d1, d2, d3) -> (0, 0, 0, d3)>")
    w("#bcols = affine_map<(d0, d1, d2, d3) -> (d0, 0, 0, d3)>")
    w("#scalar = affine_map<(d0, d1, d2, d3) -> ()>")
    w("#mask = affine_map<(d0, d1, d2, d3) -> (%s, 0, d2, d3)>" %
      ("d0" if a.pad != "none" else "0"))
    w("#kv5 = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3, d4)>")
    w("#id5 = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>")
    w("#cmask = affine_map<(d0, d1, d2, d3) -> (0, 0, d2, d3)>")
    w("module {")
    w("  func.func @main(%%q: tensor<%dx%dx%dx%dx%s> {tp.name = \"query\"}, "
      "%%k: tensor<%dx%dx%dx%dx%s> {tp.name = \"key\"}, "
      "%%v: tensor<%dx%dx%dx%dx%s> {tp.name = \"value\"}) -> "
      "(tensor<%dx%dx%dx%s> {tp.name = \"attn_output\"}) {"
      % (B, H, S, D, t, B, KV, S, D, t, B, KV, S, D, t, B, S, H * D, t))
    w("    %cst = arith.constant 0.000000e+00 : f32")
    w("    %cst_0 = arith.constant 0xFF800000 : f32")
    w("    %%cst_scale = arith.constant %.17E : f64" % (D ** -0.5))
    w("    %%cst_fill = arith.constant %s : tensor<%s>" % (fill_attr, t))
    w("    %%cst_zero = arith.constant dense<0.000000e+00> : tensor<%s>" % t)
    w("    %cst_one = arith.constant 1.000000e+00 : f32")
    w("    %c0_i64 = arith.constant 0 : i64")
    w("    %%c_w = arith.constant %d : i64" % a.window)
    # repeat_kv: [B, KV, S, D] -> [B, KV, G, S, D] -> [B, H, S, D].
    kv = {}
    for name in ("k", "v"):
        w("    %%%s_e = tensor.empty() : tensor<%dx%dx%dx%dx%dx%s>" %
          (name, B, KV, G, S, D, t))
        w("    %%%s_r = linalg.generic {indexing_maps = [#kv5, #id5], "
          "iterator_types = [\"parallel\", \"parallel\", \"parallel\", "
          "\"parallel\", \"parallel\"]} ins(%%%s : tensor<%dx%dx%dx%dx%s>) "
          "outs(%%%s_e : tensor<%dx%dx%dx%dx%dx%s>) {" %
          (name, name, B, KV, S, D, t, name, B, KV, G, S, D, t))
        w("    ^bb0(%%in: %s, %%out: %s):" % (t, t))
        w("      linalg.yield %%in : %s" % t)
        w("    } -> tensor<%dx%dx%dx%dx%dx%s>" % (B, KV, G, S, D, t))
        w("    %%%s_h = tensor.collapse_shape %%%s_r [[0], [1, 2], [3], [4]] : "
          "tensor<%dx%dx%dx%dx%dx%s> into tensor<%dx%dx%dx%dx%s>" %
          (name, name, B, KV, G, S, D, t, B, H, S, D, t))
        kv[name] = "%%%s_h" % name
    w("    %%kt_e = tensor.empty() : tensor<%dx%dx%dx%dx%s>" % (B, H, D, S, t))
    w("    %%kt = linalg.transpose ins(%s : tensor<%dx%dx%dx%dx%s>) "
      "outs(%%kt_e : tensor<%dx%dx%dx%dx%s>) permutation = [0, 1, 3, 2]" %
      (kv["k"], B, H, S, D, t, B, H, D, S, t))
    w("    %%q3 = tensor.collapse_shape %%q [[0, 1], [2], [3]] : "
      "tensor<%dx%dx%dx%dx%s> into tensor<%dx%dx%dx%s>" % (B, H, S, D, t, BH, S, D, t))
    w("    %%k3 = tensor.collapse_shape %%kt [[0, 1], [2], [3]] : "
      "tensor<%dx%dx%dx%dx%s> into tensor<%dx%dx%dx%s>" % (B, H, D, S, t, BH, D, S, t))
    w("    %%acc_e = tensor.empty() : tensor<%dx%dx%dxf32>" % (BH, S, S))
    w("    %%acc = linalg.fill ins(%%cst : f32) outs(%%acc_e : tensor<%dx%dx%dxf32>) "
      "-> tensor<%dx%dx%dxf32>" % (BH, S, S, BH, S, S))
    w("    %%qk = linalg.batch_matmul ins(%%q3, %%k3 : tensor<%dx%dx%dx%s>, "
      "tensor<%dx%dx%dx%s>) outs(%%acc : tensor<%dx%dx%dxf32>) -> "
      "tensor<%dx%dx%dxf32>" % (BH, S, D, t, BH, D, S, t, BH, S, S, BH, S, S))
    scores = "%qk"
    if t != "f32":
        w("    %%qk_t_e = tensor.empty() : tensor<%dx%dx%dx%s>" % (BH, S, S, t))
        w("    %%qk_t = linalg.generic {indexing_maps = [#id3, #id3], "
          "iterator_types = [\"parallel\", \"parallel\", \"parallel\"]} "
          "ins(%%qk : tensor<%dx%dx%dxf32>) outs(%%qk_t_e : tensor<%dx%dx%dx%s>) {"
          % (BH, S, S, BH, S, S, t))
        w("    ^bb0(%%in: f32, %%out: %s):" % t)
        w("      %%0 = arith.truncf %%in : f32 to %s" % t)
        w("      linalg.yield %%0 : %s" % t)
        w("    } -> tensor<%dx%dx%dx%s>" % (BH, S, S, t))
        scores = "%qk_t"
    S4 = "tensor<%dx%dx%dx%dx%s>" % (B, H, S, S, t)
    w("    %%s4 = tensor.expand_shape %s [[0, 1], [2], [3]] output_shape [%d, %d, %d, %d] : "
      "tensor<%dx%dx%dx%s> into %s" % (scores, B, H, S, S, BH, S, S, t, S4))
    w("    %%s_e = tensor.empty() : %s" % S4)
    par4 = "[\"parallel\", \"parallel\", \"parallel\", \"parallel\"]"
    w("    %%scaled = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = %s} "
      "ins(%%s4 : %s) outs(%%s_e : %s) {" % (par4, S4, S4))
    w("    ^bb0(%%in: %s, %%out: %s):" % (t, t))
    w("      %%0 = arith.truncf %%cst_scale : f64 to %s" % t)
    w("      %%1 = arith.mulf %%in, %%0 : %s" % t)
    w("      linalg.yield %%1 : %s" % t)
    w("    } -> %s" % S4)

    # The boolean mask [MB, 1, S, S] (true: attend), from aranges.
    MB = B if a.pad != "none" else 1
    M4 = "tensor<%dx1x%dx%dxi1>" % (MB, S, S)
    w("    %%ar_e = tensor.empty() : tensor<%dxi64>" % S)
    w("    %%ar = linalg.generic {indexing_maps = [#id1], iterator_types = [\"parallel\"]} "
      "outs(%%ar_e : tensor<%dxi64>) {" % S)
    w("    ^bb0(%out: i64):")
    w("      %0 = linalg.index 0 : index")
    w("      %1 = arith.index_cast %0 : index to i64")
    w("      linalg.yield %1 : i64")
    w("    } -> tensor<%dxi64>" % S)
    w("    %%rows = tensor.expand_shape %%ar [[0, 1, 2, 3]] output_shape [1, 1, %d, 1] : "
      "tensor<%dxi64> into tensor<1x1x%dx1xi64>" % (S, S, S))
    w("    %%cols = tensor.expand_shape %%ar [[0, 1, 2, 3]] output_shape [1, 1, 1, %d] : "
      "tensor<%dxi64> into tensor<1x1x1x%dxi64>" % (S, S, S))
    C4 = "tensor<1x1x%dx%dxi1>" % (S, S)
    w("    %%c_e = tensor.empty() : %s" % C4)
    if MB != 1:
        w("    %%m_e = tensor.empty() : %s" % M4)
    cond, CB = None, 1
    if a.mask in ("causal", "window"):
        w("    %%causal = linalg.generic {indexing_maps = [#rows, #cols, #id4], "
          "iterator_types = %s} ins(%%rows, %%cols : tensor<1x1x%dx1xi64>, "
          "tensor<1x1x1x%dxi64>) outs(%%c_e : %s) {" % (par4, S, S, C4))
        w("    ^bb0(%in: i64, %in_0: i64, %out: i1):")
        w("      %0 = arith.cmpi sle, %in_0, %in : i64")
        if a.mask == "window":
            w("      %1 = arith.subi %in, %c_w : i64")
            w("      %2 = arith.cmpi sgt, %in_0, %1 : i64")
            w("      %3 = arith.andi %0, %2 : i1")
            w("      linalg.yield %3 : i1")
        else:
            w("      linalg.yield %0 : i1")
        w("    } -> %s" % C4)
        cond, CB = "%causal", 1
    pad_values = None
    if a.pad != "none":
        rows = []
        for b in range(B):
            r = [1] * S
            if b == 1:
                rng = range(a.pad_len) if a.pad == "left" else range(S - a.pad_len, S)
                for j in rng:
                    r[j] = 0
            rows.append("[" + ", ".join(str(x) for x in r) + "]")
        pad_values = "[" + ", ".join(rows) + "]"
        w("    %%attention_mask = arith.constant dense<%s> : tensor<%dx%dxi64>" %
          (pad_values, B, S))
        w("    %%am4 = tensor.expand_shape %%attention_mask [[0, 1, 2], [3]] output_shape [%d, 1, 1, %d] : "
          "tensor<%dx%dxi64> into tensor<%dx1x1x%dxi64>" % (B, S, B, S, B, S))
    if a.pad != "none" and a.pad_spelling == "and":
        ins = "%am4" + (", " + cond if cond else "")
        types = "tensor<%dx1x1x%dxi64>" % (B, S) + (", " + C4 if cond else "")
        maps = "#bcols, " + ("#cmask, " if cond else "") + "#id4"
        w("    %%padded = linalg.generic {indexing_maps = [%s], iterator_types = %s} "
          "ins(%s : %s) outs(%%m_e : %s) {" % (maps, par4, ins, types, M4))
        if cond:
            w("    ^bb0(%in: i64, %in_0: i1, %out: i1):")
        else:
            w("    ^bb0(%in: i64, %out: i1):")
        w("      %0 = arith.cmpi ne, %in, %c0_i64 : i64")
        if cond:
            w("      %1 = arith.andi %in_0, %0 : i1")
            w("      linalg.yield %1 : i1")
        else:
            w("      linalg.yield %0 : i1")
        w("    } -> %s" % M4)
        cond, CB = "%padded", B

    F4 = "tensor<%dx1x%dx%dx%s>" % (CB, S, S, t) if cond else None
    M4 = "tensor<%dx1x%dx%dxi1>" % (CB, S, S) if cond else None
    cmap = "#mask" if cond and CB != 1 else "#cmask"
    masked = "%scaled"
    if cond and a.spelling == "add":
        w("    %%f_e = tensor.empty() : %s" % F4)
        w("    %%fmask = linalg.generic {indexing_maps = [#id4, #scalar, #scalar, #id4], "
          "iterator_types = %s} ins(%s, %%cst_zero, %%cst_fill : %s, tensor<%s>, tensor<%s>) "
          "outs(%%f_e : %s) {" % (par4, cond, M4, t, t, F4))
        w("    ^bb0(%%in: i1, %%in_0: %s, %%in_1: %s, %%out: %s):" % (t, t, t))
        w("      %%0 = arith.select %%in, %%in_0, %%in_1 : %s" % t)
        w("      linalg.yield %%0 : %s" % t)
        w("    } -> %s" % F4)
        w("    %%masked = linalg.generic {indexing_maps = [#id4, %s, #id4], "
          "iterator_types = %s} ins(%%scaled, %%fmask : %s, %s) outs(%%s_e : %s) {" %
          (cmap, par4, S4, F4, S4))
        w("    ^bb0(%%in: %s, %%in_0: %s, %%out: %s):" % (t, t, t))
        w("      %%0 = arith.addf %%in, %%in_0 : %s" % t)
        w("      linalg.yield %%0 : %s" % t)
        w("    } -> %s" % S4)
        masked = "%masked"
    elif cond:
        w("    %%masked = linalg.generic {indexing_maps = [#id4, %s, #scalar, #id4], "
          "iterator_types = %s} ins(%%scaled, %s, %%cst_fill : %s, %s, tensor<%s>) "
          "outs(%%s_e : %s) {" % (cmap, par4, cond, S4, M4, t, S4))
        w("    ^bb0(%%in: %s, %%in_0: i1, %%in_1: %s, %%out: %s):" % (t, t, t))
        w("      %%0 = arith.select %%in_0, %%in, %%in_1 : %s" % t)
        w("      linalg.yield %%0 : %s" % t)
        w("    } -> %s" % S4)
        masked = "%masked"
    if a.pad != "none" and a.pad_spelling == "bert":
        # BERT's extended mask: (1.0 - mask) * min, [B, 1, 1, S], added.
        w("    %%ext_e = tensor.empty() : tensor<%dx1x1x%dx%s>" % (B, S, t))
        w("    %%ext = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = %s} "
          "ins(%%am4 : tensor<%dx1x1x%dxi64>) outs(%%ext_e : tensor<%dx1x1x%dx%s>) {" %
          (par4, B, S, B, S, t))
        w("    ^bb0(%%in: i64, %%out: %s):" % t)
        w("      %0 = arith.sitofp %in : i64 to f32")
        w("      %1 = arith.subf %cst_one, %0 : f32")
        w("      %%2 = arith.constant %s : f32" % MIN[t])
        w("      %3 = arith.mulf %1, %2 : f32")
        if t != "f32":
            w("      %%4 = arith.truncf %%3 : f32 to %s" % t)
            w("      linalg.yield %%4 : %s" % t)
        else:
            w("      linalg.yield %3 : f32")
        w("    } -> tensor<%dx1x1x%dx%s>" % (B, S, t))
        w("    %%bert = linalg.generic {indexing_maps = [#id4, #bcols, #id4], "
          "iterator_types = %s} ins(%s, %%ext : %s, tensor<%dx1x1x%dx%s>) outs(%%s_e : %s) {" %
          (par4, masked, S4, B, S, t, S4))
        w("    ^bb0(%%in: %s, %%in_0: %s, %%out: %s):" % (t, t, t))
        w("      %%0 = arith.addf %%in, %%in_0 : %s" % t)
        w("      linalg.yield %%0 : %s" % t)
        w("    } -> %s" % S4)
        masked = "%bert"

    # softmax(dim=-1, dtype=float32)
    X4 = "tensor<%dx%dx%dx%dxf32>" % (B, H, S, S)
    if t != "f32":
        w("    %%x_e = tensor.empty() : %s" % X4)
        w("    %%x = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = %s} "
          "ins(%s : %s) outs(%%x_e : %s) {" % (par4, masked, S4, X4))
        w("    ^bb0(%%in: %s, %%out: f32):" % t)
        w("      %%0 = arith.extf %%in : %s to f32" % t)
        w("      linalg.yield %0 : f32")
        w("    } -> %s" % X4)
        x = "%x"
    else:
        w("    %%x_e = tensor.empty() : %s" % X4)
        x = masked
    R3 = "tensor<%dx%dx%dxf32>" % (B, H, S)
    I3 = "tensor<%dx%dx%dxi64>" % (B, H, S)
    R4 = "tensor<%dx%dx%dx1xf32>" % (B, H, S)
    w("    %%mx_e = tensor.empty() : %s" % R3)
    w("    %%ix_e = tensor.empty() : %s" % I3)
    w("    %%mx_f = linalg.fill ins(%%cst_0 : f32) outs(%%mx_e : %s) -> %s" % (R3, R3))
    w("    %%ix_f = linalg.fill ins(%%c0_i64 : i64) outs(%%ix_e : %s) -> %s" % (I3, I3))
    w("    %%mx:2 = linalg.generic {indexing_maps = [#id4, #rowmax, #rowmax], "
      "iterator_types = [\"parallel\", \"parallel\", \"parallel\", \"reduction\"]} "
      "ins(%s : %s) outs(%%mx_f, %%ix_f : %s, %s) {" % (x, X4, R3, I3))
    w("    ^bb0(%in: f32, %out: f32, %out_0: i64):")
    w("      %0 = linalg.index 3 : index")
    w("      %1 = arith.index_cast %0 : index to i64")
    w("      %2 = arith.maximumf %in, %out : f32")
    w("      %3 = arith.cmpf ogt, %in, %out : f32")
    w("      %4 = arith.select %3, %1, %out_0 : i64")
    w("      linalg.yield %2, %4 : f32, i64")
    w("    } -> (%s, %s)" % (R3, I3))
    w("    %%mx4 = tensor.expand_shape %%mx#0 [[0], [1], [2, 3]] output_shape [%d, %d, %d, 1] : "
      "%s into %s" % (B, H, S, R3, R4))
    w("    %%sub = linalg.generic {indexing_maps = [#id4, #rowstat, #id4], iterator_types = %s} "
      "ins(%s, %%mx4 : %s, %s) outs(%%x_e : %s) {" % (par4, x, X4, R4, X4))
    w("    ^bb0(%in: f32, %in_0: f32, %out: f32):")
    w("      %0 = arith.subf %in, %in_0 : f32")
    w("      linalg.yield %0 : f32")
    w("    } -> %s" % X4)
    w("    %%exp = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = %s} "
      "ins(%%sub : %s) outs(%%x_e : %s) {" % (par4, X4, X4))
    w("    ^bb0(%in: f32, %out: f32):")
    w("      %0 = math.exp %in : f32")
    w("      linalg.yield %0 : f32")
    w("    } -> %s" % X4)
    w("    %%sum_e = tensor.empty() : %s" % R4)
    w("    %%sum_f = linalg.fill ins(%%cst : f32) outs(%%sum_e : %s) -> %s" % (R4, R4))
    w("    %%sum = linalg.generic {indexing_maps = [#id4, #rowstat], "
      "iterator_types = [\"parallel\", \"parallel\", \"parallel\", \"reduction\"]} "
      "ins(%%exp : %s) outs(%%sum_f : %s) {" % (X4, R4))
    w("    ^bb0(%in: f32, %out: f32):")
    w("      %0 = arith.addf %in, %out : f32")
    w("      linalg.yield %0 : f32")
    w("    } -> %s" % R4)
    w("    %%p = linalg.generic {indexing_maps = [#id4, #rowstat, #id4], iterator_types = %s} "
      "ins(%%exp, %%sum : %s, %s) outs(%%x_e : %s) {" % (par4, X4, R4, X4))
    w("    ^bb0(%in: f32, %in_0: f32, %out: f32):")
    w("      %0 = arith.divf %in, %in_0 : f32")
    w("      linalg.yield %0 : f32")
    w("    } -> %s" % X4)
    probs = "%p"
    if t != "f32":
        w("    %%p_t = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = %s} "
          "ins(%%p : %s) outs(%%s_e : %s) {" % (par4, X4, S4))
        w("    ^bb0(%%in: f32, %%out: %s):" % t)
        w("      %%0 = arith.truncf %%in : f32 to %s" % t)
        w("      linalg.yield %%0 : %s" % t)
        w("    } -> %s" % S4)
        probs = "%p_t"
    w("    %%p3 = tensor.collapse_shape %s [[0, 1], [2], [3]] : %s into tensor<%dx%dx%dx%s>" %
      (probs, S4, BH, S, S, t))
    w("    %%v3 = tensor.collapse_shape %s [[0, 1], [2], [3]] : tensor<%dx%dx%dx%dx%s> into "
      "tensor<%dx%dx%dx%s>" % (kv["v"], B, H, S, D, t, BH, S, D, t))
    w("    %%o_e = tensor.empty() : tensor<%dx%dx%dxf32>" % (BH, S, D))
    w("    %%o_f = linalg.fill ins(%%cst : f32) outs(%%o_e : tensor<%dx%dx%dxf32>) -> "
      "tensor<%dx%dx%dxf32>" % (BH, S, D, BH, S, D))
    w("    %%pv = linalg.batch_matmul ins(%%p3, %%v3 : tensor<%dx%dx%dx%s>, tensor<%dx%dx%dx%s>) "
      "outs(%%o_f : tensor<%dx%dx%dxf32>) -> tensor<%dx%dx%dxf32>" %
      (BH, S, S, t, BH, S, D, t, BH, S, D, BH, S, D))
    o = "%pv"
    if t != "f32":
        w("    %%pv_t_e = tensor.empty() : tensor<%dx%dx%dx%s>" % (BH, S, D, t))
        w("    %%pv_t = linalg.generic {indexing_maps = [#id3, #id3], "
          "iterator_types = [\"parallel\", \"parallel\", \"parallel\"]} "
          "ins(%%pv : tensor<%dx%dx%dxf32>) outs(%%pv_t_e : tensor<%dx%dx%dx%s>) {" %
          (BH, S, D, BH, S, D, t))
        w("    ^bb0(%%in: f32, %%out: %s):" % t)
        w("      %%0 = arith.truncf %%in : f32 to %s" % t)
        w("      linalg.yield %%0 : %s" % t)
        w("    } -> tensor<%dx%dx%dx%s>" % (BH, S, D, t))
        o = "%pv_t"
    w("    %%o4 = tensor.expand_shape %s [[0, 1], [2], [3]] output_shape [%d, %d, %d, %d] : "
      "tensor<%dx%dx%dx%s> into tensor<%dx%dx%dx%dx%s>" % (o, B, H, S, D, BH, S, D, t, B, H, S, D, t))
    w("    %%ot_e = tensor.empty() : tensor<%dx%dx%dx%dx%s>" % (B, S, H, D, t))
    w("    %%ot = linalg.transpose ins(%%o4 : tensor<%dx%dx%dx%dx%s>) outs(%%ot_e : "
      "tensor<%dx%dx%dx%dx%s>) permutation = [0, 2, 1, 3]" % (B, H, S, D, t, B, S, H, D, t))
    w("    %%res = tensor.collapse_shape %%ot [[0], [1], [2, 3]] : tensor<%dx%dx%dx%dx%s> into "
      "tensor<%dx%dx%dx%s>" % (B, S, H, D, t, B, S, H * D, t))
    w("    return %%res : tensor<%dx%dx%dx%s>" % (B, S, H * D, t))
    w("  }")
    w("}")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    sys.stdout.write(emit(parser().parse_args()))
