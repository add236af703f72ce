//===- ModelAbi.cpp - the runtime side of compiled models ------*- C++ -*-===//
//
// The entry points that code compiled by `tp-opt --tp-lower-cpu` calls for
// tp collectives and matrix products (tprt/tprt_model.h): they read MLIR
// memref descriptors, find the group of the mesh axes, and call the tprt
// collectives and GEMMs of the context bound by tprt_model_bind. Failures
// are fatal (see the header). On GPU backends the buffers are device memory:
// nothing here dereferences them (slices are copy2D calls of the backend).
//
//===----------------------------------------------------------------------===//

#include "tprt/tprt_model.h"

#include "common/Context.h"
#include "common/DType.h"

#include <algorithm>
#include <cstdint>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <utility>
#include <vector>

namespace {

struct Binding {
  tprt_context *ctx = nullptr;
  std::vector<int64_t> meshShape;
  int rank = 0;
  std::map<int64_t, tprt_group *> groups; // by axes mask
};

Binding &binding() {
  static Binding b;
  return b;
}

[[noreturn]] void fail(const char *op, const char *message) {
  std::fprintf(stderr, "tprt: %s failed on rank %d: %s\n", op, binding().rank,
               message);
  std::fflush(stderr);
  std::exit(1);
}

void check(tprt_status status, const char *op) {
  if (status != TPRT_OK)
    fail(op, tprt_last_error());
}

tprt_group *groupFor(int64_t axesMask, const char *op) {
  Binding &b = binding();
  if (!b.ctx)
    fail(op, "the runtime is not bound to a mesh (call tprt_model_bind)");
  auto it = b.groups.find(axesMask);
  if (it != b.groups.end())
    return it->second;
  std::vector<int> axes;
  for (int i = 0; i < int(b.meshShape.size()); ++i)
    if (axesMask & (int64_t(1) << i))
      axes.push_back(i);
  if (axes.size() != size_t(__builtin_popcountll(uint64_t(axesMask))))
    fail(op, "axes mask names an axis the bound mesh does not have");
  tprt_group *group = nullptr;
  check(tprt_group_for_axes(b.ctx, int(b.meshShape.size()),
                            b.meshShape.data(), int(axes.size()), axes.data(),
                            &group),
        op);
  b.groups[axesMask] = group;
  return group;
}

/// A contiguous tensor read off an MLIR ranked memref descriptor (no heap:
/// a step of a compiled model allocates nothing).
struct Tensor {
  char *data = nullptr;
  std::array<int64_t, TPRT_MAX_RANK> shape{};
};

Tensor readDescriptor(int64_t rank, void *desc, size_t elementBytes,
                      const char *op) {
  struct Header {
    char *allocated;
    char *aligned;
    int64_t offset;
  };
  auto *header = static_cast<Header *>(desc);
  auto *sizes = reinterpret_cast<int64_t *>(header + 1);
  int64_t *strides = sizes + rank;
  if (rank < 0 || rank > TPRT_MAX_RANK)
    fail(op, "a tensor has more dimensions than TPRT_MAX_RANK");
  Tensor t;
  t.data = header->aligned + header->offset * int64_t(elementBytes);
  std::copy(sizes, sizes + rank, t.shape.begin());
  int64_t expected = 1;
  for (int64_t d = rank - 1; d >= 0; --d) {
    if (sizes[d] != 1 && strides[d] != expected)
      fail(op, "a tensor buffer is not contiguous");
    expected *= sizes[d];
  }
  return t;
}

tprt_reduction reduction(int32_t kind) {
  return kind == 1 ? TPRT_MAX : kind == 2 ? TPRT_MIN : TPRT_SUM;
}

size_t bytesOf(tprt_dtype dtype) { return tprt::dtypeSize(dtype); }

void allReduce(tprt_dtype dtype, int32_t kind, int64_t axes, int64_t inRank,
               void *inDesc, int64_t outRank, void *outDesc) {
  const char *op = "all_reduce";
  Tensor in = readDescriptor(inRank, inDesc, bytesOf(dtype), op);
  Tensor out = readDescriptor(outRank, outDesc, bytesOf(dtype), op);
  check(tprt_all_reduce(binding().ctx, groupFor(axes, op), dtype,
                        reduction(kind), in.data, out.data, int(inRank),
                        in.shape.data(), nullptr),
        op);
}

void allGather(tprt_dtype dtype, int64_t dim, int64_t axes, int64_t inRank,
               void *inDesc, int64_t outRank, void *outDesc) {
  const char *op = "all_gather";
  Tensor in = readDescriptor(inRank, inDesc, bytesOf(dtype), op);
  Tensor out = readDescriptor(outRank, outDesc, bytesOf(dtype), op);
  check(tprt_all_gather(binding().ctx, groupFor(axes, op), dtype, in.data,
                        out.data, int(inRank), in.shape.data(), int(dim),
                        nullptr),
        op);
}

void reduceScatter(tprt_dtype dtype, int32_t kind, int64_t dim, int64_t axes,
                   int64_t inRank, void *inDesc, int64_t outRank,
                   void *outDesc) {
  const char *op = "reduce_scatter";
  Tensor in = readDescriptor(inRank, inDesc, bytesOf(dtype), op);
  Tensor out = readDescriptor(outRank, outDesc, bytesOf(dtype), op);
  check(tprt_reduce_scatter(binding().ctx, groupFor(axes, op), dtype,
                            reduction(kind), in.data, out.data, int(inRank),
                            in.shape.data(), int(dim), nullptr),
        op);
}

void allToAll(tprt_dtype dtype, int64_t split, int64_t concat, int64_t axes,
              int64_t inRank, void *inDesc, int64_t outRank, void *outDesc) {
  const char *op = "all_to_all";
  Tensor in = readDescriptor(inRank, inDesc, bytesOf(dtype), op);
  Tensor out = readDescriptor(outRank, outDesc, bytesOf(dtype), op);
  check(tprt_all_to_all(binding().ctx, groupFor(axes, op), dtype, in.data,
                        out.data, int(inRank), in.shape.data(), int(split),
                        int(concat), nullptr),
        op);
}

/// This device's block of dimension `dim`: a local copy.
void slice(tprt_dtype dtype, int64_t dim, int64_t axes, int64_t inRank,
           void *inDesc, int64_t outRank, void *outDesc) {
  const char *op = "slice";
  size_t bytes = bytesOf(dtype);
  Tensor in = readDescriptor(inRank, inDesc, bytes, op);
  Tensor out = readDescriptor(outRank, outDesc, bytes, op);
  int index = 0;
  check(tprt_group_rank(groupFor(axes, op), &index), op);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d)
    outer *= in.shape[d];
  for (int64_t d = dim + 1; d < inRank; ++d)
    inner *= in.shape[d];
  int64_t whole = in.shape[dim], block = out.shape[dim];
  if (outer == 0 || block * inner == 0)
    return;
  // outer rows of block x inner elements, whole x inner apart in `in`.
  size_t rowBytes = size_t(block * inner) * bytes;
  check(binding().ctx->backend->copy2D(
            out.data, rowBytes, in.data + index * block * inner * bytes,
            size_t(whole * inner) * bytes, rowBytes, size_t(outer)),
        op);
}

