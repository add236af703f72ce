// Column reductions (linalg.reduce dimensions = [0]: bias and norm-weight
// gradients summed over tokens) get blocks of 32 x R threads: threadIdx.x
// picks one of 32 neighbouring columns (coalesced loads), threadIdx.y a
// strided part of the rows; the partials meet in workgroup memory and a
// tree of barrier-separated steps combines them. Before, one thread per
// column looped over all rows (1024 threads here, each 4096 loads long).
// RUN: tp-opt %s --tp-lower-gpu="chip=sm_90 format=isa stop-after=kernels" 2>&1 | FileCheck %s --check-prefix=KERN --implicit-check-not=remark
// RUN: tp-opt %s --tp-lower-gpu="chip=sm_90 format=isa stop-after=kernels" | grep -c "gpu.launch_func" | FileCheck %s --check-prefix=LAUNCHES
// RUN: tp-opt %s --tp-lower-gpu="chip=sm_90 format=isa" -o %t.llvm.mlir
// RUN: %python -c "import re, sys; s = open(sys.argv[1]).read(); k = s[s.index('.entry bias_grad_kernel'):]; k = k[:k.find('.entry', 1)] if '.entry' in k[1:] else k; print('bar.sync', k.count('bar.sync')); print('shared', len(re.findall(r'\.shared \.align 16 \.b8 __wg_bias_grad_kernel_0\[4096\]', s)))" %t.llvm.mlir | FileCheck %s --check-prefix=ENTRY

// 1024 columns / 32 = 32 blocks, few enough that each block gets 32 rows of
// threads (1024 threads); a 32 x 32 f32 workgroup buffer. The zero fill of
// the output is absorbed (the kernel starts from 0.0): one launch in all.
// LAUNCHES: {{^}}1{{$}}
// KERN: gpu.launch_func @bias_grad_kernel::@bias_grad_kernel blocks in (%c32, %c1, %c1) threads in (%c32, %c32, %c1)
// KERN: gpu.func @bias_grad_kernel({{.*}}) workgroup(%[[WG:.*]] : memref<1024xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}) kernel attributes {known_block_size = array<i32: 32, 32, 1>, known_grid_size = array<i32: 32, 1, 1>}
// KERN: scf.for %{{.*}} = %thread_id_y to %{{.*}} step %c32 iter_args(%{{.*}}) -> (f32)
// KERN: memref.load %{{.*}} : memref<4096x1024xf32>
// KERN: memref.store %{{.*}}, %[[WG]]
// KERN-NEXT: gpu.barrier
// KERN: arith.cmpi ult, %thread_id_y, %c16
// KERN: gpu.barrier
// KERN: arith.cmpi ult, %thread_id_y, %c8
// KERN: gpu.barrier
// KERN: arith.cmpi ult, %thread_id_y, %c4
// KERN: gpu.barrier
// KERN: arith.cmpi ult, %thread_id_y, %c2
// KERN: gpu.barrier
// KERN: arith.cmpi ult, %thread_id_y, %c1
// KERN: gpu.barrier
// KERN: memref.load %[[WG]][%thread_id_x]
// KERN: memref.store %{{.*}} : memref<1024xf32>

// In the PTX, the 4 KiB shared buffer and six barriers (after the partials,
// then after each of the five tree steps).
// ENTRY: bar.sync 6
// ENTRY: shared 1
func.func @bias_grad(%g: tensor<4096x1024xf32>) -> tensor<1024xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1024xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<1024xf32>) -> tensor<1024xf32>
  %r = linalg.reduce ins(%g : tensor<4096x1024xf32>) outs(%z : tensor<1024xf32>) dimensions = [0]
    (%in: f32, %acc: f32) {
      %s = arith.addf %in, %acc : f32
      linalg.yield %s : f32
    }
  return %r : tensor<1024xf32>
}

// tp-gen's tiny GPT-2 training step: its 18 column reductions (hidden 64:
// 2 blocks of 32 x 16 threads over the 16 tokens) take this path, and no
// reduction is left to the serial fallback (the only remarks are the two
// batched dot products of softmax backward).
// RUN: tp-gen --preset tiny --train -o %t.train.mlir
// RUN: tp-opt %t.train.mlir --tp-lower-gpu="chip=sm_90 format=isa stop-after=kernels" -o %t.train.kernels.mlir 2> %t.train.err
// RUN: FileCheck %s --check-prefix=TRAINERR --implicit-check-not="one thread per output point" < %t.train.err
// TRAINERR: remark: contraction with no M and no N dimension (a dot product) stays a kernel
// TRAINERR: remark: contraction with no M and no N dimension (a dot product) stays a kernel
// RUN: grep -c "threads in (%%c32, %%c16, %%c1)" %t.train.kernels.mlir | FileCheck %s --check-prefix=TRAIN
// TRAIN: 18
