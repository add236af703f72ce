// RUN: tp-opt %s --pass-pipeline="builtin.module(func.func(tp-vectorize-cpu))" | FileCheck %s
// RUN: tp-opt %s --pass-pipeline="builtin.module(func.func(tp-vectorize-cpu{vector-bytes=32}))" | FileCheck %s --check-prefix=AVX2
// Elementwise and reduction linalg ops on buffers become loops over
// vectors of vector-bytes (64: 16 f32 lanes, 8 f64 lanes), along the
// innermost dimension of their largest operand.

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>

// Elementwise: rows by one, columns by 16 lanes; tanh is a polynomial on
// the vector, not a libm call per element.
// CHECK-LABEL: func.func @elementwise
// CHECK-DAG: %[[C16:.*]] = arith.constant 16 : index
// CHECK-DAG: %[[C64:.*]] = arith.constant 64 : index
// CHECK: scf.for
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[C64]] step %[[C16]]
// CHECK: %[[V:.*]] = vector.load {{.*}} vector<16xf32>
// CHECK-NOT: math.tanh
// CHECK: math.fma {{.*}} : vector<16xf32>
// CHECK: vector.store {{.*}} vector<16xf32>
// CHECK-NOT: linalg.generic
// AVX2-LABEL: func.func @elementwise
// AVX2: vector.load {{.*}} vector<8xf32>
func.func @elementwise(%x: memref<8x64xf32>, %y: memref<8x64xf32>) {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<8x64xf32>) outs(%y : memref<8x64xf32>) {
  ^bb0(%in: f32, %o: f32):
    %t = math.tanh %in : f32
    linalg.yield %t : f32
  }
  return
}

// A row sum (softmax's, a norm's) runs along the row: 16 lanes at a time
// reduced into the accumulator, and the 4 left over (100 = 6 x 16 + 4) as
// one more vector of 4 (the peeled last iteration).
// CHECK-LABEL: func.func @row_sum
// CHECK: scf.for
// CHECK: scf.for
// CHECK: vector.reduction <add>, %{{.*}}, %{{.*}} : vector<16xf32> into f32
// CHECK: }
// CHECK: vector.reduction <add>, %{{.*}}, %{{.*}} : vector<4xf32> into f32
func.func @row_sum(%x: memref<4x100xf32>, %y: memref<4xf32>) {
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<4x100xf32>) outs(%y : memref<4xf32>) {
  ^bb0(%in: f32, %o: f32):
    %s = arith.addf %in, %o : f32
    linalg.yield %s : f32
  }
  return
}

// A column sum runs along the kept columns: each row is added to the
// accumulator as vectors, with no horizontal reduction at all.
// CHECK-LABEL: func.func @column_sum
// CHECK-NOT: vector.reduction
// CHECK: arith.addf {{.*}} : vector<16xf32>
// CHECK-NOT: vector.reduction
// CHECK: return
func.func @column_sum(%x: memref<32x64xf32>, %y: memref<64xf32>) {
  linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]}
      ins(%x : memref<32x64xf32>) outs(%y : memref<64xf32>) {
  ^bb0(%in: f32, %o: f32):
    %s = arith.addf %in, %o : f32
    linalg.yield %s : f32
  }
  return
}

// f64 (torch-mlir's LayerNorm statistics): 8 lanes in 64 bytes.
// CHECK-LABEL: func.func @f64
// CHECK: arith.mulf {{.*}} : vector<8xf64>
func.func @f64(%x: memref<4x32xf64>, %y: memref<4x32xf64>) {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<4x32xf64>) outs(%y : memref<4x32xf64>) {
  ^bb0(%in: f64, %o: f64):
    %t = arith.mulf %in, %in : f64
    linalg.yield %t : f64
  }
  return
}

// A dimension shorter than two vectors is one vector of its own length.
// CHECK-LABEL: func.func @short_rows
// CHECK: arith.addf {{.*}} : vector<24xf32>
func.func @short_rows(%x: memref<8x24xf32>, %y: memref<8x24xf32>) {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<8x24xf32>) outs(%y : memref<8x24xf32>) {
  ^bb0(%in: f32, %o: f32):
    %t = arith.addf %in, %in : f32
    linalg.yield %t : f32
  }
  return
}

// A gather through memref.load (an embedding lookup) stays a linalg op:
// convert-linalg-to-loops makes it scalar loops.
// CHECK-LABEL: func.func @gather
// CHECK: linalg.generic
// CHECK: memref.load
func.func @gather(%table: memref<256x64xf32>, %ids: memref<8xi64>, %y: memref<8x64xf32>) {
  linalg.generic {indexing_maps = [#row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%ids : memref<8xi64>) outs(%y : memref<8x64xf32>) {
  ^bb0(%id: i64, %o: f32):
    %i = arith.index_cast %id : i64 to index
    %j = linalg.index 1 : index
    %v = memref.load %table[%i, %j] : memref<256x64xf32>
    linalg.yield %v : f32
  }
  return
}

// A transpose writes whole vectors of its result's rows (the reads gather
// a column).
// CHECK-LABEL: func.func @transpose
// CHECK: vector.store {{.*}} vector<16xf32>
// CHECK-NOT: linalg.transpose
func.func @transpose(%x: memref<64x32xf32>, %y: memref<32x64xf32>) {
  linalg.transpose ins(%x : memref<64x32xf32>) outs(%y : memref<32x64xf32>) permutation = [1, 0]
  return
}

// Contractions are the runtime GEMM's: a matmul left here stays linalg.
// CHECK-LABEL: func.func @matmul
// CHECK: linalg.matmul
func.func @matmul(%a: memref<8x16xf32>, %b: memref<16x32xf32>, %c: memref<8x32xf32>) {
  linalg.matmul ins(%a, %b : memref<8x16xf32>, memref<16x32xf32>) outs(%c : memref<8x32xf32>)
  return
}

// i1 elements are a byte each in a memref but packed bits in an LLVM
// vector: a mask's row reduction stays a scalar loop (run-programs.test's
// i1-masks, whose any/parity rows were wrong when vectorized).
// CHECK-LABEL: func.func @mask_any
// CHECK-NOT: vector.
// CHECK: linalg.generic
// CHECK-NOT: vector.
// CHECK: return
func.func @mask_any(%m: memref<4x64xi1>, %y: memref<4xi1>) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"]}
      ins(%m : memref<4x64xi1>) outs(%y : memref<4xi1>) {
  ^bb0(%a: i1, %acc: i1):
    %r = arith.maxui %a, %acc : i1
    linalg.yield %r : i1
  }
  return
}
