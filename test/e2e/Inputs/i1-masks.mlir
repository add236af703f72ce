// Boolean masks with their columns split over "tp": a row's any (maxui over
// i1, left a partial max), its parity (addi over i1, an xor, left a partial
// sum) and the negated mask (gathered).
tp.mesh @m ["tp" = 2]
#row = affine_map<(i, j) -> (i, j)>
#red = affine_map<(i, j) -> (i)>
func.func @f(%mask: tensor<4x8xi1> {tp.layout = #tp.layout<@m, [-, "tp"]>} loc("mask"))
    -> (tensor<4xi1> {tp.name = "any"}, tensor<4xi1> {tp.name = "parity"},
        tensor<4x8xi1> {tp.name = "not"}) {
  %false = arith.constant false
  %true = arith.constant true
  %e = tensor.empty() : tensor<4xi1>
  %init = linalg.fill ins(%false : i1) outs(%e : tensor<4xi1>) -> tensor<4xi1>
  %any = linalg.generic {indexing_maps = [#row, #red], iterator_types = ["parallel", "reduction"]}
      ins(%mask : tensor<4x8xi1>) outs(%init : tensor<4xi1>) {
  ^bb0(%m: i1, %acc: i1):
    %r = arith.maxui %m, %acc : i1
    linalg.yield %r : i1
  } -> tensor<4xi1>
  %parity = linalg.generic {indexing_maps = [#row, #red], iterator_types = ["parallel", "reduction"]}
      ins(%mask : tensor<4x8xi1>) outs(%init : tensor<4xi1>) {
  ^bb0(%m: i1, %acc: i1):
    %r = arith.addi %m, %acc : i1
    linalg.yield %r : i1
  } -> tensor<4xi1>
  %anyp = tp.annotate %any layout <@m, [-], partial = max("tp")> : tensor<4xi1>
  %parityp = tp.annotate %parity layout <@m, [-], partial = sum("tp")> : tensor<4xi1>
  %e2 = tensor.empty() : tensor<4x8xi1>
  %not = linalg.generic {indexing_maps = [#row, #row], iterator_types = ["parallel", "parallel"]}
      ins(%mask : tensor<4x8xi1>) outs(%e2 : tensor<4x8xi1>) {
  ^bb0(%m: i1, %o: i1):
    %r = arith.xori %m, %true : i1
    linalg.yield %r : i1
  } -> tensor<4x8xi1>
  return %anyp, %parityp, %not : tensor<4xi1>, tensor<4xi1>, tensor<4x8xi1>
}