/// C = op(A) op(B) on 2-D contiguous buffers, A and B in `abType`, C in
/// `cType` (equal, or f16/bf16 into f32: tprt_gemm_mixed).
void gemm(tprt_dtype abType, tprt_dtype cType, int32_t transA, int32_t transB,
          int64_t aRank, void *aDesc, int64_t bRank, void *bDesc,
          int64_t cRank, void *cDesc) {
  const char *op = "gemm";
  if (aRank != 2 || bRank != 2 || cRank != 2)
    fail(op, "operands must be 2-D");
  Tensor a = readDescriptor(aRank, aDesc, bytesOf(abType), op);
  Tensor b = readDescriptor(bRank, bDesc, bytesOf(abType), op);
  Tensor c = readDescriptor(cRank, cDesc, bytesOf(cType), op);
  int64_t m = c.shape[0], n = c.shape[1];
  int64_t k = transA ? a.shape[0] : a.shape[1];
  if ((transA ? a.shape[1] : a.shape[0]) != m ||
      (transB ? b.shape[1] : b.shape[0]) != k ||
      (transB ? b.shape[0] : b.shape[1]) != n)
    fail(op, "the operand shapes do not match C = op(A) op(B)");
  if (!binding().ctx)
    fail(op, "the runtime is not bound (call tprt_model_bind)");
  if (abType == cType)
    check(tprt_gemm(binding().ctx, abType, transA, transB, m, n, k, 1.0f,
                    a.data, a.shape[1], b.data, b.shape[1], 0.0f, c.data, n,
                    nullptr),
          op);
  else
    check(tprt_gemm_mixed(binding().ctx, abType, cType, transA, transB, m, n,
                          k, 1.0f, a.data, a.shape[1], 0, b.data, b.shape[1],
                          0, 0.0f, c.data, n, 0, 1, nullptr),
          op);
}

