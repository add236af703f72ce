// RUN: tp-opt %s --tp-propagate="tp=2 memory-budget=none report=%t.json" -o /dev/null
// RUN: FileCheck %s < %t.json
// Regression (issue 28): the cost model prices an elementwise producer
// that the lowerings fuse into its consumer (tp-fuse-elementwise: an
// all-parallel linalg.generic with one use, read by a generic) as the fused
// kernel runs it: the value is neither written nor read back; and an init
// the body does not read (`outs(%empty)`) is not a read. Each op priced
// alone, with its init read, made IREE's spelling of GPT-2 (gpt2-jax-tiny:
// every broadcast its own generic, the final LayerNorm in six ops) pay for
// memory traffic that the program does not have, and its plan moved 1.21 x
// Megatron's bytes at tp = 4 and 8 under link-latency=0 (now 1.00,
// test/frontends/plans.test).
//
// Replicated on the default profile (3.35e12 bytes/s), 1024 x 1024 f32
// (4 MiB), a chain %b -> %sum -> %sq fused into one kernel:
//   %b, the broadcast of a [1024] bias, reads 4 KiB and writes nothing:
//     4096 / 3.35e12 = 1.2227e-09 s (was 2.5053e-06: its 4 MiB write and
//     its 4 MiB init);
//   %sum reads %x, not %b, and writes nothing: 1.2520e-06 (was 5.0081e-06);
//   %sq reads nothing it fuses, and writes its result, which has two uses
//     (%sum2 and the return), so it is stored: 1.2520e-06;
//   %sum2 reads %sq and %x and writes 4 MiB: 3.7561e-06.
// CHECK: "compute_seconds": 1.2226{{[0-9]*}}e-09,
// CHECK: "compute_seconds": 1.2520{{[0-9]*}}e-06,
// CHECK: "compute_seconds": 1.2520{{[0-9]*}}e-06,
// CHECK: "compute_seconds": 3.7560{{[0-9]*}}e-06,
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
tp.mesh @tp ["tp" = 2]
func.func @fused(%x: tensor<1024x1024xf32> {tp.layout = #tp.layout<@tp, [-, -]>},
                 %bias: tensor<1024xf32> {tp.param, tp.layout = #tp.layout<@tp, [-]>})
    -> (tensor<1024x1024xf32> {tp.layout = #tp.layout<@tp, [-, -]>},
        tensor<1024x1024xf32> {tp.layout = #tp.layout<@tp, [-, -]>}) {
  %e0 = tensor.empty() : tensor<1024x1024xf32>
  %b = linalg.generic {indexing_maps = [#row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%bias : tensor<1024xf32>) outs(%e0 : tensor<1024x1024xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<1024x1024xf32>
  %e1 = tensor.empty() : tensor<1024x1024xf32>
  %sum = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %b : tensor<1024x1024xf32>, tensor<1024x1024xf32>) outs(%e1 : tensor<1024x1024xf32>) {
  ^bb0(%in: f32, %in_1: f32, %out: f32):
    %s = arith.addf %in, %in_1 : f32
    linalg.yield %s : f32
  } -> tensor<1024x1024xf32>
  %e2 = tensor.empty() : tensor<1024x1024xf32>
  %sq = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%sum : tensor<1024x1024xf32>) outs(%e2 : tensor<1024x1024xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.mulf %in, %in : f32
    linalg.yield %s : f32
  } -> tensor<1024x1024xf32>
  %e3 = tensor.empty() : tensor<1024x1024xf32>
  %sum2 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%sq, %x : tensor<1024x1024xf32>, tensor<1024x1024xf32>) outs(%e3 : tensor<1024x1024xf32>) {
  ^bb0(%in: f32, %in_1: f32, %out: f32):
    %s = arith.addf %in, %in_1 : f32
    linalg.yield %s : f32
  } -> tensor<1024x1024xf32>
  return %sq, %sum2 : tensor<1024x1024xf32>, tensor<1024x1024xf32>
}
