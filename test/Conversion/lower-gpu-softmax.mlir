// RUN: tp-opt %s --tp-decompose-aggregates --tp-fuse-softmax -split-input-file | FileCheck %s --check-prefix=FUSE
// RUN: tp-opt %s -split-input-file --tp-lower-gpu="chip=sm_90 format=isa stop-after=kernels" | FileCheck %s --check-prefix=KERN
// RUN: tp-opt %s -split-input-file --tp-lower-gpu="chip=sm_90 format=isa stop-after=kernels" | grep -c "gpu.launch_func" | FileCheck %s --check-prefix=COUNT
// RUN: tp-opt %s -split-input-file --tp-lower-gpu="chip=sm_90 format=isa" | FileCheck %s --check-prefix=PTX
// Softmax on the GPU path is one kernel per row: a softmax from a front end
// (linalg.softmax, decomposed by tp-decompose-aggregates) and tp-gen's
// spelling (max, exp(x - max), sum, divide as generics, the division
// followed by a truncf to bf16) both become one linalg.softmax
// (tp-fuse-softmax) and one launch with an online max and sum. They used to
// be two fills, two row reductions and two elementwise kernels each
// (6 launches). A chain whose exp(x - max) has another user stays as it is.
// Six launches in all below: one per softmax, a scale kernel before the
// bf16 attention one, and two for the chain left alone (each reduction
// absorbs its accumulator's fill and applies the next op as its row
// epilogue).
// COUNT: 6

// A front end's linalg.softmax, decomposed and put back together.
// FUSE-LABEL: func.func @softmax_f32
// FUSE: %[[Y:.*]] = linalg.softmax dimension(1) ins(%arg0 : tensor<16x64xf32>) outs(%{{.*}} : tensor<16x64xf32>) -> tensor<16x64xf32>
// FUSE-NOT: linalg.generic
// FUSE: return %[[Y]]
// One block per row (16 blocks of 64 threads); one pass over the row keeps
// the running max and the rescaled sum; the max, then the sums rescaled to
// it, are combined across the block; a second loop stores exp(x - M) / S.
// KERN-LABEL: func.func @softmax_f32
// KERN: gpu.launch_func @{{.*}}::@[[K:softmax_f32_kernel]] blocks in (%c16, %c1, %c1) threads in (%c64, %c1, %c1) args(%arg0 : memref<16x64xf32>, %arg1 : memref<16x64xf32>)
// KERN-NOT: gpu.launch_func
// KERN: return
// KERN: gpu.func @[[K]](
// KERN: %[[ONLINE:.*]]:2 = scf.for {{.*}} iter_args(%[[M:.*]] = %cst{{.*}}, %[[S:.*]] = %cst{{.*}}) -> (f32, f32)
// KERN: %[[X:.*]] = memref.load %arg0
// KERN: %[[NM:.*]] = arith.maximumf %[[M]], %[[X]] : f32
// KERN: math.exp
// KERN: arith.mulf %[[S]]
// KERN: math.exp
// KERN: arith.addf
// KERN: scf.yield %[[NM]]
// KERN: %[[ROWMAX:.*]] = gpu.all_reduce maximumf %[[ONLINE]]#0 uniform
// KERN: arith.mulf %[[ONLINE]]#1
// KERN: %[[ROWSUM:.*]] = gpu.all_reduce add %{{.*}} uniform
// KERN: scf.for
// KERN: %[[X2:.*]] = memref.load %arg0
// KERN: %[[D:.*]] = arith.subf %[[X2]], %[[ROWMAX]] : f32
// KERN: %[[E:.*]] = math.exp %[[D]] : f32
// KERN: %[[Y:.*]] = arith.divf %[[E]], %[[ROWSUM]] : f32
// KERN: memref.store %[[Y]], %arg1
// KERN: gpu.return
// The PTX has one entry, warp shuffles for the block all-reduces, and the
// maximum and exponential.
// PTX-LABEL: llvm.func @softmax_f32
// PTX: gpu.binary @softmax_f32_kernel
// PTX-SAME: .entry softmax_f32_kernel
// PTX-NOT: .entry
// PTX-SAME: max.NaN.f32
// PTX-SAME: shfl.sync.bfly.b32
// PTX-SAME: ex2.approx
// PTX: // -----
func.func @softmax_f32(%x: tensor<16x64xf32>) -> tensor<16x64xf32> {
  %e = tensor.empty() : tensor<16x64xf32>
  %y = linalg.softmax dimension(1) ins(%x : tensor<16x64xf32>) outs(%e : tensor<16x64xf32>) -> tensor<16x64xf32>
  return %y : tensor<16x64xf32>
}

