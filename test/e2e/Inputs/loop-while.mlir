// The loop of loop-for.mlir as an scf.while on an i32 counter.
func.func @loop(%x: tensor<4x8xf32> loc("x"),
                %w: tensor<8x8xf32> {tp.param, tp.init = {kind = "normal", seed = 5 : i64, std = 0.3 : f64}} loc("w"))
    -> tensor<4x8xf32> {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c3 = arith.constant 3 : i32
  %zero = arith.constant 0.0 : f32
  %r:2 = scf.while (%i = %c0, %h = %x) : (i32, tensor<4x8xf32>) -> (i32, tensor<4x8xf32>) {
    %more = arith.cmpi slt, %i, %c3 : i32
    scf.condition(%more) %i, %h : i32, tensor<4x8xf32>
  } do {
  ^bb0(%j: i32, %g: tensor<4x8xf32>):
    %e = tensor.empty() : tensor<4x8xf32>
    %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
    %m = linalg.matmul ins(%g, %w : tensor<4x8xf32>, tensor<8x8xf32>) outs(%acc : tensor<4x8xf32>) -> tensor<4x8xf32>
    %next = arith.addi %j, %c1 : i32
    scf.yield %next, %m : i32, tensor<4x8xf32>
  }
  return %r#1 : tensor<4x8xf32>
}
