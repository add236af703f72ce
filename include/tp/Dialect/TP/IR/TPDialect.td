//===- TPDialect.td - tensor-parallel dialect definition ---*- tablegen -*-===//
//
// The `tp` dialect describes how tensors are laid out over a device mesh
// (replicated, sharded along dimensions, or partial) and the collectives that
// move a tensor from one layout to another.
//
//===----------------------------------------------------------------------===//

#ifndef TP_DIALECT_TP_IR_TPDIALECT_TD
#define TP_DIALECT_TP_IR_TPDIALECT_TD

include "mlir/IR/OpBase.td"

def TP_Dialect : Dialect {
  let name = "tp";
  let cppNamespace = "::mlir::tp";
  let summary = "Tensor-parallel layouts over a device mesh, and collectives";
  let description = [{
    The `tp` dialect is the vocabulary of the tp-opt compiler. It has three
    parts:

    * `tp.mesh`, a named N-D grid of devices whose axes carry names and sizes;
    * `#tp.layout`, which says for each dimension of a tensor whether it is
      whole on every device or split over one or more mesh axes, and whether
      the tensor is *partial*: a pending sum, max or min over some mesh axes;
    * ops: `tp.annotate` pins a value's layout before partitioning; the
      collectives `tp.all_reduce`, `tp.all_gather`, `tp.reduce_scatter`,
      `tp.all_to_all` and the communication-free `tp.slice` work on the
      *local* tensors of a partitioned program; `tp.axis_index` gives this
      device's coordinate along mesh axes.

    Five discardable attributes live on function arguments and results:
    `tp.layout` (a `#tp.layout`), `tp.param` (unit: a weight whose layout the
    planner chooses), `tp.global_shape` (the shape before partitioning) and
    `tp.init` (how to materialise a parameter's global value
    deterministically: `{kind = "normal", seed = 7 : i64, std = 0.02 : f64}`,
    kinds `normal` (needs `seed`, `std`), `uniform` (needs `seed`, `scale`:
    values in [-scale, scale)), `zeros`, `ones`, `integers` (needs `seed`,
    `high`: integers in [0, high), for token ids); see `docs/models.md`).
    `tp.name` (a non-empty string) names an argument or result for the
    runtime: it is the buffer's name in `model.json`, the tensor a
    `--checkpoint` or `--reference` file provides (`docs/model-abi.md`);
    two arguments may share a name (tied weights).
    A training step (`tp-gen --train`) adds two: `tp.state` (unit, on
    arguments: optimizer state such as Adam moments and the step counter,
    not a weight) and `tp.updates` (an i64 on results: the index of the
    argument, of the same type, that the result replaces on the next call).
    The planner (`--tp-propagate`) records its decision per op in two more:
    `tp.operand_layouts` and `tp.result_layouts`, arrays with one
    `#tp.layout` per operand and result (`unit` for non-tensors), on global
    shapes, and `tp.captured_layouts` for tensors an op's body reads from
    outside (a gathered embedding table). The dialect verifies them wherever they appear.

    See `docs/RationaleTP.md` for the design rationale.
  }];
  let useDefaultAttributePrinterParser = 1;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
  let hasOperationAttrVerify = 1;
  let extraClassDeclaration = [{
    void registerAttributes();

    /// Name of the argument/result attribute holding a `#tp.layout`.
    static constexpr ::llvm::StringLiteral getLayoutAttrName() {
      return ::llvm::StringLiteral("tp.layout");
    }
    /// Name of the unit attribute marking a parameter with a free layout.
    static constexpr ::llvm::StringLiteral getParamAttrName() {
      return ::llvm::StringLiteral("tp.param");
    }
    /// Name of the dictionary describing how to initialise a parameter.
    static constexpr ::llvm::StringLiteral getInitAttrName() {
      return ::llvm::StringLiteral("tp.init");
    }
    /// Name of the string naming an argument or result for the runtime
    /// (its model.json and checkpoint name).
    static constexpr ::llvm::StringLiteral getNameAttrName() {
      return ::llvm::StringLiteral("tp.name");
    }
    /// Name of the unit attribute marking an argument as training state
    /// (optimizer moments, the step counter) rather than a weight.
    static constexpr ::llvm::StringLiteral getStateAttrName() {
      return ::llvm::StringLiteral("tp.state");
    }
    /// Name of the i64 result attribute naming the argument a result
    /// replaces on the next call (a training step's updated state).
    static constexpr ::llvm::StringLiteral getUpdatesAttrName() {
      return ::llvm::StringLiteral("tp.updates");
    }
    /// Names of the planner's per-op decisions: the layout in which the op
    /// consumes each operand and produces each result (`unit` for values
    /// that are not ranked tensors).
    static constexpr ::llvm::StringLiteral getOperandLayoutsAttrName() {
      return ::llvm::StringLiteral("tp.operand_layouts");
    }
    static constexpr ::llvm::StringLiteral getResultLayoutsAttrName() {
      return ::llvm::StringLiteral("tp.result_layouts");
    }
    /// Layouts of the tensors an op's regions capture (getCapturedTensors).
    static constexpr ::llvm::StringLiteral getCapturedLayoutsAttrName() {
      return ::llvm::StringLiteral("tp.captured_layouts");
    }
    /// Name of the attribute recording the global shape of a local value.
    static constexpr ::llvm::StringLiteral getGlobalShapeAttrName() {
      return ::llvm::StringLiteral("tp.global_shape");
    }
  }];
}

class TP_Op<string mnemonic, list<Trait> traits = []>
    : Op<TP_Dialect, mnemonic, traits>;

#endif // TP_DIALECT_TP_IR_TPDIALECT_TD
