/*===- tprt_model.h - the runtime side of compiled models -------*- C -*-===*
 *
 * Compiled models (tp-opt --tp-lower-cpu) call these functions; a runner
 * binds the runtime to the model's mesh once with tprt_model_bind. Plain C.
 *
 * Tensors arrive as MLIR unranked memrefs lowered with the default calling
 * convention: a rank and a pointer to the ranked descriptor
 * { T *allocated, *aligned; int64_t offset, sizes[rank], strides[rank]; }.
 * Buffers must be contiguous (identity strides). Mesh axes are given as a
 * bit mask over the bound mesh's axes (bit i = axis i); a group over several
 * axes is linearised major-first in axis order.
 *
 * Any failure is fatal: the function prints
 *   tprt: <op> failed on rank R: <message>
 * and exits the process with status 1 (mpirun then ends every rank), since a
 * compiled step cannot continue with a wrong or missing value.
 *===----------------------------------------------------------------------===*/

#ifndef TPRT_TPRT_MODEL_H
#define TPRT_TPRT_MODEL_H

#include "tprt/tprt.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Binds the model entry points to `ctx` and a mesh of `mesh_rank` axes whose
 * sizes multiply to the context size (this device's mesh coordinates follow
 * from its rank, row-major). Call once before running a model; binding again
 * replaces the previous binding. */
TPRT_API tprt_status tprt_model_bind(tprt_context *ctx, int mesh_rank,
                                     const int64_t *mesh_shape);

/* This device's index in the group of the axes in `axes_mask`. */
TPRT_API int64_t tprt_mlir_axis_index(int64_t axes_mask);

/* Collectives on unranked memrefs, one entry point per element type
 * (f32, f16, bf16, f64, i64, i32). `kind`: 0 sum, 1 max, 2 min (the
 * tp dialect's ReductionKind). tprt_mlir_gemm_* computes the 2-D product
 * C = op(A) op(B) (op transposes when trans_x is non-zero) with tprt_gemm;
 * tprt_mlir_batched_gemm_* the batch of products of rank-3 row-major
 * buffers A [batch, M, K] ([batch, K, M] if trans_a), B [batch, K, N]
 * ([batch, N, K] if trans_b), C [batch, M, N] with
 * tprt_gemm_strided_batched (cuBLAS strided-batched on GPU backends: f16 and
 * bf16 accumulate in f32, f32 is plain FP32 unless TPRT_ALLOW_TF32=1). C is
 * overwritten. tprt_mlir_gemm_shared_aN_* (N = 2, 3, 4) computes the N
 * products C_i = op(A) op(B_i) of one A with tprt_gemm_shared_a (one
 * cuBLAS batched call over pointer arrays on GPU backends, reading A once):
 * the arguments are trans_a, trans_b, A, B_0..B_{N-1}, then C_0..C_{N-1}
 * (outputs last), all 2-D, every B_i of one shape and every C_i of one
 * shape. tprt_mlir_gemm_epilogue_* computes C = act(op(A) op(B) + addend
 * + bias) with tprt_gemm_epilogue (one cublasLtMatmul with a fused
 * epilogue on GPU backends): `activation` is a tprt_activation, A, B,
 * addend and C are 2-D and bias is 1-D (C's columns); an addend or bias
 * with no elements (e.g. a memref<0xT>, of any rank) means none.
 * tprt_mlir_gemm_grouped_* computes a mixture of experts' routed product
 * with tprt_gemm_grouped: C [R, N] from A [R, K], whose rows come in
 * groups of rows[g] (rows [G], i64, summing to at most R; the rows past
 * the sum are not written), group g times op(B[g]), B [G, K, N] or
 * [G, N, K] with trans_b. The integer variants fail (there is no integer product).
 * On GPU backends every buffer is device memory. */
