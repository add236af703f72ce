// RUN: tp-opt %s --tp-untie-fills | FileCheck %s
// RUN: tp-opt %s --tp-lower-gpu="chip=sm_90 format=isa stop-after=kernels" | FileCheck %s --check-prefix=KERN
// One zero fill shared by two row reductions (CSE and front ends spell it
// so; tp-gen's two norms at tp=1): each reduction gets its own fill and
// empty tensor. On the GPU path each reduction's kernel then starts from
// zero on its own buffer: two launches and no device copy, where the shared
// fill made a fill kernel, a gpu.memcpy of the filled buffer for the first
// reduction and two reduction kernels.

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>

// CHECK-LABEL: func.func @two_sums
// CHECK: %[[E1:.*]] = tensor.empty() : tensor<8xf32>
// CHECK: %[[F1:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E1]] : tensor<8xf32>)
// CHECK: linalg.generic {{.*}} ins(%arg0 : tensor<8x64xf32>) outs(%[[F1]] : tensor<8xf32>)
// CHECK: %[[E2:.*]] = tensor.empty() : tensor<8xf32>
// CHECK: %[[F2:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E2]] : tensor<8xf32>)
// CHECK: linalg.generic {{.*}} ins(%arg1 : tensor<8x64xf32>) outs(%[[F2]] : tensor<8xf32>)
// KERN-LABEL: func.func @two_sums
// KERN-NOT: gpu.memcpy
// KERN: gpu.launch_func
// KERN-NOT: gpu.memcpy
// KERN: gpu.launch_func
// KERN-NOT: gpu.launch_func
// KERN-NOT: gpu.memcpy
// KERN: return
func.func @two_sums(%x: tensor<8x64xf32>, %y: tensor<8x64xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  %a = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<8x64xf32>) outs(%z : tensor<8xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  %b = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%y : tensor<8x64xf32>) outs(%z : tensor<8xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.maximumf %in, %acc : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  return %a, %b : tensor<8xf32>, tensor<8xf32>
}

// A fill with one user is left as it is.
// CHECK-LABEL: func.func @one_use
// CHECK: tensor.empty
// CHECK-NEXT: linalg.fill
// CHECK-NOT: linalg.fill
// CHECK: return
func.func @one_use(%x: tensor<8x64xf32>) -> tensor<8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  %a = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<8x64xf32>) outs(%z : tensor<8xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  return %a : tensor<8xf32>
}
