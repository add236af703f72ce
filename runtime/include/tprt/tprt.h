/* tprt.h - the C ABI of libtprt, the runtime of tensor-parallel programs.
 *
 * Compiled tp-opt programs call these functions for their collectives and
 * matrix products. The header is plain C99; every symbol starts with tprt_ or
 * TPRT_. Handles are opaque. Every function returns a tprt_status and writes
 * its results through the pointer arguments that come last; on failure the
 * outputs are left untouched and tprt_last_error() says what went wrong.
 *
 * Tensors are contiguous row-major buffers described by a rank and an int64_t
 * shape (the shape may be NULL when the rank is 0). Collectives run over a
 * group of ranks; every member of the group must make the same call (same
 * kind, dtype, reduction, shape and dimensions) in the same order. See
 * docs/runtime.md for the numbering of meshes and groups, ownership rules and
 * the mismatch check.
 */
#ifndef TPRT_TPRT_H
#define TPRT_TPRT_H

#include <stddef.h>
#include <stdint.h>

/* Exports a declaration from libtprt.so, which is built with hidden
 * visibility; empty for users of the header. */
#if defined(TPRT_BUILDING_LIBRARY)
#define TPRT_API __attribute__((visibility("default")))
#else
#define TPRT_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Incremented whenever a declaration below changes incompatibly. */
#define TPRT_ABI_VERSION 1

/* The largest tensor rank a collective accepts. */
#define TPRT_MAX_RANK 16

typedef enum tprt_status {
  TPRT_OK = 0,
  TPRT_ERROR_INVALID_ARGUMENT = 1, /* a null pointer, a bad dimension, ... */
  TPRT_ERROR_BACKEND = 2,          /* the communication library failed */
  TPRT_ERROR_UNAVAILABLE = 3,      /* backend not built into this library */
  TPRT_ERROR_MISMATCH = 4,         /* group members made different calls */
  TPRT_ERROR_OUT_OF_MEMORY = 5,
  TPRT_ERROR_TIMEOUT = 6, /* reserved for backends with watchdogs */
  TPRT_ERROR_INTERNAL = 7 /* a bug in libtprt */
} tprt_status;

typedef enum tprt_dtype {
  TPRT_F32 = 0,
  TPRT_F16 = 1,
  TPRT_BF16 = 2,
  TPRT_F64 = 3,
  TPRT_I32 = 4,
  TPRT_I64 = 5,
  /* Not a dtype: keeps the enum 32 bits wide, so that any int a caller
     passes is a value of the type, which the library rejects
     (TPRT_ERROR_INVALID_ARGUMENT) rather than undefined behaviour. */
  TPRT_DTYPE_FORCE_32BIT = 0x7fffffff
} tprt_dtype;

typedef enum tprt_reduction {
  TPRT_SUM = 0,
  TPRT_MAX = 1,
  TPRT_MIN = 2,
  TPRT_REDUCTION_FORCE_32BIT = 0x7fffffff /* not a reduction: as above */
} tprt_reduction;

/* Kinds of collectives, the indices of the per-kind arrays of tprt_stats. */
typedef enum tprt_collective {
  TPRT_ALL_REDUCE = 0,
  TPRT_ALL_GATHER = 1,
  TPRT_REDUCE_SCATTER = 2,
  TPRT_ALL_TO_ALL = 3,
  TPRT_NUM_COLLECTIVES = 4
} tprt_collective;

/* Counters of one context, updated by every successful call. */
typedef struct tprt_stats {
  /* Collectives completed, per tprt_collective. */
  uint64_t calls[TPRT_NUM_COLLECTIVES];
  /* Data size, the "size" of nccl-tests: the buffer of all_reduce, the
   * output of all_gather, the input of reduce_scatter and all_to_all. */
  uint64_t bytes[TPRT_NUM_COLLECTIVES];
  /* Bytes this rank sends with a bandwidth-optimal (ring) algorithm:
   * bytes x 2(n-1)/n for all_reduce, bytes x (n-1)/n for the others, n the
   * group size. bytes_sent / seconds is the bus bandwidth of nccl-tests. */
  uint64_t bytes_sent[TPRT_NUM_COLLECTIVES];
  /* Wall time spent inside the collective calls, mismatch check included. */
  double seconds[TPRT_NUM_COLLECTIVES];
  /* Mismatch checks (one small allgather each) and the time they took. */
  uint64_t checks;
  double check_seconds;
  /* tprt_gemm calls, their floating-point operations (2mnk) and time. */
  uint64_t gemm_calls;
  double gemm_flops;
  double gemm_seconds;
} tprt_stats;