/// C = act(op(A) op(B) + addend + bias) on contiguous buffers: A, B,
/// addend and C 2-D, bias 1-D; an addend or bias with no elements is none.
void gemmEpilogue(tprt_dtype dtype, int32_t transA, int32_t transB,
                  int32_t activation, int64_t aRank, void *aDesc,
                  int64_t bRank, void *bDesc, int64_t addendRank,
                  void *addendDesc, int64_t biasRank, void *biasDesc,
                  int64_t cRank, void *cDesc) {
  const char *op = "gemm_epilogue";
  size_t bytes = bytesOf(dtype);
  if (aRank != 2 || bRank != 2 || cRank != 2)
    fail(op, "A, B and C must be 2-D");
  Tensor a = readDescriptor(aRank, aDesc, bytes, op);
  Tensor b = readDescriptor(bRank, bDesc, bytes, op);
  Tensor c = readDescriptor(cRank, cDesc, bytes, op);
  Tensor addend = readDescriptor(addendRank, addendDesc, bytes, op);
  Tensor bias = readDescriptor(biasRank, biasDesc, bytes, op);
  auto elements = [](const Tensor &t, int64_t rank) {
    int64_t count = 1;
    for (int64_t d = 0; d < rank; ++d)
      count *= t.shape[size_t(d)];
    return count;
  };
  int64_t m = c.shape[0], n = c.shape[1];
  int64_t k = transA ? a.shape[0] : a.shape[1];
  if ((transA ? a.shape[1] : a.shape[0]) != m ||
      (transB ? b.shape[1] : b.shape[0]) != k ||
      (transB ? b.shape[0] : b.shape[1]) != n)
    fail(op, "the operand shapes do not match C = op(A) op(B)");
  bool hasAddend = elements(addend, addendRank) != 0;
  bool hasBias = elements(bias, biasRank) != 0;
  if (hasAddend &&
      (addendRank != 2 || addend.shape[0] != m || addend.shape[1] != n))
    fail(op, "the addend is not a matrix of C's shape");
  if (hasBias && (biasRank != 1 || bias.shape[0] != n))
    fail(op, "the bias is not a vector of C's columns");
  if (!binding().ctx)
    fail(op, "the runtime is not bound (call tprt_model_bind)");
  check(tprt_gemm_epilogue(binding().ctx, dtype, transA, transB, m, n, k,
                           a.data, a.shape[1], b.data, b.shape[1],
                           hasAddend ? addend.data : nullptr, n,
                           hasBias ? bias.data : nullptr, activation, c.data,
                           n, nullptr),
        op);
}

