// tp-fuse-attention on a hand-written attention ([batch 1, heads 2, seq 64,
// head dim 32], scale 1/8 and an additive [seq, seq] mask in one op): the
// kernel's structure (f32: the CUDA-core kernel, one warp per query row, K
// and V tiles in workgroup memory with one lane per key, an online max and
// sum, FMA), the
// host-loop form, the [1, 2, 64, 64] scores gone after tp-lower-gpu, and the
// PTX of the kernel.
// RUN: tp-opt %s --tp-fuse-attention | FileCheck %s
// RUN: tp-opt %s --tp-fuse-attention=target=loops | FileCheck %s --check-prefix=LOOPS
// RUN: tp-opt %s --tp-lower-gpu="chip=sm_90 format=isa stop-after=kernels" | FileCheck %s --check-prefix=KERN
// RUN: tp-opt %s --tp-lower-gpu="chip=sm_90 format=isa fuse-attention=false stop-after=kernels" | FileCheck %s --check-prefix=UNFUSED
// RUN: tp-opt %s --tp-lower-gpu="chip=sm_90 format=isa" | FileCheck %s --check-prefix=PTX
// RUN: %expect-exit 1 tp-opt %s --tp-fuse-attention=target=cuda 2>&1 | FileCheck %s --check-prefix=BAD

// The whole subgraph is one call; Q, K, V and the mask are read in place.
// CHECK-LABEL: func.func @attention(
// CHECK-SAME: %[[Q:[a-z0-9]+]]: tensor<1x2x64x32xf32>, %[[K:[a-z0-9]+]]: tensor<1x2x64x32xf32>, %[[V:[a-z0-9]+]]: tensor<1x2x64x32xf32>, %[[M:[a-z0-9]+]]: tensor<64x64xf32>)
// CHECK-NOT: linalg.generic
// CHECK-DAG: %[[QB:.*]] = bufferization.to_buffer %[[Q]] read_only
// CHECK-DAG: %[[KB:.*]] = bufferization.to_buffer %[[K]] read_only
// CHECK-DAG: %[[VB:.*]] = bufferization.to_buffer %[[V]] read_only
// CHECK-DAG: %[[MB:.*]] = bufferization.to_buffer %[[M]] read_only
// CHECK: %[[OUT:.*]] = memref.alloc() : memref<1x2x64x32xf32>
// CHECK: call @tp_fused_attention_0(%[[QB]], %[[KB]], %[[VB]], %[[MB]], %[[OUT]])
// CHECK: %[[R:.*]] = bufferization.to_tensor %[[OUT]] restrict writable
// CHECK: return %[[R]]

