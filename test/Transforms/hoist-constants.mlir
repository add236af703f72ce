// RUN: tp-opt %s --tp-hoist-constants="file=%t.safetensors weight-constant-bytes=64" | FileCheck %s
// RUN: %python %S/Inputs/safetensors-header.py %t.safetensors | FileCheck %s --check-prefix=FILE
// RUN: tp-opt %s --tp-hoist-constants="file=%t.safetensors weight-constant-bytes=64" | tp-opt --tp-shard="tp=4" | FileCheck %s --check-prefix=SHARD
// --tp-hoist-constants (issue 28): the weights a front end baked in become
// tp.param arguments, appended after the function's own arguments (which
// keep the names a user addresses them by, here `arg0`), named after the
// resource, else the constant's location, else `constant<K>`; equal
// constants become one argument; their values go to a safetensors file
// under those names, so the model runs from it as a checkpoint
// (test/frontends/run-families.test runs the ONNX fixture that way).
// Constants that are not weights stay (a small table, a bias added
// elementwise); functions called in the module keep their signature.

// CHECK-LABEL: func.func @main
// CHECK-SAME: (%{{.*}}: tensor<16x4xf32> {tp.name = "arg0"},
// CHECK-SAME: %{{.*}}: tensor<4x8xf32> {tp.name = "proj.weight", tp.param},
// CHECK-SAME: %{{.*}}: tensor<4x12xf32> {tp.name = "fused", tp.param})
// CHECK-NOT: dense<"0x
// CHECK-NOT: dense_resource
// CHECK: arith.constant dense<{{\[}}[1.000000e+00, 2.000000e+00
// CHECK: arith.constant dense<5.000000e-01> : tensor<16x8xf32>
// CHECK: return
// CHECK-LABEL: func.func private @helper
// CHECK-SAME: (%{{.*}}: tensor<16x4xf32>) -> tensor<16x8xf32>
// CHECK: arith.constant dense<{{\[}}[-1.000000e+00, 7.500000e-01

// FILE: fused F32 [4, 12] 192 bytes
// FILE-NEXT: proj.weight F32 [4, 8] 128 bytes

