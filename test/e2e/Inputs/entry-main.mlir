// utils/random-program.py
module {
  func.func @main(%arg0: tensor<6x24xf32>, %arg1: tensor<6x12xf32> {tp.init = {kind = "normal", seed = 1864972417 : i64, std = 0.408248 : f64}, tp.param}, %arg2: tensor<12xf32> {tp.init = {kind = "normal", seed = 1232529315 : i64, std = 0.288675 : f64}, tp.param}, %arg3: tensor<12x24xf32> {tp.init = {kind = "normal", seed = 465423698 : i64, std = 0.288675 : f64}, tp.param}, %arg4: tensor<24xf32> {tp.init = {kind = "normal", seed = 1967836689 : i64, std = 0.204124 : f64}, tp.param}, %arg5: tensor<24x16xf32> {tp.init = {kind = "normal", seed = 955277376 : i64, std = 0.204124 : f64}, tp.param}, %arg6: tensor<16xf32> {tp.init = {kind = "normal", seed = 2088078429 : i64, std = 0.250000 : f64}, tp.param}, %arg7: tensor<24x6xf32> {tp.init = {kind = "normal", seed = 2061857248 : i64, std = 0.204124 : f64}, tp.param}, %arg8: tensor<16x6xf32> {tp.init = {kind = "normal", seed = 1157973580 : i64, std = 0.250000 : f64}, tp.param}) -> tensor<6x6xf32> {
    %v1 = tensor.empty() : tensor<6x24xf32>
    %v2 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%arg0 : tensor<6x24xf32>) outs(%v1 : tensor<6x24xf32>) {
    ^bb0(%a0: f32, %out: f32):
      %t = math.tanh %a0 : f32
      linalg.yield %t : f32
    } -> tensor<6x24xf32>
    %v3 = tensor.empty() : tensor<24x6xf32>
    %v4 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%v2 : tensor<6x24xf32>) outs(%v3 : tensor<24x6xf32>) {
    ^bb0(%a0: f32, %out: f32):
      linalg.yield %a0 : f32
    } -> tensor<24x6xf32>
    %v5 = tensor.expand_shape %v4 [[0], [1, 2]] output_shape [24, 2, 3] : tensor<24x6xf32> into tensor<24x2x3xf32>
    %v6 = tensor.empty() : tensor<24x2x3xf32>
    %v7 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%v5 : tensor<24x2x3xf32>) outs(%v6 : tensor<24x2x3xf32>) {
    ^bb0(%a0: f32, %out: f32):
      %z = arith.constant 0.0 : f32
      %t = arith.maximumf %a0, %z : f32
      linalg.yield %t : f32
    } -> tensor<24x2x3xf32>
    %v8 = tensor.collapse_shape %v7 [[0], [1, 2]] : tensor<24x2x3xf32> into tensor<24x6xf32>
    %v9 = tensor.empty() : tensor<24x12xf32>
    %v10 = arith.constant 0.0 : f32
    %v11 = linalg.fill ins(%v10 : f32) outs(%v9 : tensor<24x12xf32>) -> tensor<24x12xf32>
    %v12 = linalg.matmul ins(%v8, %arg1 : tensor<24x6xf32>, tensor<6x12xf32>) outs(%v11 : tensor<24x12xf32>) -> tensor<24x12xf32>
    %v13 = tensor.empty() : tensor<24x12xf32>
    %v14 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%v12, %arg2 : tensor<24x12xf32>, tensor<12xf32>) outs(%v13 : tensor<24x12xf32>) {
    ^bb0(%a0: f32, %a1: f32, %out: f32):
      %t = arith.addf %a0, %a1 : f32
      linalg.yield %t : f32
    } -> tensor<24x12xf32>
    %v15 = tensor.empty() : tensor<24x24xf32>
    %v16 = arith.constant 0.0 : f32
    %v17 = linalg.fill ins(%v16 : f32) outs(%v15 : tensor<24x24xf32>) -> tensor<24x24xf32>
    %v18 = linalg.matmul ins(%v14, %arg3 : tensor<24x12xf32>, tensor<12x24xf32>) outs(%v17 : tensor<24x24xf32>) -> tensor<24x24xf32>
    %v19 = tensor.empty() : tensor<24x24xf32>
    %v20 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%v18, %arg4 : tensor<24x24xf32>, tensor<24xf32>) outs(%v19 : tensor<24x24xf32>) {
    ^bb0(%a0: f32, %a1: f32, %out: f32):
      %t = arith.addf %a0, %a1 : f32
      linalg.yield %t : f32
    } -> tensor<24x24xf32>
    %v21 = tensor.empty() : tensor<24x24xf32>
    %v22 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%v20 : tensor<24x24xf32>) outs(%v21 : tensor<24x24xf32>) {
    ^bb0(%a0: f32, %out: f32):
      linalg.yield %a0 : f32
    } -> tensor<24x24xf32>
    %v23 = tensor.empty() : tensor<24x24xf32>
    %v24 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%v22 : tensor<24x24xf32>) outs(%v23 : tensor<24x24xf32>) {
    ^bb0(%a0: f32, %out: f32):
      %t = math.tanh %a0 : f32
      linalg.yield %t : f32
    } -> tensor<24x24xf32>
    %v25 = tensor.empty() : tensor<24x16xf32>
    %v26 = arith.constant 0.0 : f32
    %v27 = linalg.fill ins(%v26 : f32) outs(%v25 : tensor<24x16xf32>) -> tensor<24x16xf32>
    %v28 = linalg.matmul ins(%v24, %arg5 : tensor<24x24xf32>, tensor<24x16xf32>) outs(%v27 : tensor<24x16xf32>) -> tensor<24x16xf32>
    %v29 = tensor.empty() : tensor<24x16xf32>
    %v30 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%v28, %arg6 : tensor<24x16xf32>, tensor<16xf32>) outs(%v29 : tensor<24x16xf32>) {
    ^bb0(%a0: f32, %a1: f32, %out: f32):
      %t = arith.addf %a0, %a1 : f32
      linalg.yield %t : f32
    } -> tensor<24x16xf32>
    %v31 = tensor.empty() : tensor<16x24xf32>
    %v32 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%v30 : tensor<24x16xf32>) outs(%v31 : tensor<16x24xf32>) {
    ^bb0(%a0: f32, %out: f32):
      linalg.yield %a0 : f32
    } -> tensor<16x24xf32>
    %v33 = tensor.empty() : tensor<16x6xf32>
    %v34 = arith.constant 0.0 : f32
    %v35 = linalg.fill ins(%v34 : f32) outs(%v33 : tensor<16x6xf32>) -> tensor<16x6xf32>
    %v36 = linalg.matmul ins(%v32, %arg7 : tensor<16x24xf32>, tensor<24x6xf32>) outs(%v35 : tensor<16x6xf32>) -> tensor<16x6xf32>
    %v37 = tensor.empty() : tensor<6x16xf32>
    %v38 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%v36 : tensor<16x6xf32>) outs(%v37 : tensor<6x16xf32>) {
    ^bb0(%a0: f32, %out: f32):
      linalg.yield %a0 : f32
    } -> tensor<6x16xf32>
    %v39 = tensor.empty() : tensor<6x6xf32>
    %v40 = arith.constant 0.0 : f32
    %v41 = linalg.fill ins(%v40 : f32) outs(%v39 : tensor<6x6xf32>) -> tensor<6x6xf32>
    %v42 = linalg.matmul ins(%v38, %arg8 : tensor<6x16xf32>, tensor<16x6xf32>) outs(%v41 : tensor<6x6xf32>) -> tensor<6x6xf32>
    return %v42 : tensor<6x6xf32>
  }
}
