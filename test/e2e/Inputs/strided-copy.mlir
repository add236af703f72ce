// utils/random-program.py
module {
  func.func @main(%arg0: tensor<6x12xf32>, %arg1: tensor<12x24xf32> {tp.init = {kind = "normal", seed = 94013529 : i64, std = 0.288675 : f64}, tp.param}, %arg2: tensor<24xf32> {tp.init = {kind = "normal", seed = 1742176265 : i64, std = 0.204124 : f64}, tp.param}) -> tensor<6x28xf32> {
    %v1 = tensor.empty() : tensor<6x24xf32>
    %v2 = arith.constant 0.0 : f32
    %v3 = linalg.fill ins(%v2 : f32) outs(%v1 : tensor<6x24xf32>) -> tensor<6x24xf32>
    %v4 = linalg.matmul ins(%arg0, %arg1 : tensor<6x12xf32>, tensor<12x24xf32>) outs(%v3 : tensor<6x24xf32>) -> tensor<6x24xf32>
    %v5 = tensor.empty() : tensor<6x24xf32>
    %v6 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%v4, %arg2 : tensor<6x24xf32>, tensor<24xf32>) outs(%v5 : tensor<6x24xf32>) {
    ^bb0(%a0: f32, %a1: f32, %out: f32):
      %t = arith.addf %a0, %a1 : f32
      linalg.yield %t : f32
    } -> tensor<6x24xf32>
    %v7 = tensor.extract_slice %v6[0, 3] [6, 14] [1, 1] : tensor<6x24xf32> to tensor<6x14xf32>
    %v8 = tensor.empty() : tensor<6xf32>
    %v9 = arith.constant -3.0e+38 : f32
    %v10 = linalg.fill ins(%v9 : f32) outs(%v8 : tensor<6xf32>) -> tensor<6xf32>
    %v11 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%v7 : tensor<6x14xf32>) outs(%v10 : tensor<6xf32>) {
    ^bb0(%a0: f32, %out: f32):
      %t = arith.maximumf %a0, %out : f32
      linalg.yield %t : f32
    } -> tensor<6xf32>
    %v12 = tensor.empty() : tensor<6x14xf32>
    %v13 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%v7, %v11 : tensor<6x14xf32>, tensor<6xf32>) outs(%v12 : tensor<6x14xf32>) {
    ^bb0(%a0: f32, %a1: f32, %out: f32):
      %d = arith.subf %a0, %a1 : f32
      %t = math.exp %d : f32
      linalg.yield %t : f32
    } -> tensor<6x14xf32>
    %v14 = tensor.empty() : tensor<6x14xf32>
    %v15 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%v13, %v7 : tensor<6x14xf32>, tensor<6x14xf32>) outs(%v14 : tensor<6x14xf32>) {
    ^bb0(%a0: f32, %a1: f32, %out: f32):
      %t = arith.addf %a0, %a1 : f32
      linalg.yield %t : f32
    } -> tensor<6x14xf32>
    %v16 = tensor.empty() : tensor<6x14xf32>
    %v17 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%v15, %v7 : tensor<6x14xf32>, tensor<6x14xf32>) outs(%v16 : tensor<6x14xf32>) {
    ^bb0(%a0: f32, %a1: f32, %out: f32):
      %t = arith.addf %a0, %a1 : f32
      linalg.yield %t : f32
    } -> tensor<6x14xf32>
    %v18 = tensor.concat dim(1) %v17, %v13 : (tensor<6x14xf32>, tensor<6x14xf32>) -> tensor<6x28xf32>
    return %v18 : tensor<6x28xf32>
  }
}