typedef struct tprt_context tprt_context;
typedef struct tprt_group tprt_group;

/* The message of the most recent failed call on this thread ("" if none).
 * Valid until the next failing call on the same thread. Never NULL. */
TPRT_API const char *tprt_last_error(void);

/* The name of a status code, e.g. "TPRT_ERROR_MISMATCH". Never NULL. */
TPRT_API const char *tprt_status_name(tprt_status status);

/*---------------------------------------------------------------------------
 * Contexts
 *---------------------------------------------------------------------------*/

/* Creates a context on a backend: "mpi" (one rank per process, started by
 * mpirun, or alone as a singleton), "single" (one rank, in process, for
 * tests), "nccl" (alias "cuda": one rank per GPU, NCCL and cuBLAS, from
 * libtprt_cuda.so; started by mpirun or with torchrun's RANK, WORLD_SIZE,
 * MASTER_ADDR and MASTER_PORT) or "cuda-shared" (a test mode: every rank of
 * an mpirun on one GPU, collectives staged through host memory over MPI;
 * also "nccl" with TPRT_SHARED_GPU=1). The GPU backends fail with
 * TPRT_ERROR_UNAVAILABLE when libtprt_cuda.so or the NVIDIA driver is
 * missing. A NULL or empty backend reads the environment variable
 * TPRT_BACKEND.
 * The mpi backend initialises MPI unless the program already did, and
 * finalises it with the last context it initialised it for. */
TPRT_API tprt_status tprt_init(const char *backend, tprt_context **out);

/* Destroys the context and every group created on it. NULL is accepted. */
TPRT_API tprt_status tprt_finalize(tprt_context *ctx);

TPRT_API tprt_status tprt_rank(tprt_context *ctx, int *out);
TPRT_API tprt_status tprt_size(tprt_context *ctx, int *out);

/* The name of the context's backend ("mpi", "single", "nccl",
 * "cuda-shared"). */
TPRT_API tprt_status tprt_backend_name(tprt_context *ctx, const char **out);

/* Topology: a node is the set of ranks on one host (host names are
 * exchanged at init; TPRT_RANKS_PER_NODE=K makes ranks 0..K-1 node 0, K..2K-1
 * node 1, ... for tests). Nodes are numbered by their lowest rank; the local
 * rank is the position among the ranks of the node. */
TPRT_API tprt_status tprt_local_rank(tprt_context *ctx, int *out);
TPRT_API tprt_status tprt_node_count(tprt_context *ctx, int *out);
TPRT_API tprt_status tprt_node_of(tprt_context *ctx, int world_rank, int *out);

/*---------------------------------------------------------------------------
 * Groups
 *
 * A group is an ordered list of ranks; a rank's position in it is its group
 * index, and collectives concatenate and split in group-index order.
 * Creating a group is collective over its members only. Groups are cached by
 * their rank list: creating the same group again returns the same handle,
 * cheaply. Each create must be matched by one tprt_group_destroy; the
 * context keeps the underlying communicator until tprt_finalize.
 *---------------------------------------------------------------------------*/

/* The group of all ranks, in rank order. Owned by the context: do not
 * destroy it. */
TPRT_API tprt_status tprt_group_world(tprt_context *ctx, tprt_group **out);

/* The group of the given world ranks, in the given order. The calling rank
 * must be one of them; no rank may appear twice. */
TPRT_API tprt_status tprt_group_create(tprt_context *ctx,
                                       int num_ranks_in_group, const int *ranks,
                                       tprt_group **out);

/* The group of the devices that differ from the calling one only in the
 * given axes of a mesh of mesh_rank dimensions. Devices are numbered
 * row-major over mesh_shape (last axis fastest), whose product must be the
 * context size. The group index is linearised over the listed axes, the
 * first listed axis most significant. Example: mesh [dp=2, tp=4], axes {1}:
 * rank 5 = (1, 1) is in group {4, 5, 6, 7} at index 1; axes {0}: in group
 * {1, 5} at index 1. No axes gives the group of the calling rank alone. */
