//===- tp-fuzz.cpp - libFuzzer target for the tp-shard pipeline -*- C++ -*-===//
//
// Input: one option byte block, then MLIR text. The first four bytes pick
// the pipeline options (the mesh: tp=N or 3 to 6 axes, sequence
// parallelism, memory constraint, padding); a module that declares a
// tp.mesh is planned on it; the rest is parsed as a module and, when it parses and
// verifies, planned, partitioned and optimised. Diagnostics are swallowed:
// the only failures are crashes and sanitizer reports. After a successful
// pipeline the result must pass --tp-verify-partitioned (the pipeline ends
// with it) and print, re-parse and verify again, and every plan must be
// exact (gap 0) or carry a proven bound: a finite gap >= 0 and a lower
// bound at most its step time (the planner then warns with both).
//
// Built with -fsanitize=fuzzer,address,undefined when TP_BUILD_FUZZER is on
// (clang); bench/fuzz.sh runs it seeded with the lit inputs and tp-gen
// models.
//
//===----------------------------------------------------------------------===//

#include "tp/Dialect/TP/IR/InputChecks.h"
#include "tp/Dialect/TP/IR/TPOps.h"
#include "tp/Dialect/TP/Transforms/Passes.h"
#include "tp/InitTP.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>

using namespace mlir;

static MLIRContext &getContext() {
  static MLIRContext *context = [] {
    DialectRegistry registry;
    registerAllDialects(registry);
    registerAllExtensions(registry);
    tp::registerTPDialects(registry);
    tp::registerTPPasses();
    auto *ctx = new MLIRContext(registry);
    ctx->loadAllAvailableDialects();
    ctx->printOpOnDiagnostic(false);
    // Diagnostics are expected on most inputs; keep them quiet.
    ctx->getDiagEngine().registerHandler([](Diagnostic &) { return success(); });
    return ctx;
  }();
  return *context;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 4)
    return 0;
  MLIRContext &context = getContext();
  tp::ShardPipelineOptions options;
  // data[0]: the mesh. Low 3 bits: tp=1..8; bits 3-4: a mesh of several
  // axes instead (mesh-axes=, 2 to 6 axes: issue 27's hangs); a module
  // that declares its own tp.mesh is planned on it.
  static const char *meshes[] = {"", "a=2,b=2,c=2", "dp=2,tp=2,x=2,y=2",
                                 "a=2,b=3,c=2,d=1,e=2,f=2"};
  options.tp = 1 + data[0] % 8;
  if (const char *axes = meshes[(data[0] >> 3) % 4]; *axes) {
    options.tp = -1;
    options.meshAxes = axes;
  }
  static const char *sp[] = {"auto", "on", "off"};
  options.sequenceParallel = sp[data[1] % 3];
  options.memoryBudget = data[2] % 4 == 0 ? "none" : "";
  options.allowPadding = data[3] % 2 == 0;
  options.paramShare = 1.0 + (data[3] >> 1) % 4 * 0.05;
  std::string text(reinterpret_cast<const char *>(data + 4), size - 4);
  // MLIR 22's own parser crash (docs/fuzzing.md): tp-opt and tp-run refuse
  // such text before parsing; the campaign looks for our crashes.
  if (tp::findUpstreamParserCrash(text))
    return 0;

  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(text, ParserConfig(&context));
  if (!module || failed(verify(*module)))
    return 0;
  if (!module->getOps<tp::MeshOp>().empty()) {
    options.tp = -1;
    options.meshAxes = "";
  }
  // The solver's claim, function by function (docs/passes/propagate.md).
  options.reportCallback = [](const llvm::json::Value &root) {
    const llvm::json::Array *functions =
        root.getAsObject()->getArray("functions");
    for (const llvm::json::Value &fn : *functions) {
      const llvm::json::Object *f = fn.getAsObject();
      const llvm::json::Object *solver = f->getObject("solver");
      bool exact = solver->getBoolean("exact").value_or(false);
      double gap = solver->getNumber("gap").value_or(-1);
      double bound = solver->getNumber("lower_bound_seconds").value_or(0);
      double step =
          f->getObject("totals")->getNumber("step_seconds").value_or(0);
      bool proven = exact ? gap == 0
                          : std::isfinite(gap) && gap >= 0 &&
                                bound <= step * (1 + 1e-9) + 1e-300;
      if (!proven) {
        llvm::errs() << "tp-fuzz: a plan claims exact=" << exact
                     << " with gap " << gap << ", lower bound " << bound
                     << " s, step " << step << " s\n";
        std::abort();
      }
    }
  };
  PassManager pm(&context, ModuleOp::getOperationName());
  tp::buildShardPipeline(pm, options);
  if (failed(pm.run(*module)))
    return 0;
  // The result re-parses and verifies.
  std::string printed;
  llvm::raw_string_ostream os(printed);
  module->print(os);
  OwningOpRef<ModuleOp> again =
      parseSourceString<ModuleOp>(printed, ParserConfig(&context));
  if (!again || failed(verify(*again))) {
    llvm::errs() << "tp-fuzz: the partitioned program does not re-parse:\n"
                 << printed << "\n";
    std::abort();
  }
  return 0;
}
