// h = h @ w three times in an scf.for that carries the tensor (each
// iteration yields a new buffer: one-shot bufferization's
// allow-return-allocs-from-loops). Same values as loop-unrolled.mlir.
func.func @loop(%x: tensor<4x8xf32> loc("x"),
                %w: tensor<8x8xf32> {tp.param, tp.init = {kind = "normal", seed = 5 : i64, std = 0.3 : f64}} loc("w"))
    -> tensor<4x8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %zero = arith.constant 0.0 : f32
  %r = scf.for %i = %c0 to %c3 step %c1 iter_args(%h = %x) -> (tensor<4x8xf32>) {
    %e = tensor.empty() : tensor<4x8xf32>
    %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
    %m = linalg.matmul ins(%h, %w : tensor<4x8xf32>, tensor<8x8xf32>) outs(%acc : tensor<4x8xf32>) -> tensor<4x8xf32>
    scf.yield %m : tensor<4x8xf32>
  }
  return %r : tensor<4x8xf32>
}
