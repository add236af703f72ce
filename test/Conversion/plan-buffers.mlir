// RUN: tp-opt %s --tp-plan-buffers --split-input-file | FileCheck %s
// Temporary buffers move into one arena per function, at offsets chosen by
// liveness: buffers whose lifetimes are disjoint share bytes.

#id = affine_map<(d0, d1) -> (d0, d1)>

// Three buffers in a chain: %a dies when %c is written, so %c takes %a's
// bytes; %b lives across both and gets its own. The arena is two buffers
// (1024 bytes), not three (1536).
// CHECK: memref.global "private" @tp_arena_chain : memref<1024xi8> = uninitialized
// CHECK-SAME: alignment = 64 : i64
// CHECK-SAME: peak_live_bytes = 1024 : i64
// CHECK-SAME: planned_buffers = 3 : i64
// CHECK-SAME: separate_bytes = 1536 : i64
// CHECK-LABEL: func.func @chain
// CHECK-NOT: memref.alloc
// CHECK: %[[ARENA:.*]] = memref.get_global @tp_arena_chain : memref<1024xi8>
// CHECK: arith.constant 0 : index
// CHECK-NEXT: %[[A:.*]] = memref.view %[[ARENA]][%{{.*}}][] : memref<1024xi8> to memref<8x16xf32>
// CHECK: linalg.generic {{.*}} outs(%[[A]] : memref<8x16xf32>)
// CHECK: arith.constant 512 : index
// CHECK-NEXT: %[[B:.*]] = memref.view %[[ARENA]][%{{.*}}][] : memref<1024xi8> to memref<8x16xf32>
// CHECK: linalg.generic {{.*}} ins(%[[A]] : memref<8x16xf32>) outs(%[[B]] : memref<8x16xf32>)
// CHECK: arith.constant 0 : index
// CHECK-NEXT: %[[C:.*]] = memref.view %[[ARENA]][%{{.*}}][] : memref<1024xi8> to memref<8x16xf32>
// CHECK: linalg.generic {{.*}} ins(%[[B]] : memref<8x16xf32>) outs(%[[C]] : memref<8x16xf32>)
// CHECK: linalg.generic {{.*}} ins(%[[B]], %[[C]] : memref<8x16xf32>, memref<8x16xf32>) outs(%arg1 : memref<8x16xf32>)
// CHECK-NOT: memref.dealloc
func.func @chain(%x: memref<8x16xf32>, %out: memref<8x16xf32>) {
  %a = memref.alloc() {alignment = 64 : i64} : memref<8x16xf32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<8x16xf32>) outs(%a : memref<8x16xf32>) {
  ^bb0(%in: f32, %o: f32):
    %e = math.exp %in : f32
    linalg.yield %e : f32
  }
  %b = memref.alloc() {alignment = 64 : i64} : memref<8x16xf32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : memref<8x16xf32>) outs(%b : memref<8x16xf32>) {
  ^bb0(%in: f32, %o: f32):
    %e = math.exp %in : f32
    linalg.yield %e : f32
  }
  %c = memref.alloc() {alignment = 64 : i64} : memref<8x16xf32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%b : memref<8x16xf32>) outs(%c : memref<8x16xf32>) {
  ^bb0(%in: f32, %o: f32):
    %e = math.exp %in : f32
    linalg.yield %e : f32
  }
  linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%b, %c : memref<8x16xf32>, memref<8x16xf32>) outs(%out : memref<8x16xf32>) {
  ^bb0(%u: f32, %v: f32, %o: f32):
    %s = arith.addf %u, %v : f32
    linalg.yield %s : f32
  }
  memref.dealloc %a : memref<8x16xf32>
  memref.dealloc %b : memref<8x16xf32>
  memref.dealloc %c : memref<8x16xf32>
  return
}

// -----

// A view of a buffer (here a reshape read later) keeps the buffer alive:
// %t's lifetime runs to the call that reads %flat, so %u cannot take its
// bytes. The call's operands count as uses (the runtime reads them).
// CHECK: memref.global "private" @tp_arena_views : memref<1024xi8>
// CHECK-LABEL: func.func @views
// CHECK: arith.constant 0 : index
// CHECK-NEXT: memref.view
// CHECK: arith.constant 512 : index
// CHECK-NEXT: memref.view
// CHECK: call @consume
func.func private @consume(memref<128xf32>, memref<8x16xf32>)
func.func @views(%x: memref<8x16xf32>) {
  %t = memref.alloc() : memref<8x16xf32>
  memref.copy %x, %t : memref<8x16xf32> to memref<8x16xf32>
  %flat = memref.collapse_shape %t [[0, 1]] : memref<8x16xf32> into memref<128xf32>
  %u = memref.alloc() : memref<8x16xf32>
  memref.copy %x, %u : memref<8x16xf32> to memref<8x16xf32>
  call @consume(%flat, %u) : (memref<128xf32>, memref<8x16xf32>) -> ()
  return
}