/// C[i] = op(A[i]) op(B[i]) on rank-3 contiguous buffers, A and B in
/// `abType`, C in `cType` (equal, or f16/bf16 into f32).
void batchedGemm(tprt_dtype abType, tprt_dtype cType, int32_t transA,
                 int32_t transB, int64_t aRank, void *aDesc, int64_t bRank,
                 void *bDesc, int64_t cRank, void *cDesc) {
  const char *op = "batched_gemm";
  if (aRank != 3 || bRank != 3 || cRank != 3)
    fail(op, "operands must be 3-D [batch, rows, columns]");
  Tensor a = readDescriptor(aRank, aDesc, bytesOf(abType), op);
  Tensor b = readDescriptor(bRank, bDesc, bytesOf(abType), op);
  Tensor c = readDescriptor(cRank, cDesc, bytesOf(cType), op);
  int64_t batch = c.shape[0], m = c.shape[1], n = c.shape[2];
  int64_t k = transA ? a.shape[1] : a.shape[2];
  if (a.shape[0] != batch || b.shape[0] != batch)
    fail(op, "the operands have different batch sizes");
  if ((transA ? a.shape[2] : a.shape[1]) != m ||
      (transB ? b.shape[2] : b.shape[1]) != k ||
      (transB ? b.shape[1] : b.shape[2]) != n)
    fail(op, "the operand shapes do not match C = op(A) op(B)");
  if (!binding().ctx)
    fail(op, "the runtime is not bound (call tprt_model_bind)");
  if (abType == cType)
    check(tprt_gemm_strided_batched(
              binding().ctx, abType, transA, transB, m, n, k, 1.0f, a.data,
              a.shape[2], a.shape[1] * a.shape[2], b.data, b.shape[2],
              b.shape[1] * b.shape[2], 0.0f, c.data, n, m * n, batch, nullptr),
          op);
  else
    check(tprt_gemm_mixed(binding().ctx, abType, cType, transA, transB, m, n,
                          k, 1.0f, a.data, a.shape[2], a.shape[1] * a.shape[2],
                          b.data, b.shape[2], b.shape[1] * b.shape[2], 0.0f,
                          c.data, n, m * n, batch, nullptr),
          op);
}

/// The routed product of a mixture of experts: C [R, N] = the rows of A
/// [R, K] in groups of rows[g] rows, group g times op(B[g]) (B [G, K, N], or
/// [G, N, K] with trans_b), rows [G] i64 (a kernel's output: device memory
/// on GPU backends), one tprt_gemm_grouped call.
void groupedGemm(tprt_dtype dtype, int32_t transB, int64_t aRank, void *aDesc,
                 int64_t bRank, void *bDesc, int64_t rowsRank, void *rowsDesc,
                 int64_t cRank, void *cDesc) {
  const char *op = "gemm_grouped";
  size_t bytes = bytesOf(dtype);
  if (aRank != 2 || bRank != 3 || rowsRank != 1 || cRank != 2)
    fail(op, "A and C must be 2-D, B 3-D [groups, rows, columns] and the "
             "row counts 1-D");
  Tensor a = readDescriptor(aRank, aDesc, bytes, op);
  Tensor b = readDescriptor(bRank, bDesc, bytes, op);
  Tensor rows = readDescriptor(rowsRank, rowsDesc, sizeof(int64_t), op);
  Tensor c = readDescriptor(cRank, cDesc, bytes, op);
  int64_t groups = b.shape[0], m = c.shape[0], n = c.shape[1];
  int64_t k = a.shape[1];
  if (rows.shape[0] != groups)
    fail(op, "the row counts are not one per group of B");
  if (a.shape[0] != m || (transB ? b.shape[2] : b.shape[1]) != k ||
      (transB ? b.shape[1] : b.shape[2]) != n)
    fail(op, "the operand shapes do not match C = A_g op(B_g)");
  if (groups > INT32_MAX)
    fail(op, "more groups than an int holds");
  if (!binding().ctx)
    fail(op, "the runtime is not bound (call tprt_model_bind)");
  check(tprt_gemm_grouped(binding().ctx, dtype, transB, int(groups),
                          reinterpret_cast<const int64_t *>(rows.data), m, n,
                          k, 1.0f, a.data, k, b.data, b.shape[2],
                          b.shape[1] * b.shape[2], 0.0f, c.data, n, nullptr),
        op);
}

