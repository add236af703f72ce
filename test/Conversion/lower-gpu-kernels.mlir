// RUN: tp-opt %s --tp-linalg-to-gpu --verify-diagnostics | FileCheck %s
// Each linalg op on buffers becomes one gpu.launch: a grid-stride loop for
// parallel ops, one block per row for row reductions; host buffers move to
// the device.

// An elementwise op of 16x64 points, vectorized: x, the bias and y are
// contiguous along the innermost loop, so each thread handles a group of 4
// consecutive f32 (16 bytes): 256 groups, one block of 256 threads (a
// bounds guard, no loop), one 16-byte load of x and of the bias, the region
// at each of the 4 points, one 16-byte store of y.
// CHECK-LABEL: func.func @elementwise
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG: %[[C256:.*]] = arith.constant 256 : index
// CHECK: gpu.launch blocks(%[[BX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) threads(%[[TX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[C256]],
// CHECK: %[[I:.*]] = arith.addi %{{.*}}, %[[TX]] : index
// CHECK: scf.if
// CHECK: %[[GROUP:.*]] = arith.remui %[[I]], %c16 : index
// CHECK: %[[ROW:.*]] = arith.divui %[[I]], %c16 : index
// CHECK: %[[COL:.*]] = arith.muli %[[GROUP]], %c4 : index
// CHECK: %[[X:.*]] = vector.load %arg0[%[[ROW]], %[[COL]]] {alignment = 16 : i64} : memref<16x64xf32>, vector<4xf32>
// CHECK: %[[B:.*]] = vector.load %arg1[%[[COL]]] {alignment = 16 : i64} : memref<64xf32>, vector<4xf32>
// CHECK-COUNT-4: math.tanh
// CHECK: %[[Y:.*]] = vector.from_elements
// CHECK: vector.store %[[Y]], %arg2[%[[ROW]], %[[COL]]] {alignment = 16 : i64} : memref<16x64xf32>, vector<4xf32>
// CHECK-NOT: memref.load
// CHECK-NOT: memref.store
// CHECK: gpu.terminator
// CHECK-NOT: linalg.
func.func @elementwise(%x: memref<16x64xf32>, %b: memref<64xf32>, %y: memref<16x64xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%x, %b : memref<16x64xf32>, memref<64xf32>) outs(%y : memref<16x64xf32>) {
  ^bb0(%in: f32, %bias: f32, %out: f32):
    %s = arith.addf %in, %bias : f32
    %t = math.tanh %s : f32
    linalg.yield %t : f32
  }
  return
}

// More groups of 4 points than 65535 blocks of 256 threads hold: a
// grid-stride loop (16384 x 8192 points, 33554432 groups).
// CHECK-LABEL: func.func @grid_stride
// CHECK: %[[BLOCKS:.*]] = arith.constant 65535 : index
// CHECK: gpu.launch blocks({{.*}}) in (%{{.*}} = %[[BLOCKS]],
// CHECK-DAG: %[[TOTAL:.*]] = arith.constant 33554432 : index
// CHECK-DAG: %[[STRIDE:.*]] = arith.constant 16776960 : index
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[TOTAL]] step %[[STRIDE]]
func.func @grid_stride(%x: memref<16384x8192xf32>) {
  %c = arith.constant 1.0 : f32
  linalg.fill ins(%c : f32) outs(%x : memref<16384x8192xf32>)
  return
}

// A row sum over 64 columns (a norm statistic): one block per row (grid =
// 16 rows), 64 threads striding over the row, partials combined by a
// uniform all-reduce, thread 0 adds the initial value and stores.
// CHECK-LABEL: func.func @row_sum
// CHECK-DAG: %[[ROWS:.*]] = arith.constant 16 : index
// CHECK-DAG: %[[THREADS:.*]] = arith.constant 64 : index
// CHECK: gpu.launch blocks(%[[BX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[ROWS]], %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) threads(%[[TX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[THREADS]],
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[LEN:.*]] = arith.constant 64 : index
// CHECK: %[[STEP:.*]] = arith.constant 64 : index
// CHECK: %[[P:.*]] = scf.for %[[J:.*]] = %[[TX]] to %[[LEN]] step %[[STEP]] iter_args(%[[ACC:.*]] = %[[ZERO]]) -> (f32)
// CHECK: %[[V:.*]] = memref.load %arg0[%[[BX]], %[[J]]]
// CHECK: %[[SQ:.*]] = arith.mulf %[[V]], %[[V]] : f32
// CHECK: %[[N:.*]] = arith.addf %[[SQ]], %[[ACC]] : f32
// CHECK: scf.yield %[[N]] : f32
// CHECK: %[[TOT:.*]] = gpu.all_reduce add %[[P]] uniform {
// CHECK: %[[IS0:.*]] = arith.cmpi eq, %[[TX]], %{{.*}} : index
// CHECK: scf.if %[[IS0]] {
// CHECK: %[[INIT:.*]] = memref.load %arg1[%[[BX]]] : memref<16xf32>
// CHECK: %[[R:.*]] = arith.addf %[[INIT]], %[[TOT]] : f32
// CHECK: memref.store %[[R]], %arg1[%[[BX]]] : memref<16xf32>
func.func @row_sum(%x: memref<16x64xf32>, %s: memref<16xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<16x64xf32>) outs(%s : memref<16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %sq = arith.mulf %in, %in : f32
    %a = arith.addf %sq, %out : f32
    linalg.yield %a : f32
  }
  return
}