// After hoisting, the weights plan like any parameter: the fused one in
// pieces (tp.source) split by columns.
// SHARD-LABEL: func.func @main
// SHARD-SAME: tp.name = "proj.weight", tp.param
// SHARD-SAME: tp.name = "fused", tp.param, tp.source = {offsets = array<i64: 0, 0>, shape = array<i64: 4, 12>}
tp.mesh @tp ["tp" = 4]
func.func @main(%x: tensor<16x4xf32>)
    -> (tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x4xf32>,
        tensor<16x4xf32>, tensor<16x4xf32>, tensor<16x4xf32>) {
  %w = arith.constant dense<"0x000080BF0000403F000080BE0000C03F0000003F000000BF0000A03F0000803E000040BF0000803F00000000000080BF0000403F000080BE0000C03F0000003F000000BF0000A03F0000803E000040BF0000803F00000000000080BF0000403F000080BE0000C03F0000003F000000BF0000A03F0000803E000040BF0000803F"> : tensor<4x8xf32> loc("proj.weight")
  %w_again = arith.constant dense<"0x000080BF0000403F000080BE0000C03F0000003F000000BF0000A03F0000803E000040BF0000803F00000000000080BF0000403F000080BE0000C03F0000003F000000BF0000A03F0000803E000040BF0000803F00000000000080BF0000403F000080BE0000C03F0000003F000000BF0000A03F0000803E000040BF0000803F"> : tensor<4x8xf32>
  %fused = arith.constant dense_resource<fused> : tensor<4x12xf32>
  %table = arith.constant dense<[[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]]> : tensor<2x4xf32>
  %bias = arith.constant dense<0.5> : tensor<16x8xf32>
  %zero = arith.constant 0.0 : f32
  %e8 = tensor.empty() : tensor<16x8xf32>
  %f8 = linalg.fill ins(%zero : f32) outs(%e8 : tensor<16x8xf32>) -> tensor<16x8xf32>
  %y = linalg.matmul ins(%x, %w : tensor<16x4xf32>, tensor<4x8xf32>) outs(%f8 : tensor<16x8xf32>) -> tensor<16x8xf32>
  %y2 = linalg.matmul ins(%x, %w_again : tensor<16x4xf32>, tensor<4x8xf32>) outs(%f8 : tensor<16x8xf32>) -> tensor<16x8xf32>
  %yb = arith.addf %y, %bias : tensor<16x8xf32>
  %e12 = tensor.empty() : tensor<16x12xf32>
  %f12 = linalg.fill ins(%zero : f32) outs(%e12 : tensor<16x12xf32>) -> tensor<16x12xf32>
  %z = linalg.matmul ins(%x, %fused : tensor<16x4xf32>, tensor<4x12xf32>) outs(%f12 : tensor<16x12xf32>) -> tensor<16x12xf32>
  %a = tensor.extract_slice %z[0, 0] [16, 4] [1, 1] : tensor<16x12xf32> to tensor<16x4xf32>
  %b = tensor.extract_slice %z[0, 4] [16, 4] [1, 1] : tensor<16x12xf32> to tensor<16x4xf32>
  %c = tensor.extract_slice %z[0, 8] [16, 4] [1, 1] : tensor<16x12xf32> to tensor<16x4xf32>
  %x2 = tensor.extract_slice %x[0, 0] [16, 2] [1, 1] : tensor<16x4xf32> to tensor<16x2xf32>
  %e4 = tensor.empty() : tensor<16x4xf32>
  %f4 = linalg.fill ins(%zero : f32) outs(%e4 : tensor<16x4xf32>) -> tensor<16x4xf32>
  %t = linalg.matmul ins(%x2, %table : tensor<16x2xf32>, tensor<2x4xf32>) outs(%f4 : tensor<16x4xf32>) -> tensor<16x4xf32>
  return %yb, %y2, %a, %b, %c, %t : tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x4xf32>, tensor<16x4xf32>, tensor<16x4xf32>, tensor<16x4xf32>
}

func.func private @helper(%x: tensor<16x4xf32>) -> tensor<16x8xf32> {
  %w = arith.constant dense<"0x000080BF0000403F000080BE0000C03F0000003F000000BF0000A03F0000803E000040BF0000803F00000000000080BF0000403F000080BE0000C03F0000003F000000BF0000A03F0000803E000040BF0000803F00000000000080BF0000403F000080BE0000C03F0000003F000000BF0000A03F0000803E000040BF0000803F"> : tensor<4x8xf32>
  %zero = arith.constant 0.0 : f32
  %e8 = tensor.empty() : tensor<16x8xf32>
  %f8 = linalg.fill ins(%zero : f32) outs(%e8 : tensor<16x8xf32>) -> tensor<16x8xf32>
  %y = linalg.matmul ins(%x, %w : tensor<16x4xf32>, tensor<4x8xf32>) outs(%f8 : tensor<16x8xf32>) -> tensor<16x8xf32>
  return %y : tensor<16x8xf32>
}

func.func @caller(%x: tensor<16x4xf32>) -> tensor<16x8xf32> {
  %y = func.call @helper(%x) : (tensor<16x4xf32>) -> tensor<16x8xf32>
  return %y : tensor<16x8xf32>
}

{-#
  dialect_resources: {
    builtin: {
      fused: "0x04000000000000BF0000003E0000403F000080BE0000C03E0000803F000000000000203F0000C0BE0000803E0000603F000000BE0000003F000000BF0000003E0000403F000080BE0000C03E0000803F000000000000203F0000C0BE0000803E0000603F000000BE0000003F000000BF0000003E0000403F000080BE0000C03E0000803F000000000000203F0000C0BE0000803E0000603F000000BE0000003F000000BF0000003E0000403F000080BE0000C03E0000803F000000000000203F0000C0BE"
    }
  }
#-}
