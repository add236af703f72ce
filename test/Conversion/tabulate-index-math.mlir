// RUN: tp-opt %s --tp-tabulate-index-math --split-input-file | FileCheck %s
// Transcendentals of loop indices become tables over just the loops they
// use, computed once per distinct index; the op reads them.

// tp-gen's rotary embedding on [b, s, h, 2, D/2] (here [1, 8, 4, 2, 16]):
// theta^(-2j/D), cos and sin of s times it depend on (s, j) only: one
// [8, 16] generic computes cos and sin (powf, cos, sin once per (s, j)),
// and the rotation reads them through (d1, d4). Nothing transcendental is
// left in the op.
// CHECK-DAG: #[[SJ:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d1, d4)>
// CHECK-LABEL: func.func @rope
// CHECK: %[[T:.*]]:2 = linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]} outs(%{{.*}}, %{{.*}} : tensor<8x16xf32>, tensor<8x16xf32>)
// CHECK: %[[S:.*]] = linalg.index 0 : index
// CHECK: %[[J:.*]] = linalg.index 1 : index
// CHECK: math.powf
// CHECK: %[[COS:.*]] = math.cos
// CHECK: %[[SIN:.*]] = math.sin
// CHECK: linalg.yield %[[COS]], %[[SIN]] : f32, f32
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}, #[[SJ]], #[[SJ]], #{{.*}}], {{.*}} ins(%arg0, %arg1, %[[T]]#0, %[[T]]#1 :
// CHECK-NOT: math.
// CHECK: linalg.yield
#half = affine_map<(b, s, h, c, j) -> (b, s, h, j)>
#out = affine_map<(b, s, h, c, j) -> (b, s, h, c, j)>
func.func @rope(%x1: tensor<1x8x4x16xf32>, %x2: tensor<1x8x4x16xf32>) -> tensor<1x8x4x2x16xf32> {
  %e = tensor.empty() : tensor<1x8x4x2x16xf32>
  %r = linalg.generic {indexing_maps = [#half, #half, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%x1, %x2 : tensor<1x8x4x16xf32>, tensor<1x8x4x16xf32>) outs(%e : tensor<1x8x4x2x16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = linalg.index 1 : index
    %j = linalg.index 4 : index
    %si = arith.index_cast %s : index to i64
    %sf = arith.sitofp %si : i64 to f32
    %ji = arith.index_cast %j : index to i64
    %jf = arith.sitofp %ji : i64 to f32
    %c = arith.constant -0.0625 : f32
    %theta = arith.constant 10000.0 : f32
    %ex = arith.mulf %jf, %c : f32
    %f = math.powf %theta, %ex : f32
    %ang = arith.mulf %sf, %f : f32
    %co = math.cos %ang : f32
    %sn = math.sin %ang : f32
    %p = arith.mulf %a, %co : f32
    %q = arith.mulf %b, %sn : f32
    %first = arith.subf %p, %q : f32
    %p2 = arith.mulf %b, %co : f32
    %q2 = arith.mulf %a, %sn : f32
    %second = arith.addf %p2, %q2 : f32
    %half = linalg.index 3 : index
    %zero = arith.constant 0 : index
    %isFirst = arith.cmpi eq, %half, %zero : index
    %y = arith.select %isFirst, %first, %second : f32
    linalg.yield %y : f32
  } -> tensor<1x8x4x2x16xf32>
  return %r : tensor<1x8x4x2x16xf32>
}

// -----

// The rotations of Q and of K: two ops with the same angles. The second
// table equals the first (the same ops on the same indices) and is that
// one: powf, cos and sin once per (s, j) for both (they were computed twice,
// once per rotation: the comparison knew no value of the tables' bodies).
// CHECK-LABEL: func.func @rope_q_and_k
// CHECK: %[[T:.*]]:2 = linalg.generic
// CHECK: math.powf
// CHECK: linalg.yield
// CHECK-NOT: math.
// CHECK: ins(%arg0, %arg1, %[[T]]#0, %[[T]]#1 :
// CHECK-NOT: math.
// CHECK: ins(%arg2, %arg3, %[[T]]#0, %[[T]]#1 :
// CHECK-NOT: math.
// CHECK: return
#half = affine_map<(b, s, h, c, j) -> (b, s, h, j)>
#out = affine_map<(b, s, h, c, j) -> (b, s, h, c, j)>
func.func @rope_q_and_k(%x1: tensor<1x8x4x16xf32>, %x2: tensor<1x8x4x16xf32>, %y1: tensor<1x8x4x16xf32>, %y2: tensor<1x8x4x16xf32>) -> (tensor<1x8x4x2x16xf32>, tensor<1x8x4x2x16xf32>) {
  %e = tensor.empty() : tensor<1x8x4x2x16xf32>
  %r = linalg.generic {indexing_maps = [#half, #half, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%x1, %x2 : tensor<1x8x4x16xf32>, tensor<1x8x4x16xf32>) outs(%e : tensor<1x8x4x2x16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = linalg.index 1 : index
    %j = linalg.index 4 : index
    %si = arith.index_cast %s : index to i64
    %sf = arith.sitofp %si : i64 to f32
    %ji = arith.index_cast %j : index to i64
    %jf = arith.sitofp %ji : i64 to f32
    %c = arith.constant -0.0625 : f32
    %theta = arith.constant 10000.0 : f32
    %ex = arith.mulf %jf, %c : f32
    %f = math.powf %theta, %ex : f32
    %ang = arith.mulf %sf, %f : f32
    %co = math.cos %ang : f32
    %sn = math.sin %ang : f32
    %p = arith.mulf %a, %co : f32
    %q = arith.mulf %b, %sn : f32
    %first = arith.subf %p, %q : f32
    %p2 = arith.mulf %b, %co : f32
    %q2 = arith.mulf %a, %sn : f32
    %second = arith.addf %p2, %q2 : f32
    %half = linalg.index 3 : index
    %zero = arith.constant 0 : index
    %isFirst = arith.cmpi eq, %half, %zero : index
    %y = arith.select %isFirst, %first, %second : f32
    linalg.yield %y : f32
  } -> tensor<1x8x4x2x16xf32>
  %e2 = tensor.empty() : tensor<1x8x4x2x16xf32>
  %r2 = linalg.generic {indexing_maps = [#half, #half, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%y1, %y2 : tensor<1x8x4x16xf32>, tensor<1x8x4x16xf32>) outs(%e2 : tensor<1x8x4x2x16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = linalg.index 1 : index
    %j = linalg.index 4 : index
    %si = arith.index_cast %s : index to i64
    %sf = arith.sitofp %si : i64 to f32
    %ji = arith.index_cast %j : index to i64
    %jf = arith.sitofp %ji : i64 to f32
    %c = arith.constant -0.0625 : f32
    %theta = arith.constant 10000.0 : f32
    %ex = arith.mulf %jf, %c : f32
    %f = math.powf %theta, %ex : f32
    %ang = arith.mulf %sf, %f : f32
    %co = math.cos %ang : f32
    %sn = math.sin %ang : f32
    %p = arith.mulf %a, %co : f32
    %q = arith.mulf %b, %sn : f32
    %first = arith.subf %p, %q : f32
    %p2 = arith.mulf %b, %co : f32
    %q2 = arith.mulf %a, %sn : f32
    %second = arith.addf %p2, %q2 : f32
    %half = linalg.index 3 : index
    %zero = arith.constant 0 : index
    %isFirst = arith.cmpi eq, %half, %zero : index
    %y = arith.select %isFirst, %first, %second : f32
    linalg.yield %y : f32
  } -> tensor<1x8x4x2x16xf32>
  return %r, %r2 : tensor<1x8x4x2x16xf32>, tensor<1x8x4x2x16xf32>
}

// -----

// Two rotations with different bases: two tables.
// CHECK-LABEL: func.func @rope_two_bases
// CHECK: %[[T1:.*]]:2 = linalg.generic
// CHECK: arith.constant 1.000000e+04 : f32
// CHECK: ins(%arg0, %arg1, %[[T1]]#0, %[[T1]]#1 :
// CHECK: %[[T2:.*]]:2 = linalg.generic
// CHECK: arith.constant 5.000000e+05 : f32
// CHECK: ins(%arg2, %arg3, %[[T2]]#0, %[[T2]]#1 :
#half = affine_map<(b, s, h, c, j) -> (b, s, h, j)>
#out = affine_map<(b, s, h, c, j) -> (b, s, h, c, j)>
func.func @rope_two_bases(%x1: tensor<1x8x4x16xf32>, %x2: tensor<1x8x4x16xf32>, %y1: tensor<1x8x4x16xf32>, %y2: tensor<1x8x4x16xf32>) -> (tensor<1x8x4x2x16xf32>, tensor<1x8x4x2x16xf32>) {
  %e = tensor.empty() : tensor<1x8x4x2x16xf32>
  %r = linalg.generic {indexing_maps = [#half, #half, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%x1, %x2 : tensor<1x8x4x16xf32>, tensor<1x8x4x16xf32>) outs(%e : tensor<1x8x4x2x16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = linalg.index 1 : index
    %j = linalg.index 4 : index
    %si = arith.index_cast %s : index to i64
    %sf = arith.sitofp %si : i64 to f32
    %ji = arith.index_cast %j : index to i64
    %jf = arith.sitofp %ji : i64 to f32
    %c = arith.constant -0.0625 : f32
    %theta = arith.constant 10000.0 : f32
    %ex = arith.mulf %jf, %c : f32
    %f = math.powf %theta, %ex : f32
    %ang = arith.mulf %sf, %f : f32
    %co = math.cos %ang : f32
    %sn = math.sin %ang : f32
    %p = arith.mulf %a, %co : f32
    %q = arith.mulf %b, %sn : f32
    %first = arith.subf %p, %q : f32
    %p2 = arith.mulf %b, %co : f32
    %q2 = arith.mulf %a, %sn : f32
    %second = arith.addf %p2, %q2 : f32
    %half = linalg.index 3 : index
    %zero = arith.constant 0 : index
    %isFirst = arith.cmpi eq, %half, %zero : index
    %y = arith.select %isFirst, %first, %second : f32
    linalg.yield %y : f32
  } -> tensor<1x8x4x2x16xf32>
  %e2 = tensor.empty() : tensor<1x8x4x2x16xf32>
  %r2 = linalg.generic {indexing_maps = [#half, #half, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%y1, %y2 : tensor<1x8x4x16xf32>, tensor<1x8x4x16xf32>) outs(%e2 : tensor<1x8x4x2x16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = linalg.index 1 : index
    %j = linalg.index 4 : index
    %si = arith.index_cast %s : index to i64
    %sf = arith.sitofp %si : i64 to f32
    %ji = arith.index_cast %j : index to i64
    %jf = arith.sitofp %ji : i64 to f32
    %c = arith.constant -0.0625 : f32
    %theta = arith.constant 500000.0 : f32
    %ex = arith.mulf %jf, %c : f32
    %f = math.powf %theta, %ex : f32
    %ang = arith.mulf %sf, %f : f32
    %co = math.cos %ang : f32
    %sn = math.sin %ang : f32
    %p = arith.mulf %a, %co : f32
    %q = arith.mulf %b, %sn : f32
    %first = arith.subf %p, %q : f32
    %p2 = arith.mulf %b, %co : f32
    %q2 = arith.mulf %a, %sn : f32
    %second = arith.addf %p2, %q2 : f32
    %half = linalg.index 3 : index
    %zero = arith.constant 0 : index
    %isFirst = arith.cmpi eq, %half, %zero : index
    %y = arith.select %isFirst, %first, %second : f32
    linalg.yield %y : f32
  } -> tensor<1x8x4x2x16xf32>
  return %r, %r2 : tensor<1x8x4x2x16xf32>, tensor<1x8x4x2x16xf32>
}

// -----

// Index math without a transcendental (a causal mask's compare), and a
// transcendental of every loop (no saving), stay as they are.
// CHECK-LABEL: func.func @untouched
// CHECK-NOT: tensor.empty() : tensor<8xf32>
// CHECK: linalg.generic
// CHECK: arith.cmpi ugt
// CHECK: linalg.generic
// CHECK: math.exp
// CHECK-NOT: linalg.generic
func.func @untouched(%x: tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>) {
  %e = tensor.empty() : tensor<8x8xf32>
  %m = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<8x8xf32>) outs(%e : tensor<8x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %future = arith.cmpi ugt, %j, %i : index
    %ninf = arith.constant 0xFF800000 : f32
    %r = arith.select %future, %ninf, %a : f32
    linalg.yield %r : f32
  } -> tensor<8x8xf32>
  %t = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<8x8xf32>) outs(%e : tensor<8x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %k = arith.addi %i, %j : index
    %ki = arith.index_cast %k : index to i64
    %kf = arith.sitofp %ki : i64 to f32
    %ex = math.exp %kf : f32
    %r = arith.mulf %a, %ex : f32
    linalg.yield %r : f32
  } -> tensor<8x8xf32>
  return %m, %t : tensor<8x8xf32>, tensor<8x8xf32>
}
