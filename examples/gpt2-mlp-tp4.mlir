// The MLP of a GPT-2 block, as rank r of 4 runs it under Megatron's plan:
// W1 and b1 column-split (each rank holds 768 of the 3072 FFN columns), W2
// row-split, so the second matmul yields a partial sum that one all_reduce
// completes; b2 is added once, after the reduction.
//
// Global shapes: x [128, 768], W1 [768, 3072], b1 [3072], W2 [3072, 768].

tp.mesh @m ["tp" = 4]

func.func @gpt2_mlp(
    %x: tensor<128x768xf32> {tp.layout = #tp.layout<@m, [-, -]>},
    %w1: tensor<768x768xf32> {tp.param, tp.layout = #tp.layout<@m, [-, "tp"]>,
                              tp.global_shape = array<i64: 768, 3072>},
    %b1: tensor<768xf32> {tp.param, tp.layout = #tp.layout<@m, ["tp"]>,
                          tp.global_shape = array<i64: 3072>},
    %w2: tensor<768x768xf32> {tp.param, tp.layout = #tp.layout<@m, ["tp", -]>,
                              tp.global_shape = array<i64: 3072, 768>},
    %b2: tensor<768xf32> {tp.param, tp.layout = #tp.layout<@m, [-]>})
    -> (tensor<128x768xf32> {tp.layout = #tp.layout<@m, [-, -]>}) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<128x768xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<128x768xf32>) -> tensor<128x768xf32>
  // Column-parallel: no communication.
  %h = linalg.matmul ins(%x, %w1 : tensor<128x768xf32>, tensor<768x768xf32>)
                     outs(%acc : tensor<128x768xf32>) -> tensor<128x768xf32>
  %hb = linalg.broadcast ins(%b1 : tensor<768xf32>) outs(%e : tensor<128x768xf32>) dimensions = [0]
  %h1 = linalg.add ins(%h, %hb : tensor<128x768xf32>, tensor<128x768xf32>)
                   outs(%e : tensor<128x768xf32>) -> tensor<128x768xf32>
  %g = math.tanh %h1 : tensor<128x768xf32>
  // Row-parallel: each rank's product is one term of the sum.
  %y = linalg.matmul ins(%g, %w2 : tensor<128x768xf32>, tensor<768x768xf32>)
                     outs(%acc : tensor<128x768xf32>) -> tensor<128x768xf32>
  %ys = tp.all_reduce sum %y over @m ["tp"] : tensor<128x768xf32>
  %yb = linalg.broadcast ins(%b2 : tensor<768xf32>) outs(%e : tensor<128x768xf32>) dimensions = [0]
  %out = linalg.add ins(%ys, %yb : tensor<128x768xf32>, tensor<128x768xf32>)
                    outs(%e : tensor<128x768xf32>) -> tensor<128x768xf32>
  return %out : tensor<128x768xf32>
}
