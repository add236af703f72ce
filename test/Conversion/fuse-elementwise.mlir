// RUN: tp-opt %s --tp-fuse-elementwise -split-input-file | FileCheck %s
// RUN: tp-opt %s --linalg-fuse-elementwise-ops -split-input-file | FileCheck %s --check-prefix=UPSTREAM
// A cheap unary producer (here torch-mlir's extf of a norm's input to f64)
// with several consumers is recomputed in each of them: no f64 tensor is
// materialised, and each reduction reads the f32 input. Upstream's fusion
// leaves the cast on its own (it has two uses).

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>

// CHECK-LABEL: func.func @cast_two_reductions
// CHECK-NOT: tensor<8x64xf64>
// CHECK: linalg.generic {{.*}} ins(%arg0 : tensor<8x64xf32>) outs(%{{.*}} : tensor<8xf64>)
// CHECK: arith.extf
// CHECK: linalg.generic {{.*}} ins(%arg0, %{{.*}} : tensor<8x64xf32>, tensor<8xf64>) outs(%{{.*}} : tensor<8xf64>)
// CHECK: arith.extf
// CHECK-NOT: tensor<8x64xf64>
// CHECK: return
// UPSTREAM-LABEL: func.func @cast_two_reductions
// UPSTREAM: linalg.generic {{.*}} ins(%arg0 : tensor<8x64xf32>) outs(%{{.*}} : tensor<8x64xf64>)
func.func @cast_two_reductions(%x: tensor<8x64xf32>) -> (tensor<8xf64>, tensor<8xf64>) {
  %zero = arith.constant 0.0 : f64
  %e = tensor.empty() : tensor<8x64xf64>
  %x64 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<8x64xf32>) outs(%e : tensor<8x64xf64>) {
  ^bb0(%in: f32, %o: f64):
    %c = arith.extf %in : f32 to f64
    linalg.yield %c : f64
  } -> tensor<8x64xf64>
  %er = tensor.empty() : tensor<8xf64>
  %z = linalg.fill ins(%zero : f64) outs(%er : tensor<8xf64>) -> tensor<8xf64>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x64 : tensor<8x64xf64>) outs(%z : tensor<8xf64>) {
  ^bb0(%in: f64, %acc: f64):
    %s = arith.addf %in, %acc : f64
    linalg.yield %s : f64
  } -> tensor<8xf64>
  %z2 = linalg.fill ins(%zero : f64) outs(%er : tensor<8xf64>) -> tensor<8xf64>
  %var = linalg.generic {indexing_maps = [#id, #row, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x64, %sum : tensor<8x64xf64>, tensor<8xf64>) outs(%z2 : tensor<8xf64>) {
  ^bb0(%in: f64, %m: f64, %acc: f64):
    %d = arith.subf %in, %m : f64
    %q = arith.mulf %d, %d : f64
    %s = arith.addf %q, %acc : f64
    linalg.yield %s : f64
  } -> tensor<8xf64>
  return %sum, %var : tensor<8xf64>, tensor<8xf64>
}

// -----

// An expensive producer (math.exp) with two consumers stays one op, as
// upstream's fusion leaves it: recomputing it would cost more than reading
// its result.
// CHECK-LABEL: func.func @exp_two_users
// CHECK: math.exp
// CHECK-NOT: math.exp
// CHECK: return
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @exp_two_users(%x: tensor<8x64xf32>) -> (tensor<8xf32>, tensor<8x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x64xf32>
  %ex = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<8x64xf32>) outs(%e : tensor<8x64xf32>) {
  ^bb0(%in: f32, %o: f32):
    %c = math.exp %in : f32
    linalg.yield %c : f32
  } -> tensor<8x64xf32>
  %er = tensor.empty() : tensor<8xf32>
  %z = linalg.fill ins(%zero : f32) outs(%er : tensor<8xf32>) -> tensor<8xf32>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%ex : tensor<8x64xf32>) outs(%z : tensor<8xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  return %sum, %ex : tensor<8xf32>, tensor<8x64xf32>
}

// -----

// A binary producer (a residual add) with two consumers stays: each would
// read both inputs instead of the one result.
// CHECK-LABEL: func.func @add_two_users
// CHECK: arith.addf %{{.*}}, %{{.*}} : f32
// CHECK: linalg.generic
// CHECK: linalg.generic
// CHECK: return
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @add_two_users(%x: tensor<8x64xf32>, %y: tensor<8x64xf32>) -> (tensor<8x64xf32>, tensor<8x64xf32>) {
  %e = tensor.empty() : tensor<8x64xf32>
  %h = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %y : tensor<8x64xf32>, tensor<8x64xf32>) outs(%e : tensor<8x64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<8x64xf32>
  %u = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%h : tensor<8x64xf32>) outs(%e : tensor<8x64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = math.tanh %a : f32
    linalg.yield %s : f32
  } -> tensor<8x64xf32>
  %v = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%h : tensor<8x64xf32>) outs(%e : tensor<8x64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = math.exp %a : f32
    linalg.yield %s : f32
  } -> tensor<8x64xf32>
  return %u, %v : tensor<8x64xf32>, tensor<8x64xf32>
}