/// C_i = op(A) op(B_i) for i < count on 2-D contiguous buffers, one
/// tprt_gemm_shared_a call. `operands` holds the (rank, descriptor) pairs
/// of B_0..B_{count-1}, then of C_0..C_{count-1}.
void sharedAGemm(tprt_dtype dtype, const char *op, int32_t transA,
                 int32_t transB, int64_t aRank, void *aDesc, int count,
                 const std::pair<int64_t, void *> *operands) {
  size_t bytes = bytesOf(dtype);
  if (aRank != 2)
    fail(op, "operands must be 2-D");
  for (int i = 0; i < 2 * count; ++i)
    if (operands[i].first != 2)
      fail(op, "operands must be 2-D");
  Tensor a = readDescriptor(aRank, aDesc, bytes, op);
  constexpr int kMaxCount = 4; // gemm_shared_a2 .. gemm_shared_a4
  std::array<Tensor, kMaxCount> bs, cs;
  for (int i = 0; i < count; ++i)
    bs[size_t(i)] = readDescriptor(2, operands[i].second, bytes, op);
  for (int i = 0; i < count; ++i)
    cs[size_t(i)] = readDescriptor(2, operands[count + i].second, bytes, op);
  for (int i = 1; i < count; ++i) {
    if (bs[size_t(i)].shape != bs[0].shape)
      fail(op, "the B operands have different shapes");
    if (cs[size_t(i)].shape != cs[0].shape)
      fail(op, "the C operands have different shapes");
  }
  const Tensor &b = bs[0];
  int64_t m = cs[0].shape[0], n = cs[0].shape[1];
  int64_t k = transA ? a.shape[0] : a.shape[1];
  if ((transA ? a.shape[1] : a.shape[0]) != m ||
      (transB ? b.shape[1] : b.shape[0]) != k ||
      (transB ? b.shape[0] : b.shape[1]) != n)
    fail(op, "the operand shapes do not match C_i = op(A) op(B_i)");
  if (!binding().ctx)
    fail(op, "the runtime is not bound (call tprt_model_bind)");
  std::array<const void *, kMaxCount> bPointers{};
  std::array<void *, kMaxCount> cPointers{};
  for (int i = 0; i < count; ++i) {
    bPointers[size_t(i)] = bs[size_t(i)].data;
    cPointers[size_t(i)] = cs[size_t(i)].data;
  }
  check(tprt_gemm_shared_a(binding().ctx, dtype, transA, transB, m, n, k, 1.0f,
                           a.data, a.shape[1], bPointers.data(), b.shape[1],
                           0.0f, cPointers.data(), n, count, nullptr),
        op);
}

} // namespace

