// RUN: tp-opt %s --tp-propagate="tp=2 report=%t.free.json" -o /dev/null
// RUN: FileCheck %s --check-prefix=FREE < %t.free.json
// RUN: echo 'tp.mesh @tp ["tp" = 2]' > %t.pinned.mlir
// RUN: sed 's/{tp.param}/{tp.param, tp.layout = #tp.layout<@tp, [-, -, "tp"]>}/' %s >> %t.pinned.mlir
// RUN: tp-opt %t.pinned.mlir --tp-propagate="report=%t.pinned.json" -o /dev/null
// RUN: FileCheck %s --check-prefix=PINNED < %t.pinned.json
// RUN: tp-opt %s --tp-shard="tp=2" | tp-opt --tp-route-experts | FileCheck %s --check-prefix=ROUTED
// RUN: tp-opt %t.pinned.mlir --tp-shard | tp-opt --tp-route-experts 2>&1 | FileCheck %s --check-prefix=KEPT
// A bf16 expert product as torch-mlir writes it (bf16 operands summed in
// f32, rounded back by the only use) is routed as the bf16 grouped GEMM
// while the rounding reads it directly: with the stack split by its
// outputs the plan holds the routed program (224 KB). Split by the
// reduction (pinned), the product is a pending f32 sum all-reduced before
// the rounding: the lowering leaves it with a remark, and the planner
// counts the [64, 512, 128] bf16 copy (8 MB per device) it then holds.

// FREE: "peak_activation_bytes_per_device": 229376,
// PINNED: "strategy": "tp=f3(reduction sum 256)"
// PINNED: "peak_activation_bytes_per_device": 8650752,
// ROUTED: call @tprt_mlir_gemm_grouped_bf16
// ROUTED-NOT: linalg.batch_matmul
// KEPT: remark: not routed: its operands and result are not of one float type (and it is not a 16-bit product from zero rounded back by its only use)
// KEPT-NOT: tprt_mlir_gemm_grouped

#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#row3 = affine_map<(d0, d1, d2) -> (d0)>
func.func @experts_bf16(%ids: tensor<64xi64>, %x: tensor<64x256x1xbf16>, %w: tensor<8x512x256xbf16> {tp.param}) -> tensor<64x512x1xbf16> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x512x256xbf16>
  %g = linalg.generic {indexing_maps = [#row3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%ids : tensor<64xi64>) outs(%e : tensor<64x512x256xbf16>) {
  ^bb0(%in: i64, %out: bf16):
    %i = arith.index_cast %in : i64 to index
    %o = linalg.index 1 : index
    %k = linalg.index 2 : index
    %v = tensor.extract %w[%i, %o, %k] : tensor<8x512x256xbf16>
    linalg.yield %v : bf16
  } -> tensor<64x512x256xbf16>
  %ye = tensor.empty() : tensor<64x512x1xf32>
  %yf = linalg.fill ins(%zero : f32) outs(%ye : tensor<64x512x1xf32>) -> tensor<64x512x1xf32>
  %y = linalg.batch_matmul ins(%g, %x : tensor<64x512x256xbf16>, tensor<64x256x1xbf16>) outs(%yf : tensor<64x512x1xf32>) -> tensor<64x512x1xf32>
  %re = tensor.empty() : tensor<64x512x1xbf16>
  %r = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%y : tensor<64x512x1xf32>) outs(%re : tensor<64x512x1xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %t = arith.truncf %in : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<64x512x1xbf16>
  return %r : tensor<64x512x1xbf16>
}
