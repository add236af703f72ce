// RUN: tp-opt %s --split-input-file --tp-propagate="tp=4" | FileCheck %s
// RUN: tp-opt %s --split-input-file --tp-propagate="tp=4" -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// The planner on small hand-written programs: what each op is told to do.

// A GPT-2 MLP (biases, tanh GELU) at 4096 tokens: Megatron's split emerges.
// W1 and b1 are split by columns, W2 by rows; the second matmul leaves a
// partial sum that the bias add receives replicated (one all-reduce), so
// b2 is added once.
// CHECK-LABEL: func.func @gpt2_mlp
// CHECK-SAME: %{{.*}}: tensor<4096x1024xbf16> {tp.layout = #tp.layout<@tp, [-, -]>}
// CHECK-SAME: %{{.*}}: tensor<1024x4096xbf16> {tp.layout = #tp.layout<@tp, [-, "tp"]>, tp.param}
// CHECK-SAME: %{{.*}}: tensor<4096xbf16> {tp.layout = #tp.layout<@tp, ["tp"]>, tp.param}
// CHECK-SAME: %{{.*}}: tensor<4096x1024xbf16> {tp.layout = #tp.layout<@tp, ["tp", -]>, tp.param}
// CHECK-SAME: %{{.*}}: tensor<1024xbf16> {tp.layout = #tp.layout<@tp, [-]>, tp.param}
// CHECK: linalg.matmul {tp.operand_layouts = [#tp.layout<@tp, [-, -]>, #tp.layout<@tp, [-, "tp"]>, #tp.layout<@tp, [-, "tp"]>], tp.result_layouts = [#tp.layout<@tp, [-, "tp"]>]}
// CHECK: linalg.generic {{.*}}tp.result_layouts = [#tp.layout<@tp, [-, "tp"]>]
// CHECK: math.tanh {{.*}}tp.result_layouts = [#tp.layout<@tp, [-, "tp"]>]
// CHECK: linalg.matmul {tp.operand_layouts = [#tp.layout<@tp, [-, "tp"]>, #tp.layout<@tp, ["tp", -]>, #tp.layout<@tp, [-, -], partial = sum("tp")>], tp.result_layouts = [#tp.layout<@tp, [-, -], partial = sum("tp")>]}
// The bias add consumes the sum, not the partial terms.
// CHECK: linalg.generic {{.*}}tp.operand_layouts = [#tp.layout<@tp, [-, -]>, #tp.layout<@tp, [-]>, #tp.layout<@tp, [-, -]>], tp.result_layouts = [#tp.layout<@tp, [-, -]>]
// CHECK: return {tp.operand_layouts = [#tp.layout<@tp, [-, -]>]}
#row = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
func.func @gpt2_mlp(%x: tensor<4096x1024xbf16>,
                    %w1: tensor<1024x4096xbf16> {tp.param}, %b1: tensor<4096xbf16> {tp.param},
                    %w2: tensor<4096x1024xbf16> {tp.param}, %b2: tensor<1024xbf16> {tp.param})
    -> tensor<4096x1024xbf16> {
  %zero = arith.constant 0.0 : bf16
  %e1 = tensor.empty() : tensor<4096x4096xbf16>
  %f1 = linalg.fill ins(%zero : bf16) outs(%e1 : tensor<4096x4096xbf16>) -> tensor<4096x4096xbf16>
  %h = linalg.matmul ins(%x, %w1 : tensor<4096x1024xbf16>, tensor<1024x4096xbf16>) outs(%f1 : tensor<4096x4096xbf16>) -> tensor<4096x4096xbf16>
  %hb = linalg.generic {indexing_maps = [#row, #col, #row], iterator_types = ["parallel", "parallel"]}
      ins(%h, %b1 : tensor<4096x4096xbf16>, tensor<4096xbf16>) outs(%e1 : tensor<4096x4096xbf16>) {
  ^bb0(%a: bf16, %b: bf16, %o: bf16):
    %s = arith.addf %a, %b : bf16
    linalg.yield %s : bf16
  } -> tensor<4096x4096xbf16>
  %g = math.tanh %hb : tensor<4096x4096xbf16>
  %e2 = tensor.empty() : tensor<4096x1024xbf16>
  %f2 = linalg.fill ins(%zero : bf16) outs(%e2 : tensor<4096x1024xbf16>) -> tensor<4096x1024xbf16>
  %y = linalg.matmul ins(%g, %w2 : tensor<4096x4096xbf16>, tensor<4096x1024xbf16>) outs(%f2 : tensor<4096x1024xbf16>) -> tensor<4096x1024xbf16>
  %yb = linalg.generic {indexing_maps = [#row, #col, #row], iterator_types = ["parallel", "parallel"]}
      ins(%y, %b2 : tensor<4096x1024xbf16>, tensor<1024xbf16>) outs(%e2 : tensor<4096x1024xbf16>) {
  ^bb0(%a: bf16, %b: bf16, %o: bf16):
    %s = arith.addf %a, %b : bf16
    linalg.yield %s : bf16
  } -> tensor<4096x1024xbf16>
  return %yb : tensor<4096x1024xbf16>
}

// -----

// A pin on an inner value is respected: the value is produced in the pinned
// layout (the exp splits its rows, reading a free slice of the replicated
// input), and the result is gathered for the replicated return.
// CHECK-LABEL: func.func @pinned_rows
// CHECK: %[[Y:.*]] = math.exp %{{.*}} {tp.operand_layouts = [#tp.layout<@tp, ["tp", -]>], tp.result_layouts = [#tp.layout<@tp, ["tp", -]>]}
// CHECK: tp.annotate %[[Y]] layout <@tp, ["tp", -]> {tp.operand_layouts = [#tp.layout<@tp, ["tp", -]>], tp.result_layouts = [#tp.layout<@tp, ["tp", -]>]}
// CHECK: return {tp.operand_layouts = [#tp.layout<@tp, [-, -]>]}
tp.mesh @tp ["tp" = 4]
func.func @pinned_rows(%x: tensor<64x32xf32>) -> tensor<64x32xf32> {
  %y = math.exp %x : tensor<64x32xf32>
  %p = tp.annotate %y layout <@tp, ["tp", -]> : tensor<64x32xf32>
  %z = math.exp %p : tensor<64x32xf32>
  return %z : tensor<64x32xf32>
}

// -----

// A max-reduction over a split dimension leaves a partial max, and its
// init, whatever value it holds, is a valid partial max for free (max is
// idempotent: every device may start from the same init).
// CHECK-LABEL: func.func @partial_max
// CHECK-SAME: tensor<64x262144xf32> {tp.layout = #tp.layout<@tp, [-, "tp"]>}
// CHECK: linalg.fill
// CHECK: linalg.generic {{.*}}tp.operand_layouts = [#tp.layout<@tp, [-, "tp"]>, #tp.layout<@tp, [-], partial = max("tp")>]{{.*}}tp.result_layouts = [#tp.layout<@tp, [-], partial = max("tp")>]
// CHECK: return {tp.operand_layouts = [#tp.layout<@tp, [-]>]}
tp.mesh @tp ["tp" = 4]
func.func @partial_max(%x: tensor<64x262144xf32> {tp.layout = #tp.layout<@tp, [-, "tp"]>}) -> tensor<64xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<64xf32>
  %f = linalg.fill ins(%ninf : f32) outs(%e : tensor<64xf32>) -> tensor<64xf32>
  %m = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>],
                       iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<64x262144xf32>) outs(%f : tensor<64xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %r = arith.maximumf %in, %acc : f32
    linalg.yield %r : f32
  } -> tensor<64xf32>
  return %m : tensor<64xf32>
}

// -----

// Regression (front-end spellings of a max init: torch-mlir's
// -3.40282347E+38, a hand-written -1e30, or a finite value like 0): the
// vocabulary stays split and only the [tokens] maxima are reduced, whether
// the init is a fill or a constant tensor.
// CHECK-LABEL: func.func @max_init_spellings
// CHECK-COUNT-3: linalg.generic {{.*}}tp.result_layouts = [#tp.layout<@tp, [-], partial = max("tp")>]
// CHECK: return {tp.operand_layouts = [#tp.layout<@tp, [-]>, #tp.layout<@tp, [-]>, #tp.layout<@tp, [-]>]}
tp.mesh @tp ["tp" = 4]
func.func @max_init_spellings(%x: tensor<64x262144xf32> {tp.layout = #tp.layout<@tp, [-, "tp"]>})
    -> (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) {
  %lowest = arith.constant -3.40282347E+38 : f32
  %big = arith.constant -1.000000e+30 : f32
  %e = tensor.empty() : tensor<64xf32>
  %f1 = linalg.fill ins(%lowest : f32) outs(%e : tensor<64xf32>) -> tensor<64xf32>
  %f2 = linalg.fill ins(%big : f32) outs(%e : tensor<64xf32>) -> tensor<64xf32>
  %f3 = arith.constant dense<0.0> : tensor<64xf32>
  %m1 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>],
                       iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<64x262144xf32>) outs(%f1 : tensor<64xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %r = arith.maximumf %in, %acc : f32
    linalg.yield %r : f32
  } -> tensor<64xf32>
  %m2 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>],
                       iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<64x262144xf32>) outs(%f2 : tensor<64xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %r = arith.maximumf %in, %acc : f32
    linalg.yield %r : f32
  } -> tensor<64xf32>
  %m3 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>],
                       iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<64x262144xf32>) outs(%f3 : tensor<64xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %r = arith.maximumf %in, %acc : f32
    linalg.yield %r : f32
  } -> tensor<64xf32>
  return %m1, %m2, %m3 : tensor<64xf32>, tensor<64xf32>, tensor<64xf32>
}

