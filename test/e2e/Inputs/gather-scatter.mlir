// tensor.scatter and tensor.gather (no sharding rule: replicated, with a
// remark; lowered by tp-decompose-aggregates). Rows [1, 2], [3, 4], [5, 6]
// scattered into a zero table at rows 4, 0, 2; then rows 2 and 4 gathered
// back (slices kept rank-full: 2x1x2), and 0 and 4 (rank-reduced: 2x2).
func.func @gs(%table: tensor<6x2xf32> {tp.param, tp.init = {kind = "zeros"}} loc("table"))
    -> (tensor<6x2xf32>, tensor<2x1x2xf32>, tensor<2x2xf32>) {
  %rows = arith.constant dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]> : tensor<3x2xf32>
  %at = arith.constant dense<[[4], [0], [2]]> : tensor<3x1xi32>
  %s = tensor.scatter %rows into %table[%at] scatter_dims([0]) unique
      : (tensor<3x2xf32>, tensor<6x2xf32>, tensor<3x1xi32>) -> tensor<6x2xf32>
  %from = arith.constant dense<[[2], [4]]> : tensor<2x1xindex>
  %g = tensor.gather %s[%from] gather_dims([0])
      : (tensor<6x2xf32>, tensor<2x1xindex>) -> tensor<2x1x2xf32>
  %from2 = arith.constant dense<[[0], [4]]> : tensor<2x1xindex>
  %g2 = tensor.gather %s[%from2] gather_dims([0])
      : (tensor<6x2xf32>, tensor<2x1xindex>) -> tensor<2x2xf32>
  return %s, %g, %g2 : tensor<6x2xf32>, tensor<2x1x2xf32>, tensor<2x2xf32>
}