// Softmax's row maximum over 3-D scores (rows = 2*4*8 = 64, row length
// 1000 > 256: 256 threads), with the maximumf neutral element.
// CHECK-LABEL: func.func @row_max
// CHECK-DAG: %[[ROWS:.*]] = arith.constant 64 : index
// CHECK-DAG: %[[T:.*]] = arith.constant 256 : index
// CHECK: gpu.launch blocks({{.*}}) in (%{{.*}} = %[[ROWS]], %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) threads({{.*}}) in (%{{.*}} = %[[T]],
// CHECK: %[[NEG:.*]] = arith.constant 0xFF800000 : f32
// CHECK: %[[LEN:.*]] = arith.constant 1000 : index
// CHECK: scf.for {{.*}} to %[[LEN]] step %{{.*}} iter_args(%{{.*}} = %[[NEG]])
// CHECK: arith.maximumf
// CHECK: gpu.all_reduce maximumf %{{.*}} uniform
func.func @row_max(%x: memref<2x4x8x1000xf32>, %m: memref<2x4x8xf32>) {
  linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, b, c)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x : memref<2x4x8x1000xf32>) outs(%m : memref<2x4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.maximumf %in, %out : f32
    linalg.yield %r : f32
  }
  return
}

// A bf16 row sum accumulates in f32: the partials start at the extended
// neutral element, each element is extended before it is added, the
// all-reduce combines f32 partials, and the sum with the initial value is
// rounded to bf16 once, at the store.
// CHECK-LABEL: func.func @row_sum_bf16
// CHECK: %[[Z:.*]] = arith.extf %{{.*}} : bf16 to f32
// CHECK: %[[P:.*]] = scf.for %{{.*}} iter_args(%[[ACC:.*]] = %[[Z]]) -> (f32)
// CHECK: %[[X:.*]] = memref.load %{{.*}} : memref<16x64xbf16>
// CHECK: %[[XW:.*]] = arith.extf %[[X]] : bf16 to f32
// CHECK: %[[S:.*]] = arith.addf %[[XW]], %[[ACC]] : f32
// CHECK: scf.yield %[[S]] : f32
// CHECK: %[[T:.*]] = gpu.all_reduce add %[[P]] uniform
// CHECK-NEXT: } : (f32) -> f32
// CHECK: %[[I:.*]] = memref.load %{{.*}} : memref<16xbf16>
// CHECK: %[[IW:.*]] = arith.extf %[[I]] : bf16 to f32
// CHECK: %[[R:.*]] = arith.addf %[[IW]], %[[T]] : f32
// CHECK: %[[RB:.*]] = arith.truncf %[[R]] : f32 to bf16
// CHECK: memref.store %[[RB]]
// CHECK-NOT: -> (bf16)
func.func @row_sum_bf16(%x: memref<16x64xbf16>, %s: memref<16xbf16>) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<16x64xbf16>) outs(%s : memref<16xbf16>) {
  ^bb0(%in: bf16, %out: bf16):
    %a = arith.addf %in, %out : bf16
    linalg.yield %a : bf16
  }
  return
}

