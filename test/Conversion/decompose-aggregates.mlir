// RUN: tp-opt %s --tp-decompose-aggregates | FileCheck %s
// RUN: tp-opt %s --tp-lower-cpu -o /dev/null
// linalg.softmax (which front ends and the planner keep whole) and
// elementwise ops on tensors become linalg generics that both lowerings
// handle; the CPU lowering then goes through (second RUN line).

// CHECK-LABEL: func.func @softmax_then_tanh
// CHECK-NOT: linalg.softmax
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK: arith.maxnumf
// CHECK: math.exp
// CHECK: arith.addf
// CHECK: arith.divf
// CHECK: linalg.generic
// CHECK: math.tanh
// CHECK-NOT: math.tanh {{.*}}: tensor
func.func @softmax_then_tanh(%x: tensor<2x16xf32>) -> tensor<2x16xf32> {
  %e = tensor.empty() : tensor<2x16xf32>
  %s = linalg.softmax dimension(1) ins(%x : tensor<2x16xf32>) outs(%e : tensor<2x16xf32>) -> tensor<2x16xf32>
  %t = math.tanh %s : tensor<2x16xf32>
  return %t : tensor<2x16xf32>
}

// tensor.gather and tensor.scatter, which upstream does not bufferize: a
// gather over a 2-D batch of a 3-D source with two gathered dimensions
// becomes a generic over the result reading the coordinates and the element
// with tensor.extract; a scatter over a 2-D batch, an scf.for over the 6
// slices, delinearized row-major, inserting each at its coordinates.

// CHECK-LABEL: func.func @gather
// CHECK-NOT: tensor.gather
// CHECK: %[[E:.+]] = tensor.empty() : tensor<2x3x1x1x5xf32>
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} outs(%[[E]]
// CHECK: %[[B0:.+]] = linalg.index 0
// CHECK: %[[B1:.+]] = linalg.index 1
// CHECK: %[[S2:.+]] = linalg.index 4
// CHECK: %[[I0:.+]] = tensor.extract %arg1[%[[B0]], %[[B1]], %c0] : tensor<2x3x2xi32>
// CHECK: %[[C0:.+]] = arith.index_cast %[[I0]] : i32 to index
// CHECK: %[[I1:.+]] = tensor.extract %arg1[%[[B0]], %[[B1]], %c1] : tensor<2x3x2xi32>
// CHECK: %[[C1:.+]] = arith.index_cast %[[I1]] : i32 to index
// CHECK: tensor.extract %arg0[%[[C0]], %[[C1]], %[[S2]]] : tensor<4x6x5xf32>
func.func @gather(%src: tensor<4x6x5xf32>, %idx: tensor<2x3x2xi32>) -> tensor<2x3x1x1x5xf32> {
  %g = tensor.gather %src[%idx] gather_dims([0, 1]) : (tensor<4x6x5xf32>, tensor<2x3x2xi32>) -> tensor<2x3x1x1x5xf32>
  return %g : tensor<2x3x1x1x5xf32>
}

// CHECK-LABEL: func.func @scatter
// CHECK-NOT: tensor.scatter
// CHECK: scf.for %[[IV:.+]] = %c0 to %c6 step %c1 iter_args(%[[D:.+]] = %arg1) -> (tensor<8x5xf32>)
// CHECK: %[[B1:.+]] = arith.remui %[[IV]], %c3
// CHECK: %[[R:.+]] = arith.divui %[[IV]], %c3
// CHECK: %[[B0:.+]] = arith.remui %[[R]], %c2
// CHECK: %[[SL:.+]] = tensor.extract_slice %arg0[%[[B0]], %[[B1]], 0] [1, 1, 5] [1, 1, 1] : tensor<2x3x5xf32> to tensor<5xf32>
// CHECK: %[[C:.+]] = tensor.extract %arg2[%[[B0]], %[[B1]], %c0] : tensor<2x3x1xindex>
// CHECK: tensor.insert_slice %[[SL]] into %[[D]][%[[C]], 0] [1, 5] [1, 1] : tensor<5xf32> into tensor<8x5xf32>
func.func @scatter(%rows: tensor<2x3x5xf32>, %dest: tensor<8x5xf32>, %idx: tensor<2x3x1xindex>) -> tensor<8x5xf32> {
  %s = tensor.scatter %rows into %dest[%idx] scatter_dims([0]) unique : (tensor<2x3x5xf32>, tensor<8x5xf32>, tensor<2x3x1xindex>) -> tensor<8x5xf32>
  return %s : tensor<8x5xf32>
}

// An affine.for carrying a tensor (issue 40: the CPU lowering stopped on "op
// was not bufferized") becomes the scf.for it means, its yield with it; an
// affine.apply in its body and an affine.for over memrefs stay.
// CHECK-LABEL: func.func @affine_tensor_loop
// CHECK:         scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[ACC:.*]] = %{{.*}}, %{{.*}} = %{{.*}}) -> (tensor<8x16xf32>, index)
// CHECK:           affine.apply
// CHECK:           linalg.add ins(%[[ACC]]
// CHECK:           scf.yield
// CHECK-NOT:     affine.for
func.func @affine_tensor_loop(%a: tensor<8x16xf32>) -> (tensor<8x16xf32>, index) {
  %i0 = arith.constant 0 : index
  %r:2 = affine.for %i = 0 to 3 iter_args(%acc = %a, %n = %i0) -> (tensor<8x16xf32>, index) {
    %j = affine.apply affine_map<(d0) -> (d0 * 2)>(%i)
    %e = tensor.empty() : tensor<8x16xf32>
    %s = linalg.add ins(%acc, %a : tensor<8x16xf32>, tensor<8x16xf32>) outs(%e : tensor<8x16xf32>) -> tensor<8x16xf32>
    affine.yield %s, %j : tensor<8x16xf32>, index
  }
  return %r#0, %r#1 : tensor<8x16xf32>, index
}
