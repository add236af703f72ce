//===- DedupKernels.cpp - tp-dedup-kernels ----------------------*- C++ -*-===//
//
// Identical functions become one (the pass's description in Passes.td has
// the before and after). The algorithm:
//
// 1. Symbol tables innermost first (a post-order walk): a gpu.module's
//    candidates are its functions with a body (kernels are reached only
//    through gpu.launch_func), any other table's are its private functions
//    with a body. Public functions are entry points and are never touched.
// 2. Candidates are bucketed by their structural hash
//    (FunctionEquivalence.h). In block order, a candidate is compared with
//    the survivors of its bucket so far (areIdenticalFunctions: same
//    attributes but the name, bodies equivalent ignoring locations): equal
//    to one, it is a duplicate of it; else it survives. So the first of
//    equal functions survives, and the cost is linear in the module's size
//    plus one exact comparison per duplicate.
// 3. One walk of the whole module rewrites every symbol reference whose
//    target is a duplicate: the same path with the survivor's name as its
//    leaf (a survivor lives in its duplicate's table). A reference is
//    resolved from its operation's nearest symbol table, as verifiers
//    resolve it; only references whose leaf names a duplicate are looked
//    up.
// 4. The duplicates are erased. A table that lost any is processed again
//    (functions that called two now-merged functions may be equal now)
//    until nothing changes; its parents come later in the post-order, so
//    host functions that launched equal kernels merge too.
//
// Invariant: only names change; every call and launch runs the same code
// on the same operands as before.
//
//===----------------------------------------------------------------------===//

#include "tp/Conversion/FunctionEquivalence.h"
#include "tp/Conversion/Passes.h"

#include "mlir/IR/AttrTypeSubElements.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

#include <memory>

namespace mlir::tp {
#define GEN_PASS_DEF_DEDUPKERNELSPASS
#include "tp/Conversion/Passes.h.inc"
} // namespace mlir::tp

#define DEBUG_TYPE "tp-dedup-kernels"

using namespace mlir;
using namespace mlir::tp;

namespace {

/// The functions of `table` that may merge (step 1), in block order.
SmallVector<FunctionOpInterface> candidatesOf(Operation *table) {
  bool kernels = isa<gpu::GPUModuleOp>(table);
  SmallVector<FunctionOpInterface> candidates;
  for (Region &region : table->getRegions())
    for (Block &block : region)
      for (auto fn : block.getOps<FunctionOpInterface>())
        if (!fn.isExternal() &&
            (kernels || cast<SymbolOpInterface>(fn.getOperation()).isPrivate()))
          candidates.push_back(fn);
  return candidates;
}

/// Points every reference to a key of `survivorOf` at its value (step 3).
void redirect(Operation *top,
              const DenseMap<Operation *, Operation *> &survivorOf) {
  DenseSet<StringAttr> names;
  for (auto [duplicate, survivor] : survivorOf)
    names.insert(SymbolTable::getSymbolName(duplicate));
  SymbolTableCollection tables;
  // A reference means what it resolves to from its scope: one replacer
  // (whose cache is per attribute) per scope.
  DenseMap<Operation *, std::unique_ptr<AttrTypeReplacer>> replacers;
  auto replacerFor = [&](Operation *scope) -> AttrTypeReplacer & {
    std::unique_ptr<AttrTypeReplacer> &replacer = replacers[scope];
    if (replacer)
      return *replacer;
    replacer = std::make_unique<AttrTypeReplacer>();
    replacer->addReplacement(
        [&, scope](SymbolRefAttr ref) -> std::optional<Attribute> {
          if (!names.contains(ref.getLeafReference()))
            return std::nullopt;
          auto it = survivorOf.find(tables.lookupSymbolIn(scope, ref));
          if (it == survivorOf.end())
            return std::nullopt;
          auto leaf = FlatSymbolRefAttr::get(
              SymbolTable::getSymbolName(it->second));
          if (ref.getNestedReferences().empty())
            return leaf;
          SmallVector<FlatSymbolRefAttr> nested(ref.getNestedReferences());
          nested.back() = leaf;
          return SymbolRefAttr::get(ref.getRootReference(), nested);
        });
    return *replacer;
  };
  top->walk([&](Operation *op) {
    if (Operation *scope = SymbolTable::getNearestSymbolTable(op))
      replacerFor(scope).replaceElementsIn(op, /*replaceAttrs=*/true,
                                           /*replaceLocs=*/false,
                                           /*replaceTypes=*/false);
  });
}

struct DedupKernelsPass
    : public tp::impl::DedupKernelsPassBase<DedupKernelsPass> {
  void runOnOperation() override {
    Operation *top = getOperation();
    SmallVector<Operation *> tables;
    top->walk<WalkOrder::PostOrder>([&](Operation *op) {
      if (op->hasTrait<OpTrait::SymbolTable>())
        tables.push_back(op);
    });
    for (Operation *table : tables) {
      while (true) {
        DenseMap<llvm::hash_code, SmallVector<FunctionOpInterface, 1>> buckets;
        DenseMap<Operation *, Operation *> survivorOf;
        for (FunctionOpInterface fn : candidatesOf(table)) {
          SmallVector<FunctionOpInterface, 1> &bucket =
              buckets[structuralHash(fn)];
          auto same = llvm::find_if(bucket, [&](FunctionOpInterface kept) {
            return areIdenticalFunctions(kept, fn);
          });
          if (same != bucket.end())
            survivorOf[fn] = *same;
          else
            bucket.push_back(fn);
        }
        if (survivorOf.empty())
          break;
        redirect(top, survivorOf);
        for (auto [duplicate, survivor] : survivorOf)
          duplicate->erase();
      }
    }
  }
};

} // namespace