// Norm statistics in bf16 (a sum of squares): the square is the region's,
// in bf16, and only the accumulation is widened.
// CHECK-LABEL: func.func @row_sumsq_bf16
// CHECK: scf.for %{{.*}} iter_args(%[[ACC:.*]] = %{{.*}}) -> (f32)
// CHECK: %[[SQ:.*]] = arith.mulf %{{.*}}, %{{.*}} : bf16
// CHECK: %[[SQW:.*]] = arith.extf %[[SQ]] : bf16 to f32
// CHECK: arith.addf %[[ACC]], %[[SQW]] : f32
// CHECK: gpu.all_reduce add %{{.*}} uniform
// CHECK-NEXT: } : (f32) -> f32
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK-NOT: -> (bf16)
func.func @row_sumsq_bf16(%x: memref<16x64xbf16>, %s: memref<16xbf16>) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<16x64xbf16>) outs(%s : memref<16xbf16>) {
  ^bb0(%in: bf16, %out: bf16):
    %sq = arith.mulf %in, %in : bf16
    %a = arith.addf %out, %sq : bf16
    linalg.yield %a : bf16
  }
  return
}

// A bf16 softmax: the row maximum and the sum of exponentials both reduce
// in f32 (max is exact either way; the sum is what needs it).
// CHECK-LABEL: func.func @softmax_stats_bf16
// CHECK: scf.for %{{.*}} -> (f32)
// CHECK: arith.maximumf %{{.*}}, %{{.*}} : f32
// CHECK: gpu.all_reduce maximumf %{{.*}} uniform
// CHECK-NEXT: } : (f32) -> f32
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK: scf.for %{{.*}} -> (f32)
// CHECK: %[[E:.*]] = math.exp %{{.*}} : bf16
// CHECK: %[[EW:.*]] = arith.extf %[[E]] : bf16 to f32
// CHECK: arith.addf %[[EW]], %{{.*}} : f32
// CHECK: gpu.all_reduce add %{{.*}} uniform
// CHECK-NEXT: } : (f32) -> f32
// CHECK: arith.truncf %{{.*}} : f32 to bf16
func.func @softmax_stats_bf16(%x: memref<32x8xbf16>, %m: memref<32xbf16>, %s: memref<32xbf16>) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<32x8xbf16>) outs(%m : memref<32xbf16>) {
  ^bb0(%in: bf16, %out: bf16):
    %a = arith.maximumf %in, %out : bf16
    linalg.yield %a : bf16
  }
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"]}
      ins(%x, %m : memref<32x8xbf16>, memref<32xbf16>) outs(%s : memref<32xbf16>) {
  ^bb0(%in: bf16, %max: bf16, %out: bf16):
    %d = arith.subf %in, %max : bf16
    %e = math.exp %d : bf16
    %a = arith.addf %e, %out : bf16
    linalg.yield %a : bf16
  }
  return
}

// A reduction over the leading dimension (a column sum): blocks of 32
// columns x 16 row threads (the 16 rows), partials in workgroup memory,
// a tree of barrier-separated steps; no remark.
// CHECK-LABEL: func.func @column_sum
// CHECK: gpu.launch blocks(%{{.*}}) in (%{{.*}} = %c2, %{{.*}} = %c1, %{{.*}} = %c1) threads(%{{.*}}) in (%{{.*}} = %c32, %{{.*}} = %c16, %{{.*}} = %c1) workgroup(%[[WG:.*]] : memref<512xf32, #gpu.address_space<workgroup>>)
// CHECK-NOT: gpu.all_reduce
// CHECK: scf.for %{{.*}} iter_args
// CHECK: arith.addf
// CHECK: memref.store %{{.*}}, %[[WG]]
// CHECK: gpu.barrier
// CHECK: gpu.barrier
func.func @column_sum(%x: memref<16x64xf32>, %s: memref<64xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>], iterator_types = ["reduction", "parallel"]}
      ins(%x : memref<16x64xf32>) outs(%s : memref<64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %a = arith.addf %in, %out : f32
    linalg.yield %a : f32
  }
  return
}

// A bf16 column sum accumulates in f32 too (partials, workgroup buffer),
// truncated once at the store.
// CHECK-LABEL: func.func @column_sum_bf16
// CHECK: workgroup(%[[WG16:.*]] : memref<{{[0-9]+}}xf32, #gpu.address_space<workgroup>>)
// CHECK: scf.for %{{.*}} -> (f32)
// CHECK: arith.extf %{{.*}} : bf16 to f32
// CHECK: gpu.barrier
// CHECK: arith.truncf %{{.*}} : f32 to bf16
func.func @column_sum_bf16(%x: memref<128x64xbf16>, %s: memref<64xbf16>) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>], iterator_types = ["reduction", "parallel"]}
      ins(%x : memref<128x64xbf16>) outs(%s : memref<64xbf16>) {
  ^bb0(%in: bf16, %out: bf16):
    %a = arith.addf %in, %out : bf16
    linalg.yield %a : bf16
  }
  return
}

