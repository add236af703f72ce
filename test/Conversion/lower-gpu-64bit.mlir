// RUN: tp-opt %s --tp-lower-gpu="chip=sm_90 format=isa stop-after=kernels" 2>&1 | FileCheck %s --implicit-check-not=remark
// RUN: tp-opt %s --tp-lower-gpu="chip=sm_90 format=isa" -o %t.mlir
// RUN: %python -c "import sys; s = open(sys.argv[1]).read().replace('\\0A', '\n').replace('\\09', ' '); print('entries', s.count('.entry')); print('64-bit shuffles', 'shfl.sync.bfly.b32' in s)" %t.mlir | FileCheck %s --check-prefix=PTX
// f64 and i64 row reductions (torch-mlir's norms compute the variance in
// f64; a mask count sums i64) take the one-block-per-row path: a partial per
// thread and a uniform gpu.all_reduce, which convert-gpu-to-nvvm lowers to
// pairs of 32-bit shuffles. They used to fall back to one thread per output
// point, with a remark.

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>

// The two reductions read rows of the same shape, so they also share one
// launch (a chain of row reductions: tp-linalg-to-gpu's row epilogue).
// CHECK-LABEL: func.func @sums
// CHECK: gpu.launch_func {{.*}} blocks in (%{{.*}}, %{{.*}}, %{{.*}}) threads in (%c64, %{{.*}}, %{{.*}})
// CHECK-NOT: gpu.launch_func
// CHECK: gpu.all_reduce add %{{.*}} uniform
// CHECK-NEXT: } : (f64) -> f64
// CHECK: gpu.all_reduce add %{{.*}} uniform
// CHECK-NEXT: } : (i64) -> i64
// PTX: entries 1
// PTX: 64-bit shuffles True
func.func @sums(%x: tensor<8x64xf64>, %m: tensor<8x64xi64>) -> (tensor<8xf64>, tensor<8xi64>) {
  %zero = arith.constant 0.0 : f64
  %zi = arith.constant 0 : i64
  %e = tensor.empty() : tensor<8xf64>
  %z = linalg.fill ins(%zero : f64) outs(%e : tensor<8xf64>) -> tensor<8xf64>
  %a = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<8x64xf64>) outs(%z : tensor<8xf64>) {
  ^bb0(%in: f64, %acc: f64):
    %s = arith.addf %in, %acc : f64
    linalg.yield %s : f64
  } -> tensor<8xf64>
  %ei = tensor.empty() : tensor<8xi64>
  %zz = linalg.fill ins(%zi : i64) outs(%ei : tensor<8xi64>) -> tensor<8xi64>
  %b = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%m : tensor<8x64xi64>) outs(%zz : tensor<8xi64>) {
  ^bb0(%in: i64, %acc: i64):
    %s = arith.addi %in, %acc : i64
    linalg.yield %s : i64
  } -> tensor<8xi64>
  return %a, %b : tensor<8xf64>, tensor<8xi64>
}
