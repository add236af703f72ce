//===- VectorizeCPU.cpp - the tp-vectorize-cpu pass ------------*- C++ -*-===//
//
// One idea: every elementwise or reduction linalg op on buffers becomes
// loops over vectors of one machine register (or a few), not loops over
// scalars, so that LLVM emits SIMD code (AVX-512 or AVX2 when model.so is
// compiled for them) without having to prove anything about the loops.
//
// Algorithm, per linalg op on buffers with static loop ranges that upstream's
// vectorizer accepts (linalg::vectorizeOpPrecondition; contractions are left
// to the runtime's GEMM, and ops that gather through memref.load in their
// body stay scalar loops):
//  1. The vector dimension: the loop that walks the innermost dimension of
//     the op's largest operand (its last map result, a plain loop index),
//     so that the big reads and writes are contiguous. A row reduction
//     (softmax's max and sum, a norm's mean) then vectorizes along the
//     reduced row; a column reduction along the kept columns.
//  2. Tiles: 1 along every other loop, `lanes` along the vector dimension
//     (`vector-bytes` / the widest element's bytes), or the whole dimension
//     when it is at most two tiles long. The vector loop is made the
//     innermost one (scf::tileUsingSCF with an interchange), so that
//     consecutive tiles are consecutive in memory; a column walk of a large
//     tensor with a bad stride thereby becomes a row walk.
//  3. When `lanes` does not divide the dimension, the vector loop is peeled
//     (scf::peelForLoopAndSimplifyBounds): the main loop has full tiles and
//     the last iteration a smaller static one, each vectorized on its own.
//  4. After canonicalization has made the tiles' shapes static,
//     linalg::vectorize turns each tile into vector.transfer_read / write
//     and arithmetic on vectors (vector.multi_reduction for reductions).
//  5. The vector ops are lowered towards LLVM: leading unit dimensions
//     dropped, transfers to plain (or masked) loads and stores, reductions
//     to vector.reduction, and f32 math (exp, tanh, erf, log, ...) to
//     upstream's polynomial approximations, which are plain vector
//     arithmetic instead of one libm call per lane.
//
//===----------------------------------------------------------------------===//

#include "tp/Conversion/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/SCF/Transforms/Transforms.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Vector/Transforms/LoweringPatterns.h"
#include "mlir/Dialect/Vector/Transforms/VectorRewritePatterns.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::tp {
#define GEN_PASS_DEF_VECTORIZECPUPASS
#include "tp/Conversion/Passes.h.inc"
} // namespace mlir::tp

using namespace mlir;
using namespace mlir::tp;

// Marks the tiles step 4 vectorizes (not a tp. attribute: the dialect
// verifies those).
static constexpr llvm::StringLiteral kTileMarker = "tp_vector_tile";

