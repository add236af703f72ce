//===- ShardingRuleInterface.td - factor sharding rules ----*- tablegen -*-===//

#ifndef TP_ANALYSIS_SHARDINGRULEINTERFACE_TD
#define TP_ANALYSIS_SHARDINGRULEINTERFACE_TD

include "mlir/IR/OpBase.td"

def TP_ShardingRuleOpInterface : OpInterface<"ShardingRuleOpInterface"> {
  let cppNamespace = "::mlir::tp";
  let description = [{
    Describes how an op can be split over a device mesh, as *factors*: the
    loop dimensions of its iteration space. Each tensor dimension of each
    operand and result is made of zero or more factors (major first; more
    than one for a reshape that merges dimensions). Splitting a parallel
    factor over a mesh axis splits every tensor dimension whose major factor
    it is; splitting a reduction factor leaves the results partial with the
    factor's combiner. The planner derives every strategy of the op from this
    rule; it never needs to know the op's name.

    Upstream ops get the interface as external models
    (`registerShardingRuleExternalModels`); other dialects can attach theirs.
  }];
  let methods = [
    InterfaceMethod<
      /*desc=*/"Returns the op's factor rule, or failure when the op in its "
               "current form cannot be described (it is then kept replicated).",
      /*retTy=*/"::mlir::FailureOr<::mlir::tp::ShardingRule>",
      /*methodName=*/"getShardingRule",
      /*args=*/(ins)>
  ];
}

#endif // TP_ANALYSIS_SHARDINGRULEINTERFACE_TD
