// RUN: tp-opt %s --split-input-file --tp-outline-cpu-kernels | FileCheck %s
// RUN: tp-opt %s --split-input-file --tp-outline-cpu-kernels --tp-dedup-kernels | FileCheck %s --check-prefix=DEDUP
// RUN: tp-opt %s --split-input-file --tp-outline-cpu-kernels --tp-dedup-kernels --tp-lower-cpu | FileCheck %s --check-prefix=LLVM

// Each top-level loop becomes a private, internal, noinline function called
// in its place; the values it reads from outside are arguments in the
// order of their first use (one argument for a buffer used twice), the
// constants it reads are cloned into it, and the host keeps what else
// uses them.

// CHECK-LABEL: func.func @two_layers(
// CHECK-SAME: %[[X:.*]]: memref<64xf32>, %[[Y:.*]]: memref<64xf32>)
// CHECK: %[[ARENA:.*]] = memref.get_global @arena
// CHECK: %[[V0:.*]] = memref.view %[[ARENA]][%{{.*}}][] : memref<1024xi8> to memref<64xf32>
// CHECK-NEXT: call @two_layers_kernel_0(%[[X]], %[[V0]]) : (memref<64xf32>, memref<64xf32>) -> ()
// CHECK-NEXT: %[[V1:.*]] = memref.view %[[ARENA]][%{{.*}}][] : memref<1024xi8> to memref<64xf32>
// CHECK-NEXT: call @two_layers_kernel_1(%[[Y]], %[[V1]]) : (memref<64xf32>, memref<64xf32>) -> ()
// CHECK-NEXT: call @two_layers_kernel_2(%[[V1]]) : (memref<64xf32>) -> ()
// CHECK-NEXT: return
// CHECK: func.func private @two_layers_kernel_0(%[[A:.*]]: memref<64xf32>, %[[B:.*]]: memref<64xf32>) attributes {llvm.linkage = #llvm.linkage<internal>, passthrough = ["noinline"]}
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C64:.*]] = arith.constant 64 : index
// CHECK-DAG: %[[C16:.*]] = arith.constant 16 : index
// CHECK-DAG: %[[TWO:.*]] = arith.constant dense<2.000000e+00> : vector<16xf32>
// CHECK: scf.for %[[I:.*]] = %[[C0]] to %[[C64]] step %[[C16]] {
// CHECK-NEXT: %[[L:.*]] = vector.load %[[A]][%[[I]]]
// CHECK-NEXT: %[[M:.*]] = arith.mulf %[[L]], %[[TWO]]
// CHECK-NEXT: vector.store %[[M]], %[[B]][%[[I]]]
// CHECK: return
// CHECK: func.func private @two_layers_kernel_1(
// CHECK: func.func private @two_layers_kernel_2(%[[S:.*]]: memref<64xf32>)
// CHECK: vector.load %[[S]]
// CHECK: vector.store %{{.*}}, %[[S]]

// The two layers' loops are one kernel once deduplicated; the third,
// which reads and writes one buffer, stays apart.
// DEDUP-LABEL: func.func @two_layers(
// DEDUP: call @two_layers_kernel_0(
// DEDUP: call @two_layers_kernel_0(
// DEDUP: call @two_layers_kernel_2(
// DEDUP: func.func private @two_layers_kernel_0(
// DEDUP-NOT: func.func private @two_layers_kernel_1(
// DEDUP: func.func private @two_layers_kernel_2(

// Through the rest of tp-lower-cpu: internal, noinline LLVM functions.
// LLVM-LABEL: llvm.func @two_layers(
// LLVM: llvm.call @two_layers_kernel_0(
// LLVM: llvm.func internal @two_layers_kernel_0({{.*}}) attributes {passthrough = ["noinline"]
module {
  memref.global "private" @arena : memref<1024xi8> = uninitialized
  func.func @two_layers(%x: memref<64xf32>, %y: memref<64xf32>) {
    %c0 = arith.constant 0 : index
    %c16 = arith.constant 16 : index
    %c64 = arith.constant 64 : index
    %c256 = arith.constant 256 : index
    %two = arith.constant dense<2.0> : vector<16xf32>
    %arena = memref.get_global @arena : memref<1024xi8>
    %v0 = memref.view %arena[%c0][] : memref<1024xi8> to memref<64xf32>
    scf.for %i = %c0 to %c64 step %c16 {
      %l = vector.load %x[%i] : memref<64xf32>, vector<16xf32>
      %m = arith.mulf %l, %two : vector<16xf32>
      vector.store %m, %v0[%i] : memref<64xf32>, vector<16xf32>
    }
    %v1 = memref.view %arena[%c256][] : memref<1024xi8> to memref<64xf32>
    scf.for %i = %c0 to %c64 step %c16 {
      %l = vector.load %y[%i] : memref<64xf32>, vector<16xf32>
      %m = arith.mulf %l, %two : vector<16xf32>
      vector.store %m, %v1[%i] : memref<64xf32>, vector<16xf32>
    }
    scf.for %i = %c0 to %c64 step %c16 {
      %l = vector.load %v1[%i] : memref<64xf32>, vector<16xf32>
      %m = arith.mulf %l, %two : vector<16xf32>
      vector.store %m, %v1[%i] : memref<64xf32>, vector<16xf32>
    }
    return
  }
}

// -----

// A loop with results (the function uses them), an op with regions that
// is not a loop, and a function without a body stay as they are; a loop
// inside an scf.if is not at the top level either.

// CHECK-LABEL: func.func @stays(
// CHECK: %[[SUM:.*]] = scf.for {{.*}} iter_args
// CHECK: scf.if
// CHECK-NEXT: scf.for
// CHECK: return %[[SUM]]
// CHECK-NOT: func.func private @stays_kernel
// CHECK: func.func private @external(memref<4xf32>)
module {
  func.func @stays(%x: memref<4xf32>, %p: i1) -> f32 {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %zero = arith.constant 0.0 : f32
    %sum = scf.for %i = %c0 to %c4 step %c1 iter_args(%acc = %zero) -> f32 {
      %v = memref.load %x[%i] : memref<4xf32>
      %s = arith.addf %acc, %v : f32
      scf.yield %s : f32
    }
    scf.if %p {
      scf.for %i = %c0 to %c4 step %c1 {
        memref.store %zero, %x[%i] : memref<4xf32>
      }
    }
    return %sum : f32
  }
  func.func private @external(memref<4xf32>)
}

// -----

// A name already taken is made unique; a loop bound that is not a constant
// is an argument; constants the host no longer uses go.

// CHECK-LABEL: func.func @bounds(
// CHECK-SAME: %[[N:.*]]: index
// CHECK-NOT: arith.constant
// CHECK: call @bounds_kernel_0_0(%[[N]], %{{.*}}) : (index, memref<?xf32>) -> ()
// CHECK: func.func private @bounds_kernel_0_0(%[[M:.*]]: index, %[[B:.*]]: memref<?xf32>)
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[M]] step
// CHECK: func.func private @bounds_kernel_0()
module {
  func.func @bounds(%n: index, %x: memref<?xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %zero = arith.constant 0.0 : f32
    scf.for %i = %c0 to %n step %c1 {
      memref.store %zero, %x[%i] : memref<?xf32>
    }
    return
  }
  func.func private @bounds_kernel_0() {
    return
  }
}