// A reduction without a known combiner keeps the serial fallback: one
// thread per output point, with a remark.
// CHECK-LABEL: func.func @unknown_combiner
// CHECK: gpu.launch
// CHECK-NOT: gpu.all_reduce
// CHECK-NOT: gpu.barrier
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args
// CHECK: arith.subf
func.func @unknown_combiner(%x: memref<16x64xf32>, %s: memref<64xf32>) {
  // expected-remark @below {{reduction is not a row reduction with a known combiner: one thread per output point}}
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>], iterator_types = ["reduction", "parallel"]}
      ins(%x : memref<16x64xf32>) outs(%s : memref<64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %a = arith.subf %out, %in : f32
    linalg.yield %a : f32
  }
  return
}

// linalg.index reads the loop index (a causal mask): in the group of 4,
// point 1's column is the group's first column + 1.
// CHECK-LABEL: func.func @causal_mask
// CHECK: %[[G:.*]] = arith.remui
// CHECK: %[[I:.*]] = arith.divui
// CHECK: %[[J0:.*]] = arith.muli %[[G]], %c4
// CHECK: %[[J1:.*]] = arith.addi %[[J0]], %c1
// CHECK: arith.cmpi ugt, %[[J1]], %[[I]] : index
// CHECK-NOT: linalg.index
func.func @causal_mask(%x: memref<8x8xf32>, %y: memref<8x8xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<8x8xf32>) outs(%y : memref<8x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %up = arith.cmpi ugt, %j, %i : index
    %ninf = arith.constant 0xFF800000 : f32
    %r = arith.select %up, %ninf, %in : f32
    linalg.yield %r : f32
  }
  return
}

// Host buffers: allocations, copies between contiguous buffers, and their
// release move to the device.
// CHECK-LABEL: func.func @host_buffers
// CHECK: %[[T:.*]] = gpu.alloc () : memref<16x64xf32>
// CHECK: gpu.memcpy %[[T]], %arg0 : memref<16x64xf32>, memref<16x64xf32>
// CHECK: gpu.memcpy %arg1, %[[T]]
// CHECK: gpu.dealloc %[[T]] : memref<16x64xf32>
// CHECK-NOT: memref.alloc
// CHECK-NOT: memref.copy
func.func @host_buffers(%x: memref<16x64xf32>, %y: memref<16x64xf32>) {
  %t = memref.alloc() : memref<16x64xf32>
  memref.copy %x, %t : memref<16x64xf32> to memref<16x64xf32>
  memref.copy %t, %y : memref<16x64xf32> to memref<16x64xf32>
  memref.dealloc %t : memref<16x64xf32>
  return
}

// A copy out of a strided view is a kernel (vectorized: the view's rows
// start at offset 32, a multiple of the group of 4).
// CHECK-LABEL: func.func @strided_copy
// CHECK: %[[V:.*]] = memref.subview
// CHECK: gpu.launch
// CHECK: vector.load %[[V]]
// CHECK: vector.store %{{.*}}, %arg1
// CHECK-NOT: gpu.memcpy
func.func @strided_copy(%x: memref<16x64xf32>, %y: memref<16x32xf32>) {
  %v = memref.subview %x[0, 32] [16, 32] [1, 1] : memref<16x64xf32> to memref<16x32xf32, strided<[64, 1], offset: 32>>
  memref.copy %v, %y : memref<16x32xf32, strided<[64, 1], offset: 32>> to memref<16x32xf32>
  return
}

// A constant table gets a device copy, freed before the return.
memref.global "private" constant @table : memref<4xf32> = dense<[1.0, 2.0, 3.0, 4.0]>
// CHECK-LABEL: func.func @constant_table
// CHECK: %[[H:.*]] = memref.get_global @table : memref<4xf32>
// CHECK: %[[D:.*]] = gpu.alloc () : memref<4xf32>
// CHECK: gpu.memcpy %[[D]], %[[H]]
// CHECK: gpu.launch
// CHECK: vector.load %[[D]]
// CHECK: gpu.dealloc %[[D]]
// CHECK-NEXT: return
func.func @constant_table(%y: memref<4xf32>) {
  %t = memref.get_global @table : memref<4xf32>
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%t : memref<4xf32>) outs(%y : memref<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  }
  return
}
