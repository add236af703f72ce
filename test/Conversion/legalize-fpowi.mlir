// RUN: tp-opt %s --tp-legalize-fpowi | FileCheck %s

// torch-mlir's `x.pow(2)` (a norm's variance): a product, no libdevice call
// whose prototype the i64 exponent would not match.
// CHECK-LABEL: func.func @square
// CHECK-SAME: (%[[X:.*]]: f32)
// CHECK-NOT: math.fpowi
// CHECK: arith.mulf %[[X]], %[[X]] : f32
// CHECK-NOT: math.fpowi
// CHECK: return
func.func @square(%x: f32) -> f32 {
  %c2 = arith.constant 2 : i64
  %0 = math.fpowi %x, %c2 : f32, i64
  return %0 : f32
}

// A negative constant power: the reciprocal of the product.
// CHECK-LABEL: func.func @inverse_cube
// CHECK: arith.mulf
// CHECK: arith.divf
// CHECK-NOT: math.fpowi
func.func @inverse_cube(%x: f32) -> f32 {
  %c = arith.constant -3 : i32
  %0 = math.fpowi %x, %c : f32, i32
  return %0 : f32
}

// A variable i64 exponent: narrowed to i32, saturating at +-(2^31 - 2) plus
// the exponent's lowest bit (sign and parity kept), never a powf (which is
// NaN for negative bases).
// CHECK-LABEL: func.func @variable
// CHECK-SAME: (%[[X:.*]]: f32, %[[N:.*]]: i64)
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1 : i64
// CHECK-DAG: %[[BASE:.*]] = arith.constant 2147483646 : i64
// CHECK: %[[PAR:.*]] = arith.andi %[[N]], %[[ONE]]
// CHECK: %[[HI:.*]] = arith.addi %[[PAR]], %[[BASE]]
// CHECK: %[[LO:.*]] = arith.subi %{{.*}}, %[[HI]]
// CHECK: %[[MIN:.*]] = arith.minsi %[[N]], %[[HI]]
// CHECK: %[[MAX:.*]] = arith.maxsi %[[LO]], %[[MIN]]
// CHECK: %[[M:.*]] = arith.trunci %[[MAX]] : i64 to i32
// CHECK: math.fpowi %[[X]], %[[M]] : f32, i32
// CHECK-NOT: math.powf
func.func @variable(%x: f32, %n: i64) -> f32 {
  %0 = math.fpowi %x, %n : f32, i64
  return %0 : f32
}

// A 32-bit variable exponent is what libdevice takes: unchanged.
// CHECK-LABEL: func.func @already_i32
// CHECK-NEXT: math.fpowi %{{.*}}, %{{.*}} : f32, i32
func.func @already_i32(%x: f32, %n: i32) -> f32 {
  %0 = math.fpowi %x, %n : f32, i32
  return %0 : f32
}

// Vectors too.
// CHECK-LABEL: func.func @vector
// CHECK: arith.trunci %{{.*}} : vector<4xi64> to vector<4xi32>
// CHECK: math.fpowi %{{.*}}, %{{.*}} : vector<4xf32>, vector<4xi32>
func.func @vector(%x: vector<4xf32>, %n: vector<4xi64>) -> vector<4xf32> {
  %0 = math.fpowi %x, %n : vector<4xf32>, vector<4xi64>
  return %0 : vector<4xf32>
}