extern "C" {

tprt_status tprt_model_bind(tprt_context *ctx, int mesh_rank,
                            const int64_t *mesh_shape) {
  Binding &b = binding();
  for (auto &[mask, group] : b.groups)
    tprt_group_destroy(group);
  b.groups.clear();
  b.ctx = ctx;
  b.meshShape.assign(mesh_shape, mesh_shape + mesh_rank);
  return tprt_rank(ctx, &b.rank);
}

int64_t tprt_mlir_axis_index(int64_t axes_mask) {
  int index = 0;
  check(tprt_group_rank(groupFor(axes_mask, "axis_index"), &index),
        "axis_index");
  return index;
}

#define TPRT_DEFINE_MODEL_COLLECTIVES(SUFFIX, DTYPE)                           \
  void tprt_mlir_all_reduce_##SUFFIX(int32_t kind, int64_t axes,              \
                                     int64_t inRank, void *inDesc,            \
                                     int64_t outRank, void *outDesc) {        \
    allReduce(DTYPE, kind, axes, inRank, inDesc, outRank, outDesc);           \
  }                                                                            \
  void tprt_mlir_all_gather_##SUFFIX(int64_t dim, int64_t axes,               \
                                     int64_t inRank, void *inDesc,            \
                                     int64_t outRank, void *outDesc) {        \
    allGather(DTYPE, dim, axes, inRank, inDesc, outRank, outDesc);            \
  }                                                                            \
  void tprt_mlir_reduce_scatter_##SUFFIX(int32_t kind, int64_t dim,           \
                                         int64_t axes, int64_t inRank,        \
                                         void *inDesc, int64_t outRank,       \
                                         void *outDesc) {                     \
    reduceScatter(DTYPE, kind, dim, axes, inRank, inDesc, outRank, outDesc);  \
  }                                                                            \
  void tprt_mlir_all_to_all_##SUFFIX(int64_t split, int64_t concat,           \
                                     int64_t axes, int64_t inRank,            \
                                     void *inDesc, int64_t outRank,           \
                                     void *outDesc) {                         \
    allToAll(DTYPE, split, concat, axes, inRank, inDesc, outRank, outDesc);   \
  }                                                                            \
  void tprt_mlir_slice_##SUFFIX(int64_t dim, int64_t axes, int64_t inRank,    \
                                void *inDesc, int64_t outRank,                \
                                void *outDesc) {                              \
    slice(DTYPE, dim, axes, inRank, inDesc, outRank, outDesc);                \
  }                                                                            \
  void tprt_mlir_gemm_##SUFFIX(int32_t transA, int32_t transB, int64_t aRank, \
                               void *aDesc, int64_t bRank, void *bDesc,       \
                               int64_t cRank, void *cDesc) {                  \
    gemm(DTYPE, DTYPE, transA, transB, aRank, aDesc, bRank, bDesc, cRank,      \
         cDesc);                                                               \
  }                                                                            \
  void tprt_mlir_batched_gemm_##SUFFIX(                                       \
      int32_t transA, int32_t transB, int64_t aRank, void *aDesc,              \
      int64_t bRank, void *bDesc, int64_t cRank, void *cDesc) {                \
    batchedGemm(DTYPE, DTYPE, transA, transB, aRank, aDesc, bRank, bDesc,      \
                cRank, cDesc);                                                 \
  }                                                                            \
  void tprt_mlir_gemm_shared_a2_##SUFFIX(                                     \
      int32_t transA, int32_t transB, int64_t aRank, void *aDesc,              \
      int64_t b0Rank, void *b0Desc, int64_t b1Rank, void *b1Desc,              \
      int64_t c0Rank, void *c0Desc, int64_t c1Rank, void *c1Desc) {            \
    const std::pair<int64_t, void *> operands[] = {                            \
        {b0Rank, b0Desc}, {b1Rank, b1Desc}, {c0Rank, c0Desc},                  \
        {c1Rank, c1Desc}};                                                     \
    sharedAGemm(DTYPE, "gemm_shared_a2", transA, transB, aRank, aDesc, 2,      \
                operands);                                                     \
  }                                                                            \
  void tprt_mlir_gemm_shared_a3_##SUFFIX(                                     \
      int32_t transA, int32_t transB, int64_t aRank, void *aDesc,              \
      int64_t b0Rank, void *b0Desc, int64_t b1Rank, void *b1Desc,              \
      int64_t b2Rank, void *b2Desc, int64_t c0Rank, void *c0Desc,              \
      int64_t c1Rank, void *c1Desc, int64_t c2Rank, void *c2Desc) {            \
    const std::pair<int64_t, void *> operands[] = {                            \
        {b0Rank, b0Desc}, {b1Rank, b1Desc}, {b2Rank, b2Desc},                  \
        {c0Rank, c0Desc}, {c1Rank, c1Desc}, {c2Rank, c2Desc}};                 \
    sharedAGemm(DTYPE, "gemm_shared_a3", transA, transB, aRank, aDesc, 3,      \
                operands);                                                     \
  }                                                                            \
  void tprt_mlir_gemm_shared_a4_##SUFFIX(                                     \
      int32_t transA, int32_t transB, int64_t aRank, void *aDesc,              \
      int64_t b0Rank, void *b0Desc, int64_t b1Rank, void *b1Desc,              \
      int64_t b2Rank, void *b2Desc, int64_t b3Rank, void *b3Desc,              \
      int64_t c0Rank, void *c0Desc, int64_t c1Rank, void *c1Desc,              \
      int64_t c2Rank, void *c2Desc, int64_t c3Rank, void *c3Desc) {            \
    const std::pair<int64_t, void *> operands[] = {                            \
        {b0Rank, b0Desc}, {b1Rank, b1Desc}, {b2Rank, b2Desc},                  \
        {b3Rank, b3Desc}, {c0Rank, c0Desc}, {c1Rank, c1Desc},                  \
        {c2Rank, c2Desc}, {c3Rank, c3Desc}};                                   \
    sharedAGemm(DTYPE, "gemm_shared_a4", transA, transB, aRank, aDesc, 4,      \
                operands);                                                     \
  }                                                                            \
  void tprt_mlir_gemm_grouped_##SUFFIX(                                       \
      int32_t transB, int64_t aRank, void *aDesc, int64_t bRank, void *bDesc,  \
      int64_t rowsRank, void *rowsDesc, int64_t cRank, void *cDesc) {          \
    groupedGemm(DTYPE, transB, aRank, aDesc, bRank, bDesc, rowsRank,           \
                rowsDesc, cRank, cDesc);                                       \
  }                                                                            \
  void tprt_mlir_gemm_epilogue_##SUFFIX(                                      \
      int32_t transA, int32_t transB, int32_t activation, int64_t aRank,       \
      void *aDesc, int64_t bRank, void *bDesc, int64_t addendRank,             \
      void *addendDesc, int64_t biasRank, void *biasDesc, int64_t cRank,       \
      void *cDesc) {                                                           \
    gemmEpilogue(DTYPE, transA, transB, activation, aRank, aDesc, bRank,       \
                 bDesc, addendRank, addendDesc, biasRank, biasDesc, cRank,     \
                 cDesc);                                                       \
  }

