// RUN: tp-opt %s --tp-linalg-to-gpu | FileCheck %s
// A row reduction followed by a parallel op that reads the row's result
// broadcast along the row (a norm: the sum of squares, then the scaling)
// becomes one launch: one block per row reduces, and after the all-reduce
// every thread applies the second op to its part of the row with the
// statistic in a register (tp-linalg-to-gpu's row epilogue). The statistic
// is stored only when something else reads it.

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>
#tr = affine_map<(d0, d1) -> (d1, d0)>

// RMSNorm in bf16 with f32 statistics, tp-gen's spelling after
// bufferization: one launch; the [8] f32 buffer, its fill and its stores
// are gone.
// CHECK-LABEL: func.func @rmsnorm
// CHECK-NOT: memref<8xf32>
// CHECK: gpu.launch blocks
// CHECK: scf.for {{.*}} -> (f32)
// CHECK: memref.load %{{.*}} : memref<8x64xbf16>
// CHECK: gpu.all_reduce add %{{.*}} uniform
// CHECK-NOT: memref.store
// CHECK: scf.for
// CHECK: math.rsqrt
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK: memref.store %{{.*}}, %arg2[{{.*}}] : memref<8x64xbf16>
// CHECK: gpu.terminator
// CHECK-NOT: gpu.launch
// CHECK-NOT: memref<8xf32>
// CHECK: return
func.func @rmsnorm(%x: memref<8x64xbf16>, %w: memref<64xbf16>, %y: memref<8x64xbf16>) {
  %zero = arith.constant 0.0 : f32
  %eps = arith.constant 1.0e-5 : f32
  %inv = arith.constant 1.5625e-2 : f32
  %s = memref.alloc() : memref<8xf32>
  linalg.fill ins(%zero : f32) outs(%s : memref<8xf32>)
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<8x64xbf16>) outs(%s : memref<8xf32>) {
  ^bb0(%in: bf16, %acc: f32):
    %e = arith.extf %in : bf16 to f32
    %sq = arith.mulf %e, %e : f32
    %a = arith.addf %sq, %acc : f32
    linalg.yield %a : f32
  }
  %t = memref.alloc() : memref<8x64xbf16>
  linalg.generic {indexing_maps = [#id, #row, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %s, %w : memref<8x64xbf16>, memref<8xf32>, memref<64xbf16>) outs(%y : memref<8x64xbf16>) {
  ^bb0(%in: bf16, %sum: f32, %g: bf16, %o: bf16):
    %e = arith.extf %in : bf16 to f32
    %ge = arith.extf %g : bf16 to f32
    %m = arith.mulf %sum, %inv : f32
    %me = arith.addf %m, %eps : f32
    %r = math.rsqrt %me : f32
    %n = arith.mulf %e, %r : f32
    %v = arith.mulf %n, %ge : f32
    %b = arith.truncf %v : f32 to bf16
    linalg.yield %b : bf16
  }
  memref.dealloc %t : memref<8x64xbf16>
  memref.dealloc %s : memref<8xf32>
  return
}

// In place over the reduced input (a residual stream normalised where it
// lies): the same buffer through the same map, so one launch.
// CHECK-LABEL: func.func @in_place
// CHECK: gpu.launch blocks
// CHECK: gpu.all_reduce maximumf
// CHECK: math.exp
// CHECK: memref.store %{{.*}}, %arg0
// CHECK-NOT: gpu.launch
// CHECK: return
func.func @in_place(%x: memref<8x64xf32>) {
  %ninf = arith.constant 0xFF800000 : f32
  %s = memref.alloc() : memref<8xf32>
  linalg.fill ins(%ninf : f32) outs(%s : memref<8xf32>)
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<8x64xf32>) outs(%s : memref<8xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %a = arith.maximumf %in, %acc : f32
    linalg.yield %a : f32
  }
  linalg.generic {indexing_maps = [#row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%s : memref<8xf32>) outs(%x : memref<8x64xf32>) {
  ^bb0(%m: f32, %o: f32):
    %d = arith.subf %o, %m : f32
    %e = math.exp %d : f32
    linalg.yield %e : f32
  }
  memref.dealloc %s : memref<8xf32>
  return
}