// -----

// tp-gen's attention softmax in bf16: the scores are extended to f32 and
// scaled, the softmax is in f32 and its result truncated. On tensors the
// cast stays an elementwise generic after the softmax (linalg.softmax keeps
// one element type); on buffers the softmax kernel stores the truncated
// value into the cast's output, and the f32 buffer of probabilities goes.
// FUSE-LABEL: func.func @softmax_bf16_scores
// FUSE: %[[X:.*]] = linalg.generic
// FUSE: arith.extf
// FUSE: %[[P:.*]] = linalg.softmax dimension(2) ins(%[[X]] : tensor<4x8x128xf32>)
// FUSE: %[[Y:.*]] = linalg.generic {{.*}} ins(%[[P]] : tensor<4x8x128xf32>) outs(%{{.*}} : tensor<4x8x128xbf16>)
// FUSE: arith.truncf %{{.*}} : f32 to bf16
// FUSE: return %[[Y]]
// KERN-LABEL: func.func @softmax_bf16_scores
// KERN: %[[X:.*]] = gpu.alloc () : memref<4x8x128xf32>
// KERN-NOT: gpu.alloc
// KERN: gpu.launch_func @tp_kernels::@{{.*}} blocks in (%c2, %c1, %c1) threads in (%c256, %c1, %c1) args(%arg0 : memref<4x8x128xbf16>, %[[X]] : memref<4x8x128xf32>)
// KERN: gpu.launch_func @tp_kernels::@[[SM:.*]] blocks in (%c32, %c1, %c1) threads in (%c128, %c1, %c1) args(%[[X]] : memref<4x8x128xf32>, %arg1 : memref<4x8x128xbf16>)
// KERN-NOT: gpu.launch_func
// KERN: return
// KERN: gpu.func @[[SM]](
// KERN: gpu.all_reduce add
// KERN: scf.for
// KERN: arith.divf
// KERN: %[[T:.*]] = arith.truncf %{{.*}} : f32 to bf16
// KERN: memref.store %[[T]], %arg1
// KERN: gpu.return
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#row3 = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @softmax_bf16_scores(%s: tensor<4x8x128xbf16>) -> tensor<4x8x128xbf16> {
  %scale = arith.constant 0.125 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %ef = tensor.empty() : tensor<4x8x128xf32>
  %x = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s : tensor<4x8x128xbf16>) outs(%ef : tensor<4x8x128xf32>) {
  ^bb0(%in: bf16, %o: f32):
    %w = arith.extf %in : bf16 to f32
    %v = arith.mulf %w, %scale : f32
    linalg.yield %v : f32
  } -> tensor<4x8x128xf32>
  %er = tensor.empty() : tensor<4x8xf32>
  %minf = linalg.fill ins(%ninf : f32) outs(%er : tensor<4x8xf32>) -> tensor<4x8xf32>
  %m = linalg.generic {indexing_maps = [#id3, #row3], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x : tensor<4x8x128xf32>) outs(%minf : tensor<4x8xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %r = arith.maximumf %in, %acc : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  %ex = linalg.generic {indexing_maps = [#id3, #row3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x, %m : tensor<4x8x128xf32>, tensor<4x8xf32>) outs(%ef : tensor<4x8x128xf32>) {
  ^bb0(%in: f32, %mx: f32, %o: f32):
    %d = arith.subf %in, %mx : f32
    %v = math.exp %d : f32
    linalg.yield %v : f32
  } -> tensor<4x8x128xf32>
  %z = linalg.fill ins(%zero : f32) outs(%er : tensor<4x8xf32>) -> tensor<4x8xf32>
  %sum = linalg.generic {indexing_maps = [#id3, #row3], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%ex : tensor<4x8x128xf32>) outs(%z : tensor<4x8xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %r = arith.addf %in, %acc : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  %eb = tensor.empty() : tensor<4x8x128xbf16>
  %y = linalg.generic {indexing_maps = [#id3, #row3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%ex, %sum : tensor<4x8x128xf32>, tensor<4x8xf32>) outs(%eb : tensor<4x8x128xbf16>) {
  ^bb0(%in: f32, %t: f32, %o: bf16):
    %q = arith.divf %in, %t : f32
    %v = arith.truncf %q : f32 to bf16
    linalg.yield %v : bf16
  } -> tensor<4x8x128xbf16>
  return %y : tensor<4x8x128xbf16>
}

// -----

// A bf16 linalg.softmax from a front end: the kernel extends each element
// and accumulates in f32 (both all-reduces on f32), rounding once at the
// store.
// FUSE-LABEL: func.func @softmax_bf16
// FUSE: linalg.softmax dimension(1) ins(%arg0 : tensor<8x1000xbf16>)
// KERN-LABEL: func.func @softmax_bf16
// KERN: gpu.launch_func @{{.*}} blocks in (%c8, %c1, %c1) threads in (%c256, %c1, %c1)
// KERN-NOT: gpu.launch_func
// KERN: return
// KERN: gpu.func
// KERN: scf.for {{.*}} -> (f32, f32)
// KERN: memref.load %arg0{{.*}} : memref<8x1000xbf16>
// KERN: arith.extf %{{.*}} : bf16 to f32
// KERN: gpu.all_reduce maximumf %{{.*}} uniform {
// KERN-NEXT: } : (f32) -> f32
// KERN: gpu.all_reduce add %{{.*}} uniform {
// KERN-NEXT: } : (f32) -> f32
// KERN: arith.divf
// KERN: arith.truncf %{{.*}} : f32 to bf16
// KERN: memref.store
func.func @softmax_bf16(%x: tensor<8x1000xbf16>) -> tensor<8x1000xbf16> {
  %e = tensor.empty() : tensor<8x1000xbf16>
  %y = linalg.softmax dimension(1) ins(%x : tensor<8x1000xbf16>) outs(%e : tensor<8x1000xbf16>) -> tensor<8x1000xbf16>
  return %y : tensor<8x1000xbf16>
}

// -----

// exp(x - max) is also returned: the chain stays (the intermediate is needed
// anyway), and its four ops make two kernels: the max with exp(x - max) as
// its row epilogue, and the sum with the division as its row epilogue (the
// two accumulators' fills are absorbed by their reductions).
// FUSE-LABEL: func.func @exp_also_returned
// FUSE-NOT: linalg.softmax
// FUSE: return
// KERN-LABEL: func.func @exp_also_returned
// KERN-COUNT-2: gpu.launch_func
// KERN-NOT: gpu.launch_func
// KERN: return
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @exp_also_returned(%x: tensor<16x64xf32>) -> (tensor<16x64xf32>, tensor<16x64xf32>) {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %er = tensor.empty() : tensor<16xf32>
  %minf = linalg.fill ins(%ninf : f32) outs(%er : tensor<16xf32>) -> tensor<16xf32>
  %m = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<16x64xf32>) outs(%minf : tensor<16xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %r = arith.maximumf %in, %acc : f32
    linalg.yield %r : f32
  } -> tensor<16xf32>
  %ef = tensor.empty() : tensor<16x64xf32>
  %ex = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %m : tensor<16x64xf32>, tensor<16xf32>) outs(%ef : tensor<16x64xf32>) {
  ^bb0(%in: f32, %mx: f32, %o: f32):
    %d = arith.subf %in, %mx : f32
    %v = math.exp %d : f32
    linalg.yield %v : f32
  } -> tensor<16x64xf32>
  %z = linalg.fill ins(%zero : f32) outs(%er : tensor<16xf32>) -> tensor<16xf32>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%ex : tensor<16x64xf32>) outs(%z : tensor<16xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %r = arith.addf %in, %acc : f32
    linalg.yield %r : f32
  } -> tensor<16xf32>
  %y = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%ex, %sum : tensor<16x64xf32>, tensor<16xf32>) outs(%ef : tensor<16x64xf32>) {
  ^bb0(%in: f32, %t: f32, %o: f32):
    %q = arith.divf %in, %t : f32
    linalg.yield %q : f32
  } -> tensor<16x64xf32>
  return %y, %ex : tensor<16x64xf32>, tensor<16x64xf32>
}