/// The mixed-precision GEMMs: A and B in AB, C in C (f32).
#define TPRT_DEFINE_MODEL_MIXED_GEMMS(AB, C, AB_DTYPE, C_DTYPE)                 \
  void tprt_mlir_gemm_##AB##_##C(int32_t transA, int32_t transB,              \
                                 int64_t aRank, void *aDesc, int64_t bRank,   \
                                 void *bDesc, int64_t cRank, void *cDesc) {   \
    gemm(AB_DTYPE, C_DTYPE, transA, transB, aRank, aDesc, bRank, bDesc,        \
         cRank, cDesc);                                                        \
  }                                                                            \
  void tprt_mlir_batched_gemm_##AB##_##C(                                     \
      int32_t transA, int32_t transB, int64_t aRank, void *aDesc,              \
      int64_t bRank, void *bDesc, int64_t cRank, void *cDesc) {                \
    batchedGemm(AB_DTYPE, C_DTYPE, transA, transB, aRank, aDesc, bRank, bDesc, \
                cRank, cDesc);                                                 \
  }

TPRT_DEFINE_MODEL_MIXED_GEMMS(bf16, f32, TPRT_BF16, TPRT_F32)
TPRT_DEFINE_MODEL_MIXED_GEMMS(f16, f32, TPRT_F16, TPRT_F32)

TPRT_DEFINE_MODEL_COLLECTIVES(f32, TPRT_F32)
TPRT_DEFINE_MODEL_COLLECTIVES(f16, TPRT_F16)
TPRT_DEFINE_MODEL_COLLECTIVES(bf16, TPRT_BF16)
TPRT_DEFINE_MODEL_COLLECTIVES(f64, TPRT_F64)
TPRT_DEFINE_MODEL_COLLECTIVES(i64, TPRT_I64)
TPRT_DEFINE_MODEL_COLLECTIVES(i32, TPRT_I32)

} // extern "C"