TPRT_API tprt_status tprt_group_for_axes(tprt_context *ctx, int mesh_rank,
                                         const int64_t *mesh_shape,
                                         int num_axes, const int *axes,
                                         tprt_group **out);

TPRT_API tprt_status tprt_group_rank(tprt_group *group, int *out);
TPRT_API tprt_status tprt_group_size(tprt_group *group, int *out);

/* Releases one reference to a group from tprt_group_create or
 * tprt_group_for_axes. NULL and the world group are accepted (no-ops). */
TPRT_API tprt_status tprt_group_destroy(tprt_group *group);

/*---------------------------------------------------------------------------
 * Collectives
 *
 * `stream` is reserved: the CPU backends complete the operation before
 * returning; the GPU backends enqueue it on the rank's one compute stream
 * (whatever `stream` says) and return before it completes, so a host read
 * of the result needs tprt_memcpy or tprt_synchronize first. Buffers are
 * device memory on the GPU backends. `in` and `out` must not overlap,
 * except that all_reduce accepts in == out.
 *---------------------------------------------------------------------------*/

/* out = op over the group of every member's in; same shape in and out.
 * f16 and bf16 are reduced in f32 and rounded once to nearest-even. */
TPRT_API tprt_status tprt_all_reduce(tprt_context *ctx, tprt_group *group,
                                     tprt_dtype dtype, tprt_reduction op,
                                     const void *in, void *out, int rank,
                                     const int64_t *shape, void *stream);

/* out = the members' inputs concatenated along `dim` in group order; out's
 * dimension `dim` is in_shape[dim] x group size. */
TPRT_API tprt_status tprt_all_gather(tprt_context *ctx, tprt_group *group,
                                     tprt_dtype dtype, const void *in,
                                     void *out, int rank,
                                     const int64_t *in_shape, int dim,
                                     void *stream);

/* The reduction of the members' inputs, split along `dim` into group-size
 * blocks; block i goes to group index i. in_shape[dim] must be divisible by
 * the group size; out's dimension `dim` is in_shape[dim] / group size. */
TPRT_API tprt_status tprt_reduce_scatter(tprt_context *ctx, tprt_group *group,
                                         tprt_dtype dtype, tprt_reduction op,
                                         const void *in, void *out, int rank,
                                         const int64_t *in_shape, int dim,
                                         void *stream);

/* Splits in along split_dim into group-size pieces, sends piece j to group
 * index j, and concatenates the received pieces along concat_dim in sender
 * order. out's shape is in_shape with split_dim divided by the group size,
 * then concat_dim multiplied by it. */
TPRT_API tprt_status tprt_all_to_all(tprt_context *ctx, tprt_group *group,
                                     tprt_dtype dtype, const void *in,
                                     void *out, int rank,
                                     const int64_t *in_shape, int split_dim,
                                     int concat_dim, void *stream);

/* Returns once every member of the group has called it. */
TPRT_API tprt_status tprt_barrier(tprt_context *ctx, tprt_group *group);

/*---------------------------------------------------------------------------
 * Matrix product
 *---------------------------------------------------------------------------*/

/* Row-major C = alpha * op(A) * op(B) + beta * C, with op(A) m x k, op(B)
 * k x n and C m x n; op(X) is X transposed when trans_x is non-zero. lda,
 * ldb and ldc are the row strides in elements of A, B and C as stored. C is
 * not read when beta is 0. f32 and f64 use CBLAS; f16 and bf16 are computed
 * in f32 and rounded to nearest-even. Integer dtypes are not supported. */
TPRT_API tprt_status tprt_gemm(tprt_context *ctx, tprt_dtype dtype, int trans_a,
                               int trans_b, int64_t m, int64_t n, int64_t k,
                               float alpha, const void *a, int64_t lda,
                               const void *b, int64_t ldb, float beta, void *c,
                               int64_t ldc, void *stream);

/* `batch` products as tprt_gemm, the i-th on a + i * stride_a,
 * b + i * stride_b and c + i * stride_c (strides in elements, >= 0; the C
 * matrices must not overlap). One strided-batched cuBLAS call on GPU
 * backends, a loop over tprt_gemm on the CPU ones; counted as `batch` GEMMs
 * in tprt_stats. */