// The function is a declaration naming its kernel (tp-linalg-to-gpu adds
// the launch), with the flops the kernel must do: 4 x 128 rows x 64 keys x
// 32 = 1048576 (no mask bounds the keys here).
// CHECK: func.func private @tp_fused_attention_0(memref<1x2x64x32xf32>, memref<1x2x64x32xf32>, memref<1x2x64x32xf32>, memref<64x64xf32>, memref<1x2x64x32xf32>) attributes {tpgpu.attention_flops = 1048576 : i64, tpgpu.kernel = @tp_fused_attention_0_kernel::@tp_fused_attention_0_kernel}
// f32 is not for tensor cores: one warp per query row on CUDA cores, 8 rows
// per block of 256 threads, grid 8 query blocks x 2 heads; K and V tiles of
// 32 keys (rows padded to 33 against bank conflicts) and the block's Q rows
// in workgroup memory.
// CHECK: gpu.func @tp_fused_attention_0_kernel(%[[AQ:.*]]: memref<1x2x64x32xf32>, %[[AK:.*]]: memref<1x2x64x32xf32>, %[[AV:.*]]: memref<1x2x64x32xf32>, %[[AM:.*]]: memref<64x64xf32>, %[[AO:.*]]: memref<1x2x64x32xf32>) workgroup(%[[KT:.*]] : memref<32x33xf32, #gpu.address_space<workgroup>>, %[[VT:.*]] : memref<32x33xf32, #gpu.address_space<workgroup>>, %[[QT:.*]] : memref<8x32xf32, #gpu.address_space<workgroup>>) kernel attributes {known_block_size = array<i32: 256, 1, 1>, known_grid_size = array<i32: 8, 2, 1>}
// Q's row, once, before the loop over the key tiles.
// CHECK: memref.load %[[AQ]]
// CHECK: memref.store %{{.*}}, %[[QT]]
// The loop carries the running max (from -inf), the running sum and the
// lane's accumulator, all f32; each tile of K and V is staged between two
// barriers.
// CHECK: %[[LOOP:.*]]:3 = scf.for {{.*}} iter_args(%[[MX:.*]] = %cst{{.*}}, %[[L:.*]] = %cst{{.*}}, %[[ACC:.*]] = %cst{{.*}}) -> (f32, f32, f32)
// CHECK: gpu.barrier
// CHECK: memref.load %[[AK]]
// CHECK: memref.store %{{.*}}, %[[KT]]
// CHECK: memref.load %[[AV]]
// CHECK: memref.store %{{.*}}, %[[VT]]
// CHECK: gpu.barrier
// One lane per key: its dot product over the head dimension, by FMA.
// CHECK: %[[DOT:.*]] = scf.for {{.*}} -> (f32)
// CHECK: memref.load %[[QT]]
// CHECK: memref.load %[[KT]]
// CHECK: math.fma
// The cloned score chain: the scale, the mask at [query, key].
// CHECK: %[[MASK:.*]] = memref.load %[[AM]]
// CHECK: %[[SC:.*]] = arith.mulf %[[DOT]], %cst
// CHECK: arith.addf %[[SC]], %[[MASK]] : f32
// The tile's maximum over the warp, the online update.
// CHECK-COUNT-5: gpu.shuffle  xor
// CHECK: %[[NEXT:.*]] = arith.maximumf %[[MX]], %{{.*}} : f32
// CHECK: %[[ISINF:.*]] = arith.cmpf oeq, %[[NEXT]], %cst
// CHECK: %[[BASE:.*]] = arith.select %[[ISINF]], %cst{{.*}}, %[[NEXT]]
// CHECK: arith.subf %[[MX]], %[[BASE]]
// CHECK: %[[ALPHA:.*]] = math.exp
// CHECK: %[[P:.*]] = math.exp
// CHECK: math.fma %[[L]], %[[ALPHA]], %[[P]]
// CHECK: arith.mulf %[[ACC]], %[[ALPHA]]
// P V: each key's p broadcast from its lane, times V's tile.
// CHECK: scf.for
// CHECK: gpu.shuffle  idx %[[P]]
// CHECK: memref.load %[[VT]]
// CHECK: math.fma
// CHECK: scf.yield %[[NEXT]]
// The row sum over the lanes, then O = acc / l.
// CHECK-COUNT-5: gpu.shuffle  xor %{{.*}} : f32
// CHECK: %[[O:.*]] = arith.divf %[[LOOP]]#2, %{{.*}} : f32
// CHECK: memref.store %[[O]], %[[AO]][{{.*}}] : memref<1x2x64x32xf32>
// CHECK: gpu.return

// The same recurrence as host loops: rows, keys, then the head dimension
// for the dot product and the value columns for the accumulator.
// LOOPS: func.func private @tp_fused_attention_0(
// LOOPS-NOT: {{[^p]gpu\.}}
// LOOPS: %[[ACC:.*]] = memref.alloca() : memref<32xf32>
// LOOPS: scf.for %{{.*}} = %{{.*}} to %c128
// LOOPS: scf.for {{.*}} iter_args({{.*}}) -> (f32, f32)
// LOOPS: scf.for {{.*}} to %c32{{.*}} iter_args({{.*}}) -> (f32)
// LOOPS: arith.maximumf
// LOOPS: math.exp
// LOOPS: math.exp
// LOOPS: memref.store {{.*}}, %[[ACC]]
// LOOPS: arith.divf

// After tp-lower-gpu: one launch, of the fused kernel; no [1, 2, 64, 64]
// buffer, no GEMM call.
// KERN-NOT: x64x64xf32>
// KERN-NOT: tprt_mlir_batched_gemm
// KERN: call @tp_fused_attention_0(
// KERN-NOT: x64x64xf32>
// KERN: gpu.launch_func @{{[a-z_0-9]+}}::@tp_fused_attention_0_kernel blocks in (%c8, %c2, %c1) threads in (%c256, %c1, %c1)
// KERN-NOT: gpu.launch_func
// KERN: gpu.func @tp_fused_attention_0_kernel(
// KERN-SAME: known_block_size = array<i32: 256, 1, 1>, known_grid_size = array<i32: 8, 2, 1>

// fuse-attention=false: the unfused path (two batched GEMMs around the
// materialised scores) stays available.
// UNFUSED: gpu.alloc () : memref<2x64x64xf32>
// UNFUSED: call @tprt_mlir_batched_gemm_f32(
// UNFUSED: call @tprt_mlir_batched_gemm_f32(
// UNFUSED-NOT: tp_fused_attention