namespace {

/// Bytes of the widest element among the op's operands.
int64_t widestElementBytes(linalg::LinalgOp op) {
  int64_t widest = 1;
  for (OpOperand &operand : op->getOpOperands()) {
    Type element = getElementTypeOrSelf(operand.get().getType());
    if (element.isIntOrFloat())
      widest =
          std::max<int64_t>(widest, (element.getIntOrFloatBitWidth() + 7) / 8);
    else if (element.isIndex())
      widest = std::max<int64_t>(widest, 8);
  }
  return widest;
}

/// The loop that walks the innermost dimension of the largest shaped
/// operand, or nullopt when that dimension is not a plain loop index.
std::optional<unsigned> vectorLoop(linalg::LinalgOp op) {
  OpOperand *largest = nullptr;
  int64_t largestSize = -1;
  for (OpOperand &operand : op->getOpOperands()) {
    auto type = dyn_cast<ShapedType>(operand.get().getType());
    if (!type || type.getRank() == 0 || !type.hasStaticShape())
      continue;
    // Ties go to the init: the writes decide.
    if (type.getNumElements() > largestSize ||
        (type.getNumElements() == largestSize && op.isDpsInit(&operand))) {
      largest = &operand;
      largestSize = type.getNumElements();
    }
  }
  if (!largest)
    return std::nullopt;
  AffineMap map = op.getMatchingIndexingMap(largest);
  if (map.getNumResults() == 0)
    return std::nullopt;
  auto dim = dyn_cast<AffineDimExpr>(map.getResults().back());
  if (!dim)
    return std::nullopt;
  return dim.getPosition();
}

bool isCandidate(linalg::LinalgOp op) {
  if (!op.hasPureBufferSemantics() || op.getNumLoops() == 0 ||
      linalg::isaContractionOpInterface(op) ||
      !op.hasOnlyProjectedPermutations())
    return false;
  // Tensor-like reads through memref.load (embedding gathers) stay loops:
  // the vectorizer handles tensor.extract only.
  bool loads = false;
  op->walk([&](memref::LoadOp) { loads = true; });
  if (loads)
    return false;
  // Elements narrower than a byte (i1 masks) are one byte each in a memref
  // but packed bits in an LLVM vector: a vector load of memref<8xi1> would
  // read one byte as eight elements. Such ops stay scalar loops.
  for (OpOperand &operand : op->getOpOperands()) {
    Type element = getElementTypeOrSelf(operand.get().getType());
    if (element.isIntOrFloat() && element.getIntOrFloatBitWidth() % 8)
      return false;
  }
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (llvm::any_of(ranges, ShapedType::isDynamic))
    return false;
  return succeeded(linalg::vectorizeOpPrecondition(op));
}

/// Applies every registered canonicalization pattern, and those `extra`
/// adds, to `fn`.
LogicalResult
canonicalize(func::FuncOp fn,
             function_ref<void(RewritePatternSet &)> extra = nullptr) {
  MLIRContext *context = fn.getContext();
  RewritePatternSet patterns(context);
  if (extra)
    extra(patterns);
  for (Dialect *dialect : context->getLoadedDialects())
    dialect->getCanonicalizationPatterns(patterns);
  for (RegisteredOperationName name : context->getRegisteredOperations())
    name.getCanonicalizationPatterns(patterns, context);
  return applyPatternsGreedily(fn, std::move(patterns));
}

struct VectorizeCPUPass
    : public tp::impl::VectorizeCPUPassBase<VectorizeCPUPass> {
  using Base::Base;

  void runOnOperation() override;

private:
  LogicalResult tile(RewriterBase &rewriter, linalg::LinalgOp op);
};

LogicalResult VectorizeCPUPass::tile(RewriterBase &rewriter,
                                     linalg::LinalgOp op) {
  std::optional<unsigned> vdim = vectorLoop(op);
  if (!vdim)
    return failure();
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  int64_t lanes = std::max<int64_t>(1, vectorBytes / widestElementBytes(op));
  int64_t extent = ranges[*vdim];
  int64_t vectorTile = extent <= 2 * lanes ? extent : lanes;

  unsigned loops = ranges.size();
  SmallVector<OpFoldResult> sizes;
  for (unsigned d = 0; d < loops; ++d)
    sizes.push_back(rewriter.getIndexAttr(d == *vdim ? vectorTile : 1));
  // The vector loop innermost.
  SmallVector<int64_t> interchange;
  for (unsigned d = 0; d < loops; ++d)
    if (d != *vdim)
      interchange.push_back(d);
  interchange.push_back(*vdim);

  scf::SCFTilingOptions options;
  options.setTileSizes(sizes);
  options.setInterchange(interchange);
  rewriter.setInsertionPoint(op);
  FailureOr<scf::SCFTilingResult> tiled = scf::tileUsingSCF(
      rewriter, cast<TilingInterface>(op.getOperation()), options);
  if (failed(tiled))
    return failure();
  for (Operation *t : tiled->tiledOps)
    t->setAttr(kTileMarker, rewriter.getUnitAttr());
  // The innermost loop is the vector loop when it was tiled at all (a
  // whole-dimension tile of a single trip makes no loop).
  if (!tiled->loops.empty() && extent % vectorTile != 0) {
    auto inner = dyn_cast<scf::ForOp>(tiled->loops.back().getOperation());
    scf::ForOp partial;
    if (inner)
      (void)scf::peelForLoopAndSimplifyBounds(rewriter, inner, partial);
  }
  rewriter.eraseOp(op);
  return success();
}

void VectorizeCPUPass::runOnOperation() {
  func::FuncOp fn = getOperation();
  MLIRContext *context = &getContext();
  if (vectorBytes < 1) {
    fn.emitError() << "tp-vectorize-cpu: vector-bytes " << int64_t(vectorBytes)
                   << " is not positive";
    return signalPassFailure();
  }

  // 1-3. Tiles, with the vector loop peeled where needed.
  SmallVector<linalg::LinalgOp> candidates;
  fn.walk([&](linalg::LinalgOp op) {
    if (isCandidate(op))
      candidates.push_back(op);
  });
  IRRewriter rewriter(context);
  for (linalg::LinalgOp op : candidates)
    (void)tile(rewriter, op);

  // Static tile shapes.
  if (failed(canonicalize(fn)))
    return signalPassFailure();

  // 4. Vectors.
  SmallVector<linalg::LinalgOp> tiles;
  fn.walk([&](linalg::LinalgOp op) {
    if (op->hasAttr(kTileMarker))
      tiles.push_back(op);
  });
  for (linalg::LinalgOp op : tiles) {
    op->removeAttr(kTileMarker);
    if (llvm::any_of(op.getStaticLoopRanges(), ShapedType::isDynamic))
      continue;
    rewriter.setInsertionPoint(op);
    if (succeeded(linalg::vectorize(rewriter, op)))
      rewriter.eraseOp(op);
  }

  // 5. Towards LLVM. First 1-D vectors: unit dimensions go, and with them
  // the reductions over a tile's unit reduction dimensions (a column sum
  // becomes an elementwise add of rows).
  if (failed(canonicalize(fn, [](RewritePatternSet &patterns) {
        vector::populateCastAwayVectorLeadingOneDimPatterns(patterns);
        vector::populateVectorTransferDropUnitDimsPatterns(patterns);
        vector::populateDropUnitDimWithShapeCastPatterns(patterns);
      })))
    return signalPassFailure();
  {
    RewritePatternSet patterns(context);
    vector::populateVectorMultiReductionLoweringPatterns(
        patterns, vector::VectorMultiReductionLowering::InnerReduction);
    vector::populateVectorTransferPermutationMapLoweringPatterns(patterns);
    vector::populateVectorTransferLoweringPatterns(patterns,
                                                   /*maxTransferRank=*/1);
    vector::populateVectorBroadcastLoweringPatterns(patterns);
    vector::populateVectorShapeCastLoweringPatterns(patterns);
    vector::populateVectorTransposeLoweringPatterns(
        patterns, vector::VectorTransposeLowering::EltWise);
    vector::populateVectorMaskOpLoweringPatterns(patterns);
    vector::populateVectorStepLoweringPatterns(patterns);
    // Integer powers as products (LLVM's powi takes a scalar exponent);
    // f32 math as vector arithmetic; f64 keeps its libm calls.
    math::populateExpansionPatterns(patterns, {"fpowi"});
    populateMathAlgebraicSimplificationPatterns(patterns);
    populateMathPolynomialApproximationPatterns(patterns, [](StringRef name) {
      name.consume_front("math.");
      return name == "exp" || name == "expm1" || name == "tanh" ||
             name == "erf" || name == "log" || name == "log1p" ||
             name == "log2";
    });
    if (failed(applyPatternsGreedily(fn, std::move(patterns))))
      return signalPassFailure();
  }
}

} // namespace
