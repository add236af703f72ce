// The attention mask of torch-mlir's export of a Hugging Face BERT with
// attention_mask (tp-import --attention-mask; test/frontends/zoo.py's
// bert-mask): `attention_mask != 0` as an i1 [1, 16] tensor, gathered by
// tensor.extract into the [1, 1, 1, 16] key mask, and-ed with the query
// bounds, selected into 0 or finfo.min. The GPU path wrote the i1 tensor
// as a vector<16 x i1> store (bit-packed: 2 bytes) that the gather read as
// 16 bytes (issue 39's zoo on the emulator: every masked model wrong).
#map = affine_map<(d0, d1) -> (d0, d1)>
#map5 = affine_map<(d0) -> (d0)>
#map6 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#map7 = affine_map<(d0, d1, d2, d3) -> ()>
#map8 = affine_map<(d0, d1, d2, d3) -> (0, 0, 0, 0)>
#map9 = affine_map<(d0, d1, d2, d3) -> (0, 0, 0, d3)>
#map10 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, 0)>
#map11 = affine_map<(d0, d1, d2, d3) -> (d0, d1, 0, d3)>
module {
  func.func @main(%arg1: tensor<1x16xi64> {tp.name = "attention_mask", tp.init = {kind = "integers", seed = 5 : i64, high = 2 : i64}}) -> tensor<1x1x16x16xf32> {
    %c1_i64 = arith.constant 1 : i64
    %c0_i64 = arith.constant 0 : i64
    %c16_i64 = arith.constant 16 : i64
    %cst_4 = arith.constant dense<-3.40282347E+38> : tensor<f32>
    %cst_5 = arith.constant dense<0.000000e+00> : tensor<f32>
    %cst_6 = arith.constant dense<true> : tensor<i1>
    %30 = tensor.empty() : tensor<1x16xi1>
    %31 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%arg1 : tensor<1x16xi64>) outs(%30 : tensor<1x16xi1>) {
    ^bb0(%in: i64, %out: i1):
      %217 = arith.cmpi ne, %in, %c0_i64 : i64
      linalg.yield %217 : i1
    } -> tensor<1x16xi1>
    %32 = tensor.empty() : tensor<1xi64>
    %33 = linalg.generic {indexing_maps = [#map5], iterator_types = ["parallel"]} outs(%32 : tensor<1xi64>) {
    ^bb0(%out: i64):
      linalg.yield %c0_i64 : i64
    } -> tensor<1xi64>
    %34 = tensor.empty() : tensor<16xi64>
    %35 = linalg.generic {indexing_maps = [#map5], iterator_types = ["parallel"]} outs(%34 : tensor<16xi64>) {
    ^bb0(%out: i64):
      %217 = linalg.index 0 : index
      %218 = arith.index_cast %217 : index to i64
      linalg.yield %218 : i64
    } -> tensor<16xi64>
    %expanded = tensor.expand_shape %33 [[0, 1, 2, 3]] output_shape [1, 1, 1, 1] : tensor<1xi64> into tensor<1x1x1x1xi64>
    %expanded_14 = tensor.expand_shape %35 [[0, 1, 2, 3]] output_shape [1, 1, 16, 1] : tensor<16xi64> into tensor<1x1x16x1xi64>
    %expanded_15 = tensor.expand_shape %35 [[0, 1, 2, 3]] output_shape [1, 1, 1, 16] : tensor<16xi64> into tensor<1x1x1x16xi64>
    %36 = tensor.empty() : tensor<1x1x16x1xi1>
    %37 = linalg.generic {indexing_maps = [#map6, #map6], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%expanded_14 : tensor<1x1x16x1xi64>) outs(%36 : tensor<1x1x16x1xi1>) {
    ^bb0(%in: i64, %out: i1):
      %217 = arith.cmpi sge, %in, %c0_i64 : i64
      linalg.yield %217 : i1
    } -> tensor<1x1x16x1xi1>
    %38 = linalg.generic {indexing_maps = [#map7, #map6, #map6], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%cst_6, %37 : tensor<i1>, tensor<1x1x16x1xi1>) outs(%36 : tensor<1x1x16x1xi1>) {
    ^bb0(%in: i1, %in_74: i1, %out: i1):
      %217 = arith.andi %in, %in_74 : i1
      linalg.yield %217 : i1
    } -> tensor<1x1x16x1xi1>
    %39 = tensor.empty() : tensor<1x1x1x16xi1>
    %40 = linalg.generic {indexing_maps = [#map8, #map9, #map6], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%expanded, %expanded_15 : tensor<1x1x1x1xi64>, tensor<1x1x1x16xi64>) outs(%39 : tensor<1x1x1x16xi1>) {
    ^bb0(%in: i64, %in_74: i64, %out: i1):
      %217 = arith.cmpi slt, %in, %c0_i64 : i64
      %218 = arith.addi %in, %c1_i64 : i64
      %219 = arith.select %217, %218, %in : i64
      %220 = arith.index_cast %219 : i64 to index
      %221 = arith.cmpi slt, %in_74, %c0_i64 : i64
      %222 = arith.addi %in_74, %c16_i64 : i64
      %223 = arith.select %221, %222, %in_74 : i64
      %224 = arith.index_cast %223 : i64 to index
      %extracted = tensor.extract %31[%220, %224] : tensor<1x16xi1>
      linalg.yield %extracted : i1
    } -> tensor<1x1x1x16xi1>
    %41 = tensor.empty() : tensor<1x1x16x16xi1>
    %42 = linalg.generic {indexing_maps = [#map10, #map11, #map6], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%38, %40 : tensor<1x1x16x1xi1>, tensor<1x1x1x16xi1>) outs(%41 : tensor<1x1x16x16xi1>) {
    ^bb0(%in: i1, %in_74: i1, %out: i1):
      %217 = arith.andi %in, %in_74 : i1
      linalg.yield %217 : i1
    } -> tensor<1x1x16x16xi1>
    %43 = tensor.empty() : tensor<1x1x16x16xf32>
    %44 = linalg.generic {indexing_maps = [#map6, #map7, #map7, #map6], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%42, %cst_5, %cst_4 : tensor<1x1x16x16xi1>, tensor<f32>, tensor<f32>) outs(%43 : tensor<1x1x16x16xf32>) {
    ^bb0(%in: i1, %in_74: f32, %in_75: f32, %out: f32):
      %217 = arith.select %in, %in_74, %in_75 : f32
      linalg.yield %217 : f32
    } -> tensor<1x1x16x16xf32>
    return %44 : tensor<1x1x16x16xf32>
  }
}

