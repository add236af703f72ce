// RUN: tp-opt %s --tp-propagate="tp=1 report=%t.json" -o /dev/null
// RUN: FileCheck %s < %t.json
// The cost model prices a contraction of bf16 operands into an f32
// accumulator (torch-mlir's spelling of every bf16 matmul, which the
// lowerings run as a 16-bit GEMM with f32 sums) as that GEMM: at the 16-bit
// peak of its operands, not the f32 peak of its result, and at 2 flops per
// point (a multiply and an add), not counting the two arith.extf of its
// body as work. Before, it cost 4 x 4096^3 / 67e12 = 4.1027e-03 s, 29.5
// times the bf16 product it is.
//
// h100-nvlink (bf16 989e12 flop/s), 4096^3 x 2 = 1.3744e11 flops,
// compute-bound (the mixed product's 128 MiB of traffic take 4.0e-05 s):
// both 1.3897e-04 s.
// CHECK: "compute_seconds": 0.00013896{{[0-9]*}},
// CHECK-NEXT: "loc": "loc({{.*}}:[[@LINE+9]]:{{[0-9]+}})",
// CHECK: "compute_seconds": 0.00013896{{[0-9]*}},
// CHECK-NEXT: "loc": "loc({{.*}}:[[@LINE+11]]:{{[0-9]+}})",
func.func @main(%x: tensor<4096x4096xbf16>, %w: tensor<4096x4096xbf16> {tp.param})
    -> (tensor<4096x4096xf32>, tensor<4096x4096xbf16>) {
  %z = arith.constant 0.0 : f32
  %z16 = arith.constant 0.0 : bf16
  %e = tensor.empty() : tensor<4096x4096xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<4096x4096xf32>) -> tensor<4096x4096xf32>
  %mixed = linalg.matmul ins(%x, %w : tensor<4096x4096xbf16>, tensor<4096x4096xbf16>)
                         outs(%f : tensor<4096x4096xf32>) -> tensor<4096x4096xf32>
  %e16 = tensor.empty() : tensor<4096x4096xbf16>
  %f16 = linalg.fill ins(%z16 : bf16) outs(%e16 : tensor<4096x4096xbf16>) -> tensor<4096x4096xbf16>
  %same = linalg.matmul ins(%x, %w : tensor<4096x4096xbf16>, tensor<4096x4096xbf16>)
                        outs(%f16 : tensor<4096x4096xbf16>) -> tensor<4096x4096xbf16>
  return %mixed, %same : tensor<4096x4096xf32>, tensor<4096x4096xbf16>
}