#define TPRT_MODEL_COLLECTIVES(SUFFIX)                                         \
  TPRT_API void tprt_mlir_all_reduce_##SUFFIX(                                \
      int32_t kind, int64_t axes_mask, int64_t in_rank, void *in_desc,         \
      int64_t out_rank, void *out_desc);                                       \
  TPRT_API void tprt_mlir_all_gather_##SUFFIX(                                \
      int64_t dim, int64_t axes_mask, int64_t in_rank, void *in_desc,          \
      int64_t out_rank, void *out_desc);                                       \
  TPRT_API void tprt_mlir_reduce_scatter_##SUFFIX(                            \
      int32_t kind, int64_t dim, int64_t axes_mask, int64_t in_rank,           \
      void *in_desc, int64_t out_rank, void *out_desc);                        \
  TPRT_API void tprt_mlir_all_to_all_##SUFFIX(                                \
      int64_t split_dim, int64_t concat_dim, int64_t axes_mask,                \
      int64_t in_rank, void *in_desc, int64_t out_rank, void *out_desc);       \
  TPRT_API void tprt_mlir_slice_##SUFFIX(                                     \
      int64_t dim, int64_t axes_mask, int64_t in_rank, void *in_desc,          \
      int64_t out_rank, void *out_desc);                                       \
  TPRT_API void tprt_mlir_gemm_##SUFFIX(                                      \
      int32_t trans_a, int32_t trans_b, int64_t a_rank, void *a_desc,          \
      int64_t b_rank, void *b_desc, int64_t c_rank, void *c_desc);             \
  TPRT_API void tprt_mlir_batched_gemm_##SUFFIX(                              \
      int32_t trans_a, int32_t trans_b, int64_t a_rank, void *a_desc,          \
      int64_t b_rank, void *b_desc, int64_t c_rank, void *c_desc);             \
  TPRT_API void tprt_mlir_gemm_shared_a2_##SUFFIX(                            \
      int32_t trans_a, int32_t trans_b, int64_t a_rank, void *a_desc,          \
      int64_t b0_rank, void *b0_desc, int64_t b1_rank, void *b1_desc,          \
      int64_t c0_rank, void *c0_desc, int64_t c1_rank, void *c1_desc);         \
  TPRT_API void tprt_mlir_gemm_shared_a3_##SUFFIX(                            \
      int32_t trans_a, int32_t trans_b, int64_t a_rank, void *a_desc,          \
      int64_t b0_rank, void *b0_desc, int64_t b1_rank, void *b1_desc,          \
      int64_t b2_rank, void *b2_desc, int64_t c0_rank, void *c0_desc,          \
      int64_t c1_rank, void *c1_desc, int64_t c2_rank, void *c2_desc);         \
  TPRT_API void tprt_mlir_gemm_shared_a4_##SUFFIX(                            \
      int32_t trans_a, int32_t trans_b, int64_t a_rank, void *a_desc,          \
      int64_t b0_rank, void *b0_desc, int64_t b1_rank, void *b1_desc,          \
      int64_t b2_rank, void *b2_desc, int64_t b3_rank, void *b3_desc,          \
      int64_t c0_rank, void *c0_desc, int64_t c1_rank, void *c1_desc,          \
      int64_t c2_rank, void *c2_desc, int64_t c3_rank, void *c3_desc);      \
  TPRT_API void tprt_mlir_gemm_grouped_##SUFFIX(                              \
      int32_t trans_b, int64_t a_rank, void *a_desc, int64_t b_rank,           \
      void *b_desc, int64_t rows_rank, void *rows_desc, int64_t c_rank,        \
      void *c_desc);                                                           \
  TPRT_API void tprt_mlir_gemm_epilogue_##SUFFIX(                             \
      int32_t trans_a, int32_t trans_b, int32_t activation, int64_t a_rank,    \
      void *a_desc, int64_t b_rank, void *b_desc, int64_t addend_rank,         \
      void *addend_desc, int64_t bias_rank, void *bias_desc, int64_t c_rank,   \
      void *c_desc);

/* The mixed-precision GEMMs: tprt_mlir_[batched_]gemm_<ab>_<c> computes
 * the same product as tprt_mlir_[batched_]gemm_<ab> (same arguments, same
 * shapes) with A and B in <ab> and C in <c>, through tprt_gemm_mixed: the
 * products summed in f32 and C written in f32, unrounded. A 16-bit matmul
 * into an f32 accumulator (torch-mlir's bf16 exports) calls these. */
#define TPRT_MODEL_MIXED_GEMMS(AB, C)                                          \
  TPRT_API void tprt_mlir_gemm_##AB##_##C(                                    \
      int32_t trans_a, int32_t trans_b, int64_t a_rank, void *a_desc,          \
      int64_t b_rank, void *b_desc, int64_t c_rank, void *c_desc);             \
  TPRT_API void tprt_mlir_batched_gemm_##AB##_##C(                            \
      int32_t trans_a, int32_t trans_b, int64_t a_rank, void *a_desc,          \
      int64_t b_rank, void *b_desc, int64_t c_rank, void *c_desc);

TPRT_MODEL_MIXED_GEMMS(bf16, f32)
TPRT_MODEL_MIXED_GEMMS(f16, f32)

#undef TPRT_MODEL_MIXED_GEMMS

TPRT_MODEL_COLLECTIVES(f32)
TPRT_MODEL_COLLECTIVES(f16)
TPRT_MODEL_COLLECTIVES(bf16)
TPRT_MODEL_COLLECTIVES(f64)
TPRT_MODEL_COLLECTIVES(i64)
TPRT_MODEL_COLLECTIVES(i32)

#undef TPRT_MODEL_COLLECTIVES

#ifdef __cplusplus
}
#endif

#endif /* TPRT_TPRT_MODEL_H */