// -----

// Reshapes carry splits between dimensions: a [tokens, heads*dim] value
// split by heads stays split through expand_shape and collapse_shape.
// CHECK-LABEL: func.func @reshape_keeps_heads
// CHECK: tensor.expand_shape {{.*}}tp.result_layouts = [#tp.layout<@tp, [-, "tp", -]>]
// CHECK: math.exp {{.*}}tp.result_layouts = [#tp.layout<@tp, [-, "tp", -]>]
// CHECK: tensor.collapse_shape {{.*}}tp.result_layouts = [#tp.layout<@tp, [-, "tp"]>]
tp.mesh @tp ["tp" = 4]
func.func @reshape_keeps_heads(%x: tensor<16x512xf32> {tp.layout = #tp.layout<@tp, [-, "tp"]>})
    -> (tensor<16x512xf32> {tp.layout = #tp.layout<@tp, [-, "tp"]>}) {
  %e = tensor.expand_shape %x [[0], [1, 2]] output_shape [16, 8, 64] : tensor<16x512xf32> into tensor<16x8x64xf32>
  %y = math.exp %e : tensor<16x8x64xf32>
  %c = tensor.collapse_shape %y [[0], [1, 2]] : tensor<16x8x64xf32> into tensor<16x512xf32>
  return %c : tensor<16x512xf32>
}

// -----

// An op without a sharding rule is kept replicated, with a remark; the
// values around it are gathered for it.
// CHECK-LABEL: func.func @unknown_op
// REMARK: remark: no sharding rule for 'tensor.pad'; kept replicated
// CHECK: tensor.pad
// CHECK: } {tp.operand_layouts = [#tp.layout<@tp, [-, -]>], tp.result_layouts = [#tp.layout<@tp, [-, -]>]} : tensor<8x16xf32> to tensor<10x16xf32>
tp.mesh @tp ["tp" = 4]
func.func @unknown_op(%x: tensor<8x16xf32> {tp.layout = #tp.layout<@tp, [-, "tp"]>}) -> tensor<10x16xf32> {
  %zero = arith.constant 0.0 : f32
  %p = tensor.pad %x low[1, 0] high[1, 0] {
  ^bb0(%i: index, %j: index):
    tensor.yield %zero : f32
  } : tensor<8x16xf32> to tensor<10x16xf32>
  return %p : tensor<10x16xf32>
}

// -----

// A dynamic dimension is never split: the weight is split on its static
// dimension and the dynamic one is reported.
// REMARK: remark: dimension 0 of argument #1 is dynamic; kept unsplit
// CHECK-LABEL: func.func @dynamic_rows
// CHECK-SAME: tensor<?x4096xf32> {tp.layout = #tp.layout<@tp, [-, "tp"]>, tp.param}
func.func @dynamic_rows(%x: tensor<8x4096xf32>, %w: tensor<?x4096xf32> {tp.param}) -> tensor<8x4096xf32> {
  %y = math.exp %x : tensor<8x4096xf32>
  return %y : tensor<8x4096xf32>
}

// -----

// A weight baked in as a constant (a front end's habit) is planned like a
// parameter once it is large enough (here with large-constant-bytes lowered
// by the RUN line of propagate-constants.mlir; at the default 1 MiB this
// 64-byte constant stays replicated).
// CHECK-LABEL: func.func @small_constant_weight
// CHECK: arith.constant {tp.result_layouts = [#tp.layout<@tp, [-, -]>]} dense
func.func @small_constant_weight(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %w = arith.constant dense<[[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0], [9.0, 10.0, 11.0, 12.0], [13.0, 14.0, 15.0, 16.0]]> : tensor<4x4xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  %y = linalg.matmul ins(%x, %w : tensor<4x4xf32>, tensor<4x4xf32>) outs(%f : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %y : tensor<4x4xf32>
}
