// RUN: tp-opt %s --tp-propagate="tp=2 report=%t.free.json" -o /dev/null
// RUN: FileCheck %s --check-prefix=FREE < %t.free.json
// RUN: echo 'tp.mesh @tp ["tp" = 2]' > %t.pinned.mlir
// RUN: sed 's/{tp.param}/{tp.param, tp.layout = #tp.layout<@tp, ["tp", -, -]>}/' %s >> %t.pinned.mlir
// RUN: tp-opt %t.pinned.mlir --tp-propagate="report=%t.pinned.json" -o /dev/null
// RUN: FileCheck %s --check-prefix=PINNED < %t.pinned.json
// RUN: tp-opt %s --tp-shard="tp=2" | tp-opt --tp-route-experts | FileCheck %s --check-prefix=ROUTED
// RUN: tp-opt %t.pinned.mlir --tp-shard | tp-opt --tp-route-experts | FileCheck %s --check-prefix=MASKED
// The planner prices a mixture of experts' per-row copy of its experts'
// weights as the lowering computes it (issue 38), per strategy. With the
// experts whole (expert tensor parallelism: the stack split by its
// outputs), tp-route-experts computes the product as a grouped GEMM: the
// [64, 512, 256] copy (32 MB) is never formed, and the peak is the
// product, the products in expert order and the sorted rows (256 KB; 16.9
// MB before). With the stack pinned split by experts (expert
// parallelism), the gather masks the experts held elsewhere, the lowering
// leaves it alone (no remark: it yields a select, not an extract), and the
// copy is counted (32 MB per device: every row, zero where its expert is
// held elsewhere) with the
// product's pending sum.

// FREE: "collectives": 1,
// FREE: "peak_activation_bytes_per_device": 262144,
// PINNED: "strategy": "tp=f3(reduction sum 8)"
// PINNED: "collectives": 1,
// PINNED: "peak_activation_bytes_per_device": 33816576,
// ROUTED: call @tprt_mlir_gemm_grouped_f32
// ROUTED-NOT: linalg.batch_matmul
// MASKED-NOT: tprt_mlir_gemm_grouped
// MASKED: linalg.batch_matmul
// MASKED-NOT: tprt_mlir_gemm_grouped

#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#row3 = affine_map<(d0, d1, d2) -> (d0)>
func.func @experts(%ids: tensor<64xi64>, %x: tensor<64x256x1xf32>, %w: tensor<8x512x256xf32> {tp.param}) -> tensor<64x512x1xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x512x256xf32>
  %g = linalg.generic {indexing_maps = [#row3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%ids : tensor<64xi64>) outs(%e : tensor<64x512x256xf32>) {
  ^bb0(%in: i64, %out: f32):
    %i = arith.index_cast %in : i64 to index
    %o = linalg.index 1 : index
    %k = linalg.index 2 : index
    %v = tensor.extract %w[%i, %o, %k] : tensor<8x512x256xf32>
    linalg.yield %v : f32
  } -> tensor<64x512x256xf32>
  %ye = tensor.empty() : tensor<64x512x1xf32>
  %yf = linalg.fill ins(%zero : f32) outs(%ye : tensor<64x512x1xf32>) -> tensor<64x512x1xf32>
  %y = linalg.batch_matmul ins(%g, %x : tensor<64x512x256xf32>, tensor<64x256x1xf32>) outs(%yf : tensor<64x512x1xf32>) -> tensor<64x512x1xf32>
  return %y : tensor<64x512x1xf32>
}
