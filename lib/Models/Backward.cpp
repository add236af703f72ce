//===- Backward.cpp - reverse mode over the layers of ModelBuilder -*- C++ -*-===//
//
// How gradients are built
// =======================
//
// The forward graph is built once. After enableGradients(), every layer of
// ModelBuilder (and of GPT2.cpp / Llama.cpp) records, next to the forward
// ops it emits, one gradient rule: a closure holding the forward values its
// derivative needs (inputs, row statistics, probabilities) that, given the
// gradient of the layer's result, emits the ops computing the gradients of
// its inputs and hands them to addGrad. Composite layers (norms, softmax,
// cross-entropy, rotary, the embedding) build their pieces under NoRecord
// and record one hand-derived rule for the whole, so nothing is
// differentiated op by op and no forward value is recomputed beyond cheap
// elementwise expressions (x̂ of a LayerNorm, the rotary angles).
//
// backward(loss) seeds d loss = 1 and runs the tape in reverse creation
// order: since a value is created before every use, all the uses of a value
// have added their terms to its gradient before the rule of the layer that
// produced it runs. Terms of a value used more than once (residual streams,
// the normed input of q/k/v or gate/up, GPT-2's tied embedding) are summed by
// elementwise adds; slices of one tensor taken at distinct indices (GPT-2's
// q, k, v) are inserted into one zero tensor instead.
//
// The gradients are written in the same dialects as the forward pass
// (linalg.matmul with transposing indexing maps, linalg.generic
// contractions, reductions and elementwise ops, tensor reshapes and
// insert_slice), so the planner and the partitioner treat them like any
// other program: there is no "backward" op and no backward special case.
// Every gradient has the type of its primal value.
//
//===----------------------------------------------------------------------===//

#include "tp/Models/ModelBuilder.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace mlir::tp::models;

void ModelBuilder::record(Value result, GradRule rule) {
  if (!isRecording())
    return;
  tape.push_back({result, loc, std::move(rule)});
}

void ModelBuilder::addGrad(Value value, Value grad) {
  auto type = cast<RankedTensorType>(value.getType());
  if (!isa<FloatType>(type.getElementType()))
    return;
  // Inputs (hidden states, token ids, labels) take no gradient; parameters
  // and values computed in the body do.
  if (auto arg = dyn_cast<BlockArgument>(value))
    if (!llvm::any_of(params,
                      [&](const auto &param) { return param.first == arg; }))
      return;
  assert(grad.getType() == type && "a gradient has its value's type");
  auto it = grads.find(value);
  if (it == grads.end()) {
    grads[value] = grad;
    return;
  }
  // A second term: sum, and the gradient is no longer made of slices only.
  sliceGrads.erase(value);
  it->second = add(it->second, grad);
}

void ModelBuilder::backward(Value loss) {
  assert(cast<RankedTensorType>(loss.getType()).getRank() == 0 &&
         "the loss is a scalar");
  bool wasRecording = recording;
  recording = false;
  Location saved = loc;
  grads[loss] = filledTensor({}, getElementTypeOrSelf(loss.getType()),
                             llvm::APFloat(1.0f));
  for (const TapeEntry &entry : llvm::reverse(tape)) {
    auto it = grads.find(entry.result);
    if (it == grads.end())
      continue;
    if (auto name = dyn_cast<NameLoc>(entry.loc))
      loc = NameLoc::get(
          StringAttr::get(getContext(), name.getName().str() + ".grad"));
    else
      loc = entry.loc;
    entry.rule(it->second);
  }
  loc = saved;
  tape.clear();
  recording = wasRecording;
}

Value ModelBuilder::getGrad(Value value) {
  auto it = grads.find(value);
  if (it != grads.end())
    return it->second;
  auto type = cast<RankedTensorType>(value.getType());
  return zeroTensor(type.getShape(), type.getElementType());
}