// In the PTX, the kernel's butterfly and exponentials.
// PTX: .entry tp_fused_attention_0_kernel(
// PTX: shfl.sync.bfly.b32
// PTX: ex2.approx

// BAD: tp-fuse-attention: target 'cuda' is not one of gpu, loops

#q = affine_map<(b, h, i, j, d) -> (b, h, i, d)>
#k = affine_map<(b, h, i, j, d) -> (b, h, j, d)>
#s = affine_map<(b, h, i, j, d) -> (b, h, i, j)>
#id = affine_map<(b, h, i, j) -> (b, h, i, j)>
#row = affine_map<(b, h, i, j) -> (b, h, i)>
#mask = affine_map<(b, h, i, j) -> (i, j)>
#p = affine_map<(b, h, i, e, j) -> (b, h, i, j)>
#v = affine_map<(b, h, i, e, j) -> (b, h, j, e)>
#o = affine_map<(b, h, i, e, j) -> (b, h, i, e)>
func.func @attention(%q: tensor<1x2x64x32xf32>, %k: tensor<1x2x64x32xf32>, %v: tensor<1x2x64x32xf32>, %mask: tensor<64x64xf32>) -> tensor<1x2x64x32xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %e0 = tensor.empty() : tensor<1x2x64x64xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e0 : tensor<1x2x64x64xf32>) -> tensor<1x2x64x64xf32>
  %sc = linalg.generic {indexing_maps = [#q, #k, #s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q, %k : tensor<1x2x64x32xf32>, tensor<1x2x64x32xf32>) outs(%z : tensor<1x2x64x64xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %0 = arith.mulf %a, %b : f32
    %1 = arith.addf %c, %0 : f32
    linalg.yield %1 : f32
  } -> tensor<1x2x64x64xf32>
  %x = linalg.generic {indexing_maps = [#id, #mask, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%sc, %mask : tensor<1x2x64x64xf32>, tensor<64x64xf32>) outs(%e0 : tensor<1x2x64x64xf32>) {
  ^bb0(%a: f32, %m: f32, %c: f32):
    %cst = arith.constant 0.125 : f32
    %0 = arith.mulf %a, %cst : f32
    %1 = arith.addf %0, %m : f32
    linalg.yield %1 : f32
  } -> tensor<1x2x64x64xf32>
  %r0 = tensor.empty() : tensor<1x2x64xf32>
  %mi = linalg.fill ins(%ninf : f32) outs(%r0 : tensor<1x2x64xf32>) -> tensor<1x2x64xf32>
  %mx = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%x : tensor<1x2x64x64xf32>) outs(%mi : tensor<1x2x64xf32>) {
  ^bb0(%a: f32, %c: f32):
    %0 = arith.maximumf %a, %c : f32
    linalg.yield %0 : f32
  } -> tensor<1x2x64xf32>
  %ex = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x, %mx : tensor<1x2x64x64xf32>, tensor<1x2x64xf32>) outs(%e0 : tensor<1x2x64x64xf32>) {
  ^bb0(%a: f32, %m: f32, %c: f32):
    %0 = arith.subf %a, %m : f32
    %1 = math.exp %0 : f32
    linalg.yield %1 : f32
  } -> tensor<1x2x64x64xf32>
  %si = linalg.fill ins(%zero : f32) outs(%r0 : tensor<1x2x64xf32>) -> tensor<1x2x64xf32>
  %sm = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ex : tensor<1x2x64x64xf32>) outs(%si : tensor<1x2x64xf32>) {
  ^bb0(%a: f32, %c: f32):
    %0 = arith.addf %a, %c : f32
    linalg.yield %0 : f32
  } -> tensor<1x2x64xf32>
  %pr = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ex, %sm : tensor<1x2x64x64xf32>, tensor<1x2x64xf32>) outs(%e0 : tensor<1x2x64x64xf32>) {
  ^bb0(%a: f32, %s: f32, %c: f32):
    %0 = arith.divf %a, %s : f32
    linalg.yield %0 : f32
  } -> tensor<1x2x64x64xf32>
  %o0 = tensor.empty() : tensor<1x2x64x32xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<1x2x64x32xf32>) -> tensor<1x2x64x32xf32>
  %o = linalg.generic {indexing_maps = [#p, #v, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%pr, %v : tensor<1x2x64x64xf32>, tensor<1x2x64x32xf32>) outs(%oz : tensor<1x2x64x32xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %0 = arith.mulf %a, %b : f32
    %1 = arith.addf %c, %0 : f32
    linalg.yield %1 : f32
  } -> tensor<1x2x64x32xf32>
  return %o : tensor<1x2x64x32xf32>
}