TPRT_API tprt_status tprt_gemm_strided_batched(
    tprt_context *ctx, tprt_dtype dtype, int trans_a, int trans_b, int64_t m,
    int64_t n, int64_t k, float alpha, const void *a, int64_t lda,
    int64_t stride_a, const void *b, int64_t ldb, int64_t stride_b, float beta,
    void *c, int64_t ldc, int64_t stride_c, int64_t batch, void *stream);

/* Mixed precision: `batch` products as tprt_gemm_strided_batched with A and
 * B in `ab_dtype` and C in `c_dtype`: f16 or bf16 operands into an f32 C,
 * the products summed in f32 and C written in f32 (alpha and beta in f32;
 * C is not read when beta is 0), which is what a 16-bit matmul into an f32
 * accumulator means (torch-mlir's bf16 and f16 exports). Equal types are
 * tprt_gemm_strided_batched; other pairs are TPRT_ERROR_INVALID_ARGUMENT.
 * Strides are in elements of each matrix's own type; batch 1 with zero
 * strides is one product. cuBLAS's cublasGemm[StridedBatched]Ex with
 * CUDA_R_16F/CUDA_R_16BF inputs, a CUDA_R_32F output and CUBLAS_COMPUTE_32F
 * on GPU backends; on the CPU ones panels of A and B widened to f32 (in a
 * per-thread scratch that only grows) and cblas_sgemm. Counted as `batch`
 * GEMMs in tprt_stats. */
TPRT_API tprt_status tprt_gemm_mixed(
    tprt_context *ctx, tprt_dtype ab_dtype, tprt_dtype c_dtype, int trans_a,
    int trans_b, int64_t m, int64_t n, int64_t k, float alpha, const void *a,
    int64_t lda, int64_t stride_a, const void *b, int64_t ldb,
    int64_t stride_b, float beta, void *c, int64_t ldc, int64_t stride_c,
    int64_t batch, void *stream);

/* `count` products sharing A: C_i = alpha * op(A) * op(B_i) + beta * C_i
 * for i < count, each as tprt_gemm with the same m, n, k, lda, ldb and
 * ldc. `b` and `c` are host arrays of `count` pointers to buffers in the
 * context's memory (device memory on GPU backends); the C_i must not
 * overlap each other, A or any B_i. One batched cuBLAS call over pointer
 * arrays on GPU backends (the products run together and read A once), a
 * loop over tprt_gemm on the CPU ones; counted as `count` GEMMs in
 * tprt_stats. */
TPRT_API tprt_status tprt_gemm_shared_a(
    tprt_context *ctx, tprt_dtype dtype, int trans_a, int trans_b, int64_t m,
    int64_t n, int64_t k, float alpha, const void *a, int64_t lda,
    const void *const *b, int64_t ldb, float beta, void *const *c,
    int64_t ldc, int count, void *stream);

/* Grouped products, one per group of rows (a mixture of experts' routed
 * GEMM: the rows of A are tokens sorted by expert, B_g is expert g's
 * weight): for g < groups, C_g = alpha * A_g * op(B_g) + beta * C_g, where
 * A_g and C_g are the group_rows[g] rows of A and C that follow the rows
 * of the groups before g (row-major, row strides lda and ldc; A_g is
 * group_rows[g] x k, C_g group_rows[g] x n) and B_g = b + g * stride_b is
 * k x n (n x k with trans_b). `group_rows` holds `groups` int64 counts in
 * the context's memory (device memory on GPU backends: the counts a kernel
 * computed); each must be >= 0 and their sum at most `rows`, the rows A
 * and C hold; rows past the sum are neither read nor written. cuBLAS's
 * cublasGemmGroupedBatchedEx (one launch for every non-empty group; f64:
 * one cublasGemmEx per group) on the rank's stream on GPU backends, after
 * a copy of the counts to the host; the host GEMM per group on the CPU
 * ones. Counted as one GEMM per non-empty group in tprt_stats, 2 x (sum of
 * the counts) x n x k flops. */
TPRT_API tprt_status tprt_gemm_grouped(
    tprt_context *ctx, tprt_dtype dtype, int trans_b, int groups,
    const int64_t *group_rows, int64_t rows, int64_t n, int64_t k,
    float alpha, const void *a, int64_t lda, const void *b, int64_t ldb,
    int64_t stride_b, float beta, void *c, int64_t ldc, void *stream);