// The statistic is also read later: still one launch for both ops, and
// thread 0 stores the statistic for the later reader.
// CHECK-LABEL: func.func @statistic_kept
// CHECK: gpu.launch blocks
// CHECK: gpu.all_reduce add
// CHECK: scf.if
// CHECK: memref.store %{{.*}}, %arg2[%{{.*}}] : memref<8xf32>
// CHECK: memref.store %{{.*}}, %arg1[%{{.*}}] : memref<8x64xf32>
// CHECK: gpu.terminator
// CHECK-NOT: gpu.launch
// CHECK: return
func.func @statistic_kept(%x: memref<8x64xf32>, %y: memref<8x64xf32>, %s: memref<8xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%s : memref<8xf32>)
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<8x64xf32>) outs(%s : memref<8xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %a = arith.addf %in, %acc : f32
    linalg.yield %a : f32
  }
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %s : memref<8x64xf32>, memref<8xf32>) outs(%y : memref<8x64xf32>) {
  ^bb0(%in: f32, %t: f32, %o: f32):
    %q = arith.divf %in, %t : f32
    linalg.yield %q : f32
  }
  return
}

// Writing the reduced input through another map (a transpose) would
// overwrite elements other blocks still read: two launches.
// CHECK-LABEL: func.func @transposed_write
// CHECK: gpu.launch blocks
// CHECK: gpu.launch blocks
// CHECK: return
func.func @transposed_write(%x: memref<8x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %s = memref.alloc() : memref<8xf32>
  linalg.fill ins(%zero : f32) outs(%s : memref<8xf32>)
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<8x8xf32>) outs(%s : memref<8xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %a = arith.addf %in, %acc : f32
    linalg.yield %a : f32
  }
  linalg.generic {indexing_maps = [#row, #tr], iterator_types = ["parallel", "parallel"]}
      ins(%s : memref<8xf32>) outs(%x : memref<8x8xf32>) {
  ^bb0(%t: f32, %o: f32):
    linalg.yield %t : f32
  }
  memref.dealloc %s : memref<8xf32>
  return
}

// The statistic read along the other dimension is not the row's value:
// two launches.
// CHECK-LABEL: func.func @column_read
// CHECK: gpu.launch blocks
// CHECK: gpu.launch blocks
// CHECK: return
func.func @column_read(%x: memref<8x8xf32>, %y: memref<8x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %s = memref.alloc() : memref<8xf32>
  linalg.fill ins(%zero : f32) outs(%s : memref<8xf32>)
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<8x8xf32>) outs(%s : memref<8xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %a = arith.addf %in, %acc : f32
    linalg.yield %a : f32
  }
  linalg.generic {indexing_maps = [#col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%s : memref<8xf32>) outs(%y : memref<8x8xf32>) {
  ^bb0(%t: f32, %o: f32):
    linalg.yield %t : f32
  }
  memref.dealloc %s : memref<8xf32>
  return
}

// A buffer the reduction reads is freed before the second op: the kernel
// cannot move past the free, so two launches.
// CHECK-LABEL: func.func @input_freed
// CHECK: gpu.launch blocks
// CHECK: gpu.dealloc
// CHECK: gpu.launch blocks
// CHECK: return
func.func @input_freed(%x: memref<8x64xf32>, %y: memref<8x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %tmp = memref.alloc() : memref<8x64xf32>
  memref.copy %x, %tmp : memref<8x64xf32> to memref<8x64xf32>
  %s = memref.alloc() : memref<8xf32>
  linalg.fill ins(%zero : f32) outs(%s : memref<8xf32>)
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%tmp : memref<8x64xf32>) outs(%s : memref<8xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %a = arith.addf %in, %acc : f32
    linalg.yield %a : f32
  }
  memref.dealloc %tmp : memref<8x64xf32>
  linalg.generic {indexing_maps = [#row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%s : memref<8xf32>) outs(%y : memref<8x64xf32>) {
  ^bb0(%t: f32, %o: f32):
    linalg.yield %t : f32
  }
  memref.dealloc %s : memref<8xf32>
  return
}

// Another iteration space (the second op covers half the row): two
// launches.
// CHECK-LABEL: func.func @other_shape
// CHECK: gpu.launch blocks
// CHECK: gpu.launch blocks
// CHECK: return
func.func @other_shape(%x: memref<8x64xf32>, %y: memref<8x32xf32>) {
  %zero = arith.constant 0.0 : f32
  %s = memref.alloc() : memref<8xf32>
  linalg.fill ins(%zero : f32) outs(%s : memref<8xf32>)
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<8x64xf32>) outs(%s : memref<8xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %a = arith.addf %in, %acc : f32
    linalg.yield %a : f32
  }
  linalg.generic {indexing_maps = [#row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%s : memref<8xf32>) outs(%y : memref<8x32xf32>) {
  ^bb0(%t: f32, %o: f32):
    linalg.yield %t : f32
  }
  memref.dealloc %s : memref<8xf32>
  return
}

// torch-mlir's keepdim reduction: the output [1, 8, 1] is written through
// (d0, d1, d2) -> (d0, d1, 0), every element once, so the fill before it is
// absorbed (the kernel starts from zero); and the scaling that follows is
// its epilogue. One launch.
// CHECK-LABEL: func.func @keepdim
// CHECK: gpu.launch blocks
// CHECK: gpu.all_reduce add
// CHECK: arith.divf
// CHECK: memref.store %{{.*}}, %arg1
// CHECK-NOT: gpu.launch
// CHECK: return
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#keep = affine_map<(d0, d1, d2) -> (d0, d1, 0)>
func.func @keepdim(%x: memref<1x8x64xf32>, %y: memref<1x8x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %s = memref.alloc() : memref<1x8x1xf32>
  linalg.fill ins(%zero : f32) outs(%s : memref<1x8x1xf32>)
  linalg.generic {indexing_maps = [#id3, #keep], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x : memref<1x8x64xf32>) outs(%s : memref<1x8x1xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %a = arith.addf %in, %acc : f32
    linalg.yield %a : f32
  }
  linalg.generic {indexing_maps = [#id3, #keep, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x, %s : memref<1x8x64xf32>, memref<1x8x1xf32>) outs(%y : memref<1x8x64xf32>) {
  ^bb0(%in: f32, %t: f32, %o: f32):
    %q = arith.divf %in, %t : f32
    linalg.yield %q : f32
  }
  memref.dealloc %s : memref<1x8x1xf32>
  return
}

// torch-mlir's LayerNorm: the mean, the fill of the variance's buffer, the
// variance reading the mean, and the scaling reading both. One launch: two
// all-reduces, then the scaling; neither statistic is stored.
// CHECK-LABEL: func.func @layernorm_chain
// CHECK: gpu.launch blocks
// CHECK: gpu.all_reduce add
// CHECK: arith.subf
// CHECK: gpu.all_reduce add
// CHECK-NOT: memref.store %{{.*}}, %{{.*}} : memref<8xf32>
// CHECK: math.rsqrt
// CHECK: memref.store %{{.*}}, %arg1
// CHECK-NOT: gpu.launch
// CHECK: return
func.func @layernorm_chain(%x: memref<8x64xf32>, %y: memref<8x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %n = arith.constant 64.0 : f32
  %m = memref.alloc() : memref<8xf32>
  linalg.fill ins(%zero : f32) outs(%m : memref<8xf32>)
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<8x64xf32>) outs(%m : memref<8xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %a = arith.addf %in, %acc : f32
    linalg.yield %a : f32
  }
  %v = memref.alloc() : memref<8xf32>
  linalg.fill ins(%zero : f32) outs(%v : memref<8xf32>)
  linalg.generic {indexing_maps = [#id, #row, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x, %m : memref<8x64xf32>, memref<8xf32>) outs(%v : memref<8xf32>) {
  ^bb0(%in: f32, %s: f32, %acc: f32):
    %mean = arith.divf %s, %n : f32
    %d = arith.subf %in, %mean : f32
    %q = arith.mulf %d, %d : f32
    %a = arith.addf %q, %acc : f32
    linalg.yield %a : f32
  }
  linalg.generic {indexing_maps = [#id, #row, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %m, %v : memref<8x64xf32>, memref<8xf32>, memref<8xf32>) outs(%y : memref<8x64xf32>) {
  ^bb0(%in: f32, %s: f32, %ss: f32, %o: f32):
    %mean = arith.divf %s, %n : f32
    %var = arith.divf %ss, %n : f32
    %r = math.rsqrt %var : f32
    %d = arith.subf %in, %mean : f32
    %t = arith.mulf %d, %r : f32
    linalg.yield %t : f32
  }
  memref.dealloc %v : memref<8xf32>
  memref.dealloc %m : memref<8xf32>
  return
}

// The second reduction writes a buffer the first one reads: it does not
// join the chain (two launches).
// CHECK-LABEL: func.func @chain_overwrites_input
// CHECK: gpu.launch blocks
// CHECK: gpu.launch blocks
// CHECK: return
func.func @chain_overwrites_input(%x: memref<8x64xf32>, %b: memref<8xf32>, %out: memref<8xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%out : memref<8xf32>)
  linalg.generic {indexing_maps = [#id, #row, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x, %b : memref<8x64xf32>, memref<8xf32>) outs(%out : memref<8xf32>) {
  ^bb0(%in: f32, %bias: f32, %acc: f32):
    %p = arith.addf %in, %bias : f32
    %a = arith.addf %p, %acc : f32
    linalg.yield %a : f32
  }
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<8x64xf32>) outs(%b : memref<8xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %a = arith.maximumf %in, %acc : f32
    linalg.yield %a : f32
  }
  return
}
