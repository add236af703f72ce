//===- RuntimeSymbols.h - the runtime functions compiled code calls -*- C++ -*-//
//
// The one place of the compiler that names libtprt symbols (their C
// declarations are in runtime/include/tprt/tprt_model.h).
//
//===----------------------------------------------------------------------===//

#ifndef TP_CONVERSION_RUNTIMESYMBOLS_H
#define TP_CONVERSION_RUNTIMESYMBOLS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Types.h"
#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>

namespace mlir::tp::runtime {

/// The prefix of every runtime function compiled code calls.
inline constexpr llvm::StringLiteral kSymbolPrefix = "tprt_mlir_";

/// The GEMM entry points, `tprt_mlir_gemm_<suffix>` and
/// `tprt_mlir_batched_gemm_<suffix>` (i32 trans_a, i32 trans_b, A, B, C);
/// the suffix is the element type of A, B and C, or `<ab>_<c>` when C's
/// differs (`bf16_f32`, `f16_f32`: 16-bit operands into an f32 C, the
/// mixed-precision GEMM).
inline constexpr llvm::StringLiteral kGemm = "gemm";
inline constexpr llvm::StringLiteral kBatchedGemm = "batched_gemm";

/// `tprt_mlir_gemm_shared_a<N>_<suffix>` for N = 2..kMaxSharedAGemms
/// (i32 trans_a, i32 trans_b, A, B_0..B_N-1, C_0..C_N-1): N products that
/// share A, one batched call (tp-group-gemms).
inline constexpr llvm::StringLiteral kGemmSharedA = "gemm_shared_a";
inline constexpr int kMaxSharedAGemms = 4;

/// `tprt_mlir_gemm_epilogue_<suffix>` (i32 trans_a, i32 trans_b, i32
/// activation, A, B, addend, bias, C): C = act(op(A) op(B) + addend + bias),
/// a `memref<0xT>` for an absent addend or bias (tp-gemm-epilogues).
inline constexpr llvm::StringLiteral kGemmEpilogue = "gemm_epilogue";

/// `tprt_mlir_gemm_grouped_<suffix>` (i32 trans_b, A [R, K], B [G, K, N]
/// or [G, N, K], rows [G] i64, C [R, N]): a mixture of experts' routed
/// product, the rows of A in groups of rows[g], group g times op(B[g])
/// (tp-route-experts).
inline constexpr llvm::StringLiteral kGemmGrouped = "gemm_grouped";

/// `tprt_mlir_slice_<suffix>` (i64 dim, i64 axes_mask, in, out): copies
/// this device's block of `in` along `dim`.
inline constexpr llvm::StringLiteral kSlice = "slice";

/// `tprt_mlir_axis_index(i64 axes_mask) -> i64`.
inline constexpr llvm::StringLiteral kAxisIndex = "tprt_mlir_axis_index";

/// The suffix of the per-element-type entry points (`f32`, `bf16`, ...), or
/// nullopt for element types the runtime cannot communicate.
std::optional<std::string> getElementSuffix(Type elementType);

/// `tprt_mlir_<collective>_<suffix>`, e.g. `tprt_mlir_all_reduce_bf16`.
std::string getCollectiveSymbol(llvm::StringRef collective,
                                llvm::StringRef suffix);

/// The private declaration of the runtime function `name` in `module`
/// (added at the module's end on first use, else the existing one).
func::FuncOp getOrDeclare(ModuleOp module, llvm::StringRef name,
                          TypeRange inputs, TypeRange results = {});

/// The entry point a compiled model exports (docs/model-abi.md).
inline constexpr llvm::StringLiteral kModelEntry = "tp_model_run";
/// The string a compiled model exports: the model.json it was compiled
/// with, which tp-runner compares with the model.json it is given.
inline constexpr llvm::StringLiteral kModelJson = "tp_model_json";

} // namespace mlir::tp::runtime

#endif // TP_CONVERSION_RUNTIMESYMBOLS_H