// -----

// A buffer used inside a loop lives for the whole loop: %b, used only in
// the loop, still overlaps %a, which lives across it.
// CHECK: memref.global "private" @tp_arena_loop : memref<1024xi8>
// CHECK-LABEL: func.func @loop
func.func private @read(memref<8x16xf32>)
func.func @loop(%x: memref<8x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %a = memref.alloc() : memref<8x16xf32>
  %b = memref.alloc() : memref<8x16xf32>
  memref.copy %x, %a : memref<8x16xf32> to memref<8x16xf32>
  scf.for %i = %c0 to %c4 step %c1 {
    memref.copy %a, %b : memref<8x16xf32> to memref<8x16xf32>
    memref.copy %b, %a : memref<8x16xf32> to memref<8x16xf32>
  }
  call @read(%a) : (memref<8x16xf32>) -> ()
  return
}

// -----

// Left alone: a dynamic shape, and a buffer the function returns.
// CHECK-NOT: memref.global
// CHECK-LABEL: func.func @unplanned
// CHECK: memref.alloc(%{{.*}}) : memref<?xf32>
// CHECK: memref.alloc() : memref<4xf32>
// CHECK: return
func.func @unplanned(%n: index, %x: memref<4xf32>) -> memref<4xf32> {
  %d = memref.alloc(%n) : memref<?xf32>
  %r = memref.alloc() : memref<4xf32>
  memref.copy %x, %r : memref<4xf32> to memref<4xf32>
  %c0 = arith.constant 0 : index
  %v = memref.load %r[%c0] : memref<4xf32>
  memref.store %v, %d[%c0] : memref<?xf32>
  return %r : memref<4xf32>
}

// -----

// Results in place: a product computed into a fresh buffer and copied whole,
// reshaped, into an out-parameter is computed into the parameter itself (a
// GEMM's [8, 16] returned as [1, 8, 16]); no buffer, no copy remain.
#id2 = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-NOT: memref.global
// CHECK-LABEL: func.func @result_in_place
// CHECK-SAME: (%[[X:.*]]: memref<8x16xf32>, %[[OUT:.*]]: memref<1x8x16xf32>)
// CHECK: %[[VIEW:.*]] = memref.collapse_shape %[[OUT]] {{\[\[}}0, 1], [2]] : memref<1x8x16xf32> into memref<8x16xf32>
// CHECK: linalg.generic {{.*}} outs(%[[VIEW]] : memref<8x16xf32>)
// CHECK-NOT: memref.copy
// CHECK: return
func.func @result_in_place(%x: memref<8x16xf32>, %out: memref<1x8x16xf32>) {
  %a = memref.alloc() : memref<8x16xf32>
  linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<8x16xf32>) outs(%a : memref<8x16xf32>) {
  ^bb0(%in: f32, %o: f32):
    %e = math.exp %in : f32
    linalg.yield %e : f32
  }
  %r = memref.expand_shape %a [[0, 1], [2]] output_shape [1, 8, 16] : memref<8x16xf32> into memref<1x8x16xf32>
  memref.copy %r, %out : memref<1x8x16xf32> to memref<1x8x16xf32>
  return
}

// -----

// Not when the buffer is used after the copy (writing it would then change
// the result), nor when the parameter has another use.
// CHECK-LABEL: func.func @result_used_later
// CHECK: memref.copy
// CHECK-LABEL: func.func @parameter_used_twice
// CHECK: memref.copy
func.func private @sink(memref<4xf32>)
func.func @result_used_later(%x: memref<4xf32>, %out: memref<4xf32>) {
  %a = memref.alloc() : memref<4xf32>
  memref.copy %x, %a : memref<4xf32> to memref<4xf32>
  memref.copy %a, %out : memref<4xf32> to memref<4xf32>
  call @sink(%a) : (memref<4xf32>) -> ()
  return
}
func.func @parameter_used_twice(%x: memref<4xf32>, %out: memref<4xf32>) {
  %a = memref.alloc() : memref<4xf32>
  memref.copy %x, %a : memref<4xf32> to memref<4xf32>
  memref.copy %a, %out : memref<4xf32> to memref<4xf32>
  call @sink(%out) : (memref<4xf32>) -> ()
  return
}
