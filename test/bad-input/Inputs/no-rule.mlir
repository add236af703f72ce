// Ops without a sharding rule: scf.for and scf.while carrying a tensor, a
// gather from a parameter table and a scatter into one, a call and a
// recursive call. Each runs replicated on whole values, with a remark.
func.func @loop(%a: tensor<4x8xf32>, %w: tensor<8x16xf32> {tp.param}) -> tensor<4x16xf32> {
  %cst = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %e = tensor.empty() : tensor<4x16xf32>
  %z = linalg.fill ins(%cst : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %0 = linalg.matmul ins(%a, %w : tensor<4x8xf32>, tensor<8x16xf32>) outs(%z : tensor<4x16xf32>) -> tensor<4x16xf32>
  %r = scf.for %i = %c0 to %c3 step %c1 iter_args(%acc = %0) -> tensor<4x16xf32> {
    %t = math.tanh %acc : tensor<4x16xf32>
    scf.yield %t : tensor<4x16xf32>
  }
  return %r : tensor<4x16xf32>
}
func.func @gather(%table: tensor<16x8xf32> {tp.param}, %idx: tensor<4x1xindex>) -> tensor<4x8xf32> {
  %g = tensor.gather %table[%idx] gather_dims([0]) : (tensor<16x8xf32>, tensor<4x1xindex>) -> tensor<4x8xf32>
  return %g : tensor<4x8xf32>
}
func.func private @helper(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %t = math.tanh %x : tensor<4x16xf32>
  return %t : tensor<4x16xf32>
}
func.func @call(%a: tensor<4x8xf32>, %w: tensor<8x16xf32> {tp.param}) -> tensor<4x16xf32> {
  %cst = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %z = linalg.fill ins(%cst : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %0 = linalg.matmul ins(%a, %w : tensor<4x8xf32>, tensor<8x16xf32>) outs(%z : tensor<4x16xf32>) -> tensor<4x16xf32>
  %1 = func.call @helper(%0) : (tensor<4x16xf32>) -> tensor<4x16xf32>
  return %1 : tensor<4x16xf32>
}
func.func @recurse(%x: tensor<4x16xf32>, %n: i32) -> tensor<4x16xf32> {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %done = arith.cmpi eq, %n, %c0 : i32
  %r = scf.if %done -> tensor<4x16xf32> {
    scf.yield %x : tensor<4x16xf32>
  } else {
    %t = math.tanh %x : tensor<4x16xf32>
    %m = arith.subi %n, %c1 : i32
    %s = func.call @recurse(%t, %m) : (tensor<4x16xf32>, i32) -> tensor<4x16xf32>
    scf.yield %s : tensor<4x16xf32>
  }
  return %r : tensor<4x16xf32>
}
func.func @while(%a: tensor<4x8xf32>, %w: tensor<8x8xf32> {tp.param}) -> tensor<4x8xf32> {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c3 = arith.constant 3 : i32
  %zero = arith.constant 0.0 : f32
  %r:2 = scf.while (%i = %c0, %h = %a) : (i32, tensor<4x8xf32>) -> (i32, tensor<4x8xf32>) {
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
func.func @scatter(%table: tensor<16x8xf32> {tp.param}, %rows: tensor<4x8xf32>, %idx: tensor<4x1xindex>) -> tensor<16x8xf32> {
  %s = tensor.scatter %rows into %table[%idx] scatter_dims([0]) unique : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<4x1xindex>) -> tensor<16x8xf32>
  return %s : tensor<16x8xf32>
}