/* The activation of tprt_gemm_epilogue. */
typedef enum tprt_activation {
  TPRT_ACTIVATION_NONE = 0,
  TPRT_ACTIVATION_RELU = 1,       /* max(x, 0) */
  TPRT_ACTIVATION_GELU_TANH = 2   /* 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3))) */
} tprt_activation;

/* Row-major C = act(op(A) op(B) + addend + bias), with op(A) m x k, op(B)
 * k x n and C m x n as in tprt_gemm (alpha 1, beta 0); `addend` is an
 * m x n matrix with row stride ld_addend (NULL: none; ld_addend is then
 * ignored), `bias` n elements added to every row (NULL: none), all in
 * `dtype` (f32, f64, f16, bf16) and in the context's memory. The sum is
 * formed in f32 (f64 for f64), the activation applied, and the result
 * rounded once. `activation` is a tprt_activation; GELU_TANH is the tanh
 * approximation cuBLASLt's GELU epilogue computes. The addend may be C
 * itself (the same pointer and ld_addend == ldc: C += act(...) is not
 * meant, C = act(op(A) op(B) + C + bias) is); otherwise it must not
 * overlap C, and neither may the bias. One cublasLtMatmul with a fused
 * epilogue on GPU backends, the host GEMM and one pass over C on the CPU
 * ones; counted as one GEMM in tprt_stats. */
TPRT_API tprt_status tprt_gemm_epilogue(
    tprt_context *ctx, tprt_dtype dtype, int trans_a, int trans_b, int64_t m,
    int64_t n, int64_t k, const void *a, int64_t lda, const void *b,
    int64_t ldb, const void *addend, int64_t ld_addend, const void *bias,
    int activation, void *c, int64_t ldc, void *stream);

/* One line naming the BLAS behind the host's products (the CPU backends'
 * tprt_gemm): the library and its version, its kernel and who chose it, and
 * the threads, e.g. "OpenBLAS 0.3.21, core Cooperlake (picked by tprt from
 * the CPU's features; OpenBLAS's own detection picks SkylakeX), 1 thread".
 * Loads the BLAS when no product has yet (docs/runtime.md, "The host
 * BLAS"); the string is static. TPRT_ERROR_INVALID_ARGUMENT when
 * TPRT_THREADS is not a number of threads (every host product then fails
 * with the same message). */
TPRT_API tprt_status tprt_host_blas(const char **description);

/*---------------------------------------------------------------------------
 * Timers and counters
 *
 * On GPU backends the timer, tprt_stats_get and tprt_stats_reset first wait
 * for the work issued on the rank's stream, and the seconds of collectives
 * and GEMMs are measured with CUDA events on that stream.
 *---------------------------------------------------------------------------*/

/* Starts (or restarts) the context's wall-clock timer. */
TPRT_API tprt_status tprt_timer_start(tprt_context *ctx);

/* Seconds since the last tprt_timer_start (or since tprt_init). */
TPRT_API tprt_status tprt_timer_elapsed(tprt_context *ctx, double *out);

TPRT_API tprt_status tprt_stats_get(tprt_context *ctx, tprt_stats *out);
TPRT_API tprt_status tprt_stats_reset(tprt_context *ctx);

/*---------------------------------------------------------------------------
 * Memory
 *---------------------------------------------------------------------------*/

/* Memory for collective buffers: host memory on the CPU backends (64-byte
 * aligned), device memory on GPU backends. Zero bytes gives NULL. */
TPRT_API tprt_status tprt_alloc(tprt_context *ctx, size_t bytes, void **out);

/* Frees memory from tprt_alloc. NULL is accepted. */
TPRT_API tprt_status tprt_free(tprt_context *ctx, void *ptr);

/* *out = 1 when tprt_alloc returns device memory (GPU backends), else 0. */
TPRT_API tprt_status tprt_memory_is_device(tprt_context *ctx, int *out);

/* Copies `bytes` from src to dst, each host or device memory (like
 * cudaMemcpyDefault), after the work already issued on the rank's stream;
 * complete on return. A plain memmove on the CPU backends. */
TPRT_API tprt_status tprt_memcpy(tprt_context *ctx, void *dst, const void *src,
                                 size_t bytes);

/* Waits until the work issued on the rank's stream has finished (a no-op on
 * the CPU backends, which finish every call before returning). */
TPRT_API tprt_status tprt_synchronize(tprt_context *ctx);

#ifdef __cplusplus
}
#endif

#endif /* TPRT_TPRT_H */
