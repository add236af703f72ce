//===- Passes.td - tp lowerings ----------------------------*- tablegen -*-===//

#ifndef TP_CONVERSION_PASSES_TD
#define TP_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertTPToRuntimePass
    : Pass<"convert-tp-to-runtime", "::mlir::ModuleOp"> {
  let summary = "Lower tp collectives to calls into the tprt runtime";
  let description = [{
    Rewrites every `tp.*` collective of a partitioned program into a call of
    the runtime's `tprt_mlir_<op>_<type>` entry point on buffers, and
    `tp.axis_index` into `tprt_mlir_axis_index`, before bufferization:

    ```mlir
    // before
    %r = tp.all_reduce sum %x over @m ["tp"] : tensor<8x16xf32>
    // after
    %c = bufferization.alloc_tensor() copy(%x) : tensor<8x16xf32>
    %in = bufferization.to_buffer %c read_only : tensor<8x16xf32> to memref<8x16xf32>
    %out = memref.alloc() : memref<8x16xf32>
    %u = memref.cast %in : memref<8x16xf32> to memref<*xf32>
    %v = memref.cast %out : memref<8x16xf32> to memref<*xf32>
    call @tprt_mlir_all_reduce_f32(%kind, %axes, %u, %v) : (i32, i64, memref<*xf32>, memref<*xf32>) -> ()
    %r = bufferization.to_tensor %out restrict writable : memref<8x16xf32> to tensor<8x16xf32>
    ```

    The input is copied into a fresh buffer so that the runtime always sees
    a contiguous one. Mesh axes become a bit mask over the mesh's axes.
    Integers narrower than 32 bits (`i1`, `i8`) travel as `i32`: an
    elementwise `linalg.generic` sign-extends them (zero-extends `i1`, a
    bool: a max is an or, a min an and) before the call and truncates the
    result after it, so a sum wraps modulo 2^width (an `i1` sum is an xor).
    Every `dense_resource` constant must hold exactly the bytes its type
    needs (checked first: the LLVM translation would drop a remainder).
    Preconditions: a partitioned program (`--tp-verify-partitioned`) with a
    single `tp.mesh`.
  }];
  let dependentDialects = [
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::memref::MemRefDialect", "::mlir::func::FuncDialect",
    "::mlir::arith::ArithDialect", "::mlir::linalg::LinalgDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

def DecomposeAggregatesPass
    : Pass<"tp-decompose-aggregates", "::mlir::ModuleOp"> {
  let summary = "Decompose aggregate linalg ops and elementwise ops on tensors "
                "into linalg generics before bufferization";
  let description = [{
    The first step of both lowerings (`--tp-lower-cpu`, `--tp-lower-gpu`):
    every op implementing `linalg::AggregatedOpInterface` (`linalg.softmax`)
    is replaced by its decomposition (max, subtract and exp, sum, divide as
    linalg ops), and elementwise `arith`/`math` ops on tensors become
    `linalg.generic` (upstream `convert-elementwise-to-linalg`), so that
    bufferization and the loop or kernel lowering see only linalg.

    ```mlir
    // before
    %s = linalg.softmax dimension(1) ins(%x : tensor<2x16xf32>)
                                     outs(%e : tensor<2x16xf32>) -> tensor<2x16xf32>
    %t = math.tanh %s : tensor<2x16xf32>
    // after: linalg.fill + linalg.generic (max), linalg.generic (sub, exp),
    // linalg.fill + linalg.generic (sum), linalg.generic (div), and
    // linalg.generic { math.tanh }
    ```

    `tensor.gather` and `tensor.scatter`, which upstream MLIR does not
    bufferize, become a `linalg.generic` reading its elements with
    `tensor.extract`, and an `scf.for` of `tensor.insert_slice` over the
    scattered slices.
    An `affine.for` carrying tensors (which does not bufferize) becomes the
    `scf.for` it means.

    Preconditions: none (ops it does not know are left alone).
  }];
  let dependentDialects = [
    "::mlir::linalg::LinalgDialect", "::mlir::arith::ArithDialect",
    "::mlir::math::MathDialect", "::mlir::tensor::TensorDialect",
    "::mlir::scf::SCFDialect"
  ];
}

def PlanBuffersPass : Pass<"tp-plan-buffers", "::mlir::ModuleOp"> {
  let summary = "Put each function's static temporary buffers into one "
                "arena, packed by liveness, allocated once per process";
  let description = [{
    For every function, the `memref.alloc` ops of its block with static
    shapes whose buffers do not leave the function get an offset in one
    arena (`BufferPlan`, include/tp/Conversion/BufferPlan.h: lifetimes from
    the first to the last top-level op using a view of the buffer; buffers
    with disjoint lifetimes share bytes; greedy placement, largest first).
    The arena is a private uninitialized `memref.global`, so a call of the
    function allocates nothing; each alloc becomes a `memref.view` of it,
    and its deallocs are removed.

    ```mlir
    // before
    %a = memref.alloc() {alignment = 64 : i64} : memref<8x16xf32>
    linalg.generic ... outs(%a : memref<8x16xf32>)
    %b = memref.alloc() {alignment = 64 : i64} : memref<8x16xf32>
    linalg.generic ... ins(%a : memref<8x16xf32>) outs(%b : memref<8x16xf32>)
    // after
    memref.global "private" @tp_arena_f : memref<1024xi8> = uninitialized
        {alignment = 64 : i64, planned_buffers = 2 : i64, ...}
    %arena = memref.get_global @tp_arena_f : memref<1024xi8>
    %a = memref.view %arena[%c0][] : memref<1024xi8> to memref<8x16xf32>
    %b = memref.view %arena[%c512][] : memref<1024xi8> to memref<8x16xf32>
    ```

    The global carries `planned_buffers`, `separate_bytes`
    (their sum) and `peak_live_bytes` (the most bytes live at one point:
    no plan is smaller). A function with an arena is not reentrant.
    Allocs with dynamic shapes, other layouts, inside nested regions, in
    functions of several blocks, or returned are left alone. Preconditions:
    bufferized functions (after `buffer-results-to-out-params`).
  }];
  let options = [
    Option<"alignment", "alignment", "int64_t", /*default=*/"64",
           "Byte alignment of every buffer in the arena (a power of two)">
  ];
  let dependentDialects = [
    "::mlir::memref::MemRefDialect", "::mlir::arith::ArithDialect"
  ];
}

def VectorizeCPUPass : Pass<"tp-vectorize-cpu", "::mlir::func::FuncOp"> {
  let summary = "Tile elementwise and reduction linalg ops on buffers into "
                "vector-wide tiles and vectorize them";
  let description = [{
    Each linalg op on buffers with static loop ranges that is not a
    contraction and reads no buffer through `memref.load` in its body is
    tiled to 1 along every loop but one, the loop of the innermost
    dimension of its largest operand, which gets `vector-bytes` worth of
    elements (or the whole dimension when it is at most two such tiles)
    and becomes the innermost loop; a loop the tile does not divide is
    peeled. Each tile is vectorized (`linalg::vectorize`) and the vector
    ops are lowered to 1-D loads, stores, arithmetic and reductions; f32
    `exp`, `expm1`, `tanh`, `erf`, `log`, `log1p`, `log2` become upstream's
    polynomial approximations. Ops it cannot vectorize stay linalg (and
    become scalar loops).

    ```mlir
    // before
    linalg.generic {iterator_types = ["parallel", "parallel"]}
        ins(%x : memref<8x64xf32>) outs(%y : memref<8x64xf32>) { math.tanh }
    // after
    scf.for %i = %c0 to %c8 step %c1 {
      scf.for %j = %c0 to %c64 step %c16 {
        %v = vector.load %x[%i, %j] : memref<8x64xf32>, vector<16xf32>
        ... polynomial tanh on vector<16xf32> ...
        vector.store %t, %y[%i, %j] : memref<8x64xf32>, vector<16xf32>
      }
    }
    ```

    Preconditions: bufferized; runs before `convert-linalg-to-loops` and
    `convert-vector-to-llvm`.
  }];
  let options = [
    Option<"vectorBytes", "vector-bytes", "int64_t", /*default=*/"64",
           "Bytes of one vector tile (64: one AVX-512 register, two AVX2 "
           "registers)">
  ];
  let dependentDialects = [
    "::mlir::vector::VectorDialect", "::mlir::scf::SCFDialect",
    "::mlir::affine::AffineDialect", "::mlir::arith::ArithDialect",
    "::mlir::memref::MemRefDialect", "::mlir::math::MathDialect"
  ];
}

def RouteExpertsPass : Pass<"tp-route-experts", "::mlir::ModuleOp"> {
  let summary = "Compute a contraction over per-row expert weights as a "
                "routed grouped GEMM";
  let description = [{
    A contraction whose weight operand is gathered, per (token, choice)
    row, from a stack of experts by an index computed from the row's data
    (Hugging Face's `batched_mm` experts: a `linalg.generic` yielding
    `tensor.extract %stack[%id, i, j]`, then a `linalg.batch_matmul`) is
    recognised by what it computes (tp/Analysis/RoutedContraction.h) and
    computed as a routed GEMM: the rows counting-sorted by expert (linalg
    ops on i64: counts, offsets, each row's place and its inverse), the
    sorted rows times each expert's weight in one
    `tprt_mlir_gemm_grouped_<t>` call (cuBLAS's grouped batched GEMM on
    GPUs, the host BLAS per expert on CPUs), and the products put back in
    row order. The `[rows, O, K]` copy of the weights is never formed.

    ```mlir
    // before: every row's expert weight copied, then one product per row
    %w = linalg.generic ... ins(%ids : tensor<16xi64>) outs(%e : tensor<16x256x64xf32>) {
      ... tensor.extract %stack[%id, %i, %j] : tensor<4x256x64xf32> ... }
    %y = linalg.batch_matmul ins(%w, %x : tensor<16x256x64xf32>, tensor<16x64x1xf32>) ...
    // after: counting sort (linalg), one grouped GEMM, rows put back
    call @tprt_mlir_gemm_grouped_f32(%c1_i32, %xs, %stack, %counts, %ys)
        : (i32, memref<*xf32>, memref<*xf32>, memref<*xi64>, memref<*xf32>) -> ()
    %y = linalg.generic ... { tensor.extract %ys_t[%place, %o] ... }
    ```

    A contraction that reads such a gather but does not fit (several row
    loops, an index that is not a loop index or one expert id, a stack
    whose first dimension is not the experts, mixed element types, another
    body) is left alone with a remark `not routed: <why>`. Runs on tensors
    before `tp-gemm-to-runtime`, in `tp-lower-cpu` and `tp-lower-gpu`;
    static shapes.
  }];
  let dependentDialects = [
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::memref::MemRefDialect", "::mlir::func::FuncDialect",
    "::mlir::arith::ArithDialect", "::mlir::linalg::LinalgDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

def GemmToRuntimePass : Pass<"tp-gemm-to-runtime", "::mlir::ModuleOp"> {
  let summary = "Lower every matmul-family linalg op to the runtime's GEMM calls";
  let description = [{
    Rewrites, on tensors, every linalg contraction (`linalg.matmul` in any
    transpose form, `linalg.batch_matmul` and its transposed forms, and
    `linalg.generic` ops whose body is a multiply-accumulate, as found by
    `linalg::isaContractionOpInterface` / `linalg::inferContractionDims`)
    into a call of `tprt_mlir_gemm_<type>` (no batch dimension) or
    `tprt_mlir_batched_gemm_<type>` (rank-3 `[batch, M, K]` operands).
    Several batch, M, N or K dimensions are collapsed into one when they are
    contiguous in the operand; transposes are expressed through the
    `trans_a` / `trans_b` flags; a `linalg.transpose` is inserted only for
    an operand whose dimensions cannot be grouped as `[batch, rows, k]` or
    `[batch, k, rows]`. A non-zero init becomes an elementwise add of the
    product:

    ```mlir
    // before: attention scores, q/k as [b, s, h, d]
    %s = linalg.generic {indexing_maps = [(b,h,i,j,d) -> (b,i,h,d),
                                         (b,h,i,j,d) -> (b,j,h,d),
                                         (b,h,i,j,d) -> (b,h,i,j)], ...}
           ins(%q, %k) outs(%zero_filled)
    // after
    %qt = linalg.transpose ins(%q) outs(...) permutation = [0, 2, 1, 3]
    %kt = linalg.transpose ins(%k) outs(...) permutation = [0, 2, 1, 3]
    %a = tensor.collapse_shape %qt [[0, 1], [2], [3]]
    %b = tensor.collapse_shape %kt [[0, 1], [2], [3]]
    call @tprt_mlir_batched_gemm_f32(%c0, %c1, %ua, %ub, %uc)
    %s = tensor.expand_shape ...
    ```

    The body is judged by value: the yield must be `acc + a * b` (addf of
    the accumulator and a mulf of the two inputs, either operand order),
    each input read as it is or widened exactly by one `arith.extf` to the
    accumulator's type. f16 or bf16 operands into an f32 accumulator (how
    torch-mlir spells every 16-bit matmul) call
    `tprt_mlir_[batched_]gemm_<t>_f32`: 16-bit A and B, an f32 C, summed
    in f32 (cuBLAS `CUBLAS_COMPUTE_32F`). When that product starts from a
    zero fill and its only use is an elementwise `arith.truncf` back to the
    operands' type, the rounding folds into the call, which becomes the
    16-bit `tprt_mlir_[batched_]gemm_<t>` (f32 sums, rounded once):

    ```mlir
    // before (torch-mlir, --dtype bf16)
    %p = linalg.matmul ins(%x, %w : tensor<128x4096xbf16>, tensor<4096x4096xbf16>)
           outs(%zero : tensor<128x4096xf32>) -> tensor<128x4096xf32>
    %y = linalg.generic ... ins(%p) outs(...) { arith.truncf %in : f32 to bf16 }
    // after
    call @tprt_mlir_gemm_bf16(%c0, %c0, %ux, %uw, %uy)
        : (i32, i32, memref<*xbf16>, memref<*xbf16>, memref<*xbf16>) -> ()
    ```

    Contractions it cannot map (integers, other mixes of element types such
    as bf16 x f16, another body, dynamic shapes) get a remark and stay
    linalg (a slower kernel, still correct).
    Preconditions: static shapes; runs before bufferization.
  }];
  let dependentDialects = [
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::memref::MemRefDialect", "::mlir::func::FuncDialect",
    "::mlir::arith::ArithDialect", "::mlir::linalg::LinalgDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

def FuseSoftmaxPass : Pass<"tp-fuse-softmax", "::mlir::ModuleOp"> {
  let summary = "Put a softmax spelled as linalg ops back into one "
                "linalg.softmax (GPU path)";
  let description = [{
    On tensors, before elementwise fusion: a row max of `x` over its last
    dimension, `exp(x - max)`, its row sum (from a zero fill) and the
    division, with no other users of the intermediates, become one
    `linalg.softmax` over the last dimension, which `tp-linalg-to-gpu` maps
    to one kernel per row with an online max and sum. A cast after the
    division (`arith.truncf` of an f32 softmax into bf16) stays an
    elementwise generic after it.

    ```mlir
    // before
    %m = linalg.generic {...["parallel", "reduction"]} ins(%x) outs(%minf) { maximumf }
    %e = linalg.generic {...["parallel", "parallel"]} ins(%x, %m) outs(%t) { subf, math.exp }
    %s = linalg.generic {...["parallel", "reduction"]} ins(%e) outs(%zero) { addf }
    %y = linalg.generic {...["parallel", "parallel"]} ins(%e, %s) outs(%o) { divf }
    // after
    %y = linalg.softmax dimension(1) ins(%x : tensor<16x64xf32>)
                                     outs(%o : tensor<16x64xf32>) -> tensor<16x64xf32>
    ```

    Anything else is left alone. Preconditions: tensors (before
    bufferization), static shapes.
  }];
  let dependentDialects = [
    "::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect",
    "::mlir::arith::ArithDialect"
  ];
}

def GroupGemmsPass : Pass<"tp-group-gemms", "::mlir::ModuleOp"> {
  let summary = "Put GEMM calls that share their left operand into one "
                "shared-A call (GPU path)";
  let description = [{
    After `tp-gemm-to-runtime`, on tensors: 2-D GEMM calls
    (`tprt_mlir_gemm_<t>`) in one block that multiply the same tensor A
    with the same transposes, their B operands of one type and their
    results of one type (Q, K and V of one normalised input; an MLP's gate
    and up) become one `tprt_mlir_gemm_shared_a<N>_<t>` call (N = 2..4,
    larger groups in chunks of 4) at the first call's place:
    `(trans_a, trans_b, A, B_0..B_N-1, C_0..C_N-1)`. The runtime runs the
    products together as one batched cuBLAS call over pointer arrays, so A
    is fetched once for all of them. A product whose B is not available
    at the first call's place stays as it is.

    ```mlir
    // before (tp-gemm-to-runtime's calls, each with its buffers)
    call @tprt_mlir_gemm_bf16(%f, %f, %a, %wq, %q) ...
    call @tprt_mlir_gemm_bf16(%f, %f, %a2, %wk, %k) ...
    call @tprt_mlir_gemm_bf16(%f, %f, %a3, %wv, %v) ...
    // after
    call @tprt_mlir_gemm_shared_a3_bf16(%f, %f, %a, %wq, %wk, %wv, %q, %k, %v)
    ```
  }];
  let dependentDialects = [
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::memref::MemRefDialect", "::mlir::func::FuncDialect"
  ];
}

def GemmEpiloguesPass : Pass<"tp-gemm-epilogues", "::mlir::ModuleOp"> {
  let summary = "Fuse a bias, a residual add and an activation after a GEMM "
                "into the GEMM call (cuBLASLt epilogues, GPU path)";
  let description = [{
    After `tp-fuse-elementwise`, on tensors: a 2-D GEMM call
    (`tprt_mlir_gemm_<t>`) whose product (or its `tensor.expand_shape`)
    has one use, an all-parallel `linalg.generic` that reads it through the
    identity map, at most one addend of its shape (identity map) and at
    most one bias of its columns (a map reading exactly C's column
    dimensions), and whose body computes act(c + addend + bias) for act in
    none, relu, gelu_tanh, becomes one
    `tprt_mlir_gemm_epilogue_<t>(trans_a, trans_b, activation, A, B,
    addend, bias, C)` call (a `memref<0xT>` where there is no addend or
    bias): one cuBLASLt matmul on GPUs instead of a GEMM and a kernel that
    reads and writes C again. The body is judged by its values, not its
    spelling: its arith/math ops are evaluated on sample points and
    compared with each candidate within the element type's tolerance
    (relu as max or select, tanh-GELU in any algebraic form match;
    erf-GELU does not); an op that cannot be evaluated refuses. A generic
    that reads the product but does not match gets a remark saying which
    part did not. Shared-A and batched GEMMs are left alone.

    ```mlir
    // before
    call @tprt_mlir_gemm_bf16(%f, %t, %x, %w, %c) ...
    %p = bufferization.to_tensor %buf ...
    %y = linalg.generic ins(%p, %bias, %res) ... {
      %s = arith.addf %in, %b ; %r = arith.addf %s, %res ; gelu(%r) ...}
    // after
    call @tprt_mlir_gemm_epilogue_bf16(%f, %t, %c2, %x, %w, %res, %bias, %y)
    ```
  }];
  let dependentDialects = [
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::memref::MemRefDialect", "::mlir::func::FuncDialect",
    "::mlir::tensor::TensorDialect", "::mlir::arith::ArithDialect"
  ];
}

def FuseElementwisePass : Pass<"tp-fuse-elementwise", "::mlir::func::FuncOp"> {
  let summary = "Elementwise fusion that also recomputes cheap unary "
                "producers in each of their consumers (GPU path)";
  let description = [{
    Upstream's `linalg-fuse-elementwise-ops` fuses a producer into its
    consumer only when the consumer is its one use. On the GPU path a
    producer that merely converts or scales one input (torch-mlir's
    `arith.extf` of a norm's input to f64, read by both the mean and the
    variance reductions) then becomes its own kernel and a buffer written
    once and read by each consumer. This pass runs the same patterns with a
    control function that also fuses such a producer into every consumer:
    all-parallel, one tensor input through a projected permutation, its
    output unused in the body, and at most 4 `arith` ops (no integer
    division or remainder) on block arguments and constants. Each consumer
    reads the producer's input instead (no larger than its result), and
    the producer goes once it has no use.
  }];
  let dependentDialects = [
    "::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect",
    "::mlir::affine::AffineDialect", "::mlir::arith::ArithDialect"
  ];
}

def UntieFillsPass : Pass<"tp-untie-fills", "::mlir::ModuleOp"> {
  let summary = "Give each user of a shared linalg.fill on tensors its own "
                "fill (GPU path, before bufferization)";
  let description = [{
    Front ends and CSE share one zero-filled init tensor between several
    reductions or contractions (`%z = linalg.fill ... ; r1 = ... outs(%z);
    r2 = ... outs(%z)`). One-shot bufferization then writes the first user
    in place into the fill's buffer and gives each other user a copy of the
    filled buffer: a fill kernel plus a device copy per extra user, and no
    reduction kernel can start from the fill's value instead
    (`tp-linalg-to-gpu` absorbs a fill only when it writes the reduction's
    own output). This pass clones the fill (with its `tensor.empty`, when
    the fill's destination is one) for every use after the first, in front
    of that use: each user then bufferizes into its own freshly filled
    buffer, which its kernel absorbs. Fills of non-tensor destinations and
    fills with one use are left alone.
  }];
  let dependentDialects = [
    "::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect"
  ];
}

def LegalizeFPowIPass : Pass<"tp-legalize-fpowi"> {
  let summary = "Integer powers the NVVM lowering gets right: constant "
                "exponents as products, others as 32-bit exponents";
  let description = [{
    `convert-gpu-to-nvvm` turns `math.fpowi` into a call of libdevice's
    `__nv_powif(float, int)` whatever the exponent's type: with torch-mlir's
    i64 exponents (`x.pow(2)` of a norm's variance) the call's prototype
    does not match the function's, and the PTX calls it indirectly through a
    mismatched prototype (undefined behaviour; the GPU emulator refuses it).
    This pass, run on device code before that lowering:

    * a constant exponent becomes a product by repeated squaring
      (upstream's `math-expand-ops` pattern): `x^2` is `x * x`, `x^-3` is
      `1 / (x * x * x)`; no call, exact for integer powers up to rounding;
    * any other exponent wider than 32 bits is narrowed to i32, saturating
      so that the result does not change: past the i32 range a power is
      0, 1 or infinite whatever its size, and the parity (the sign of a
      negative base) is kept.

    ```mlir
    %a = math.fpowi %x, %c2 : f32, i64    // %a = arith.mulf %x, %x : f32
    %b = math.fpowi %x, %n : f32, i64     // %m = (clamped %n) : i32
                                          // %b = math.fpowi %x, %m : f32, i32
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::math::MathDialect"
  ];
}

def TabulateIndexMathPass
    : Pass<"tp-tabulate-index-math", "::mlir::ModuleOp"> {
  let summary = "Compute transcendental functions of loop indices once per "
                "distinct index, in a table the op reads (GPU path)";
  let description = [{
    In a parallel `linalg.generic` on tensors, a value computed from
    `linalg.index` and constants alone whose computation contains a
    transcendental op (`math.powf`, `sin`, `cos`, `exp`, ...) and whose
    indices span at most half of the op's iteration space becomes a table:
    a new generic over just the loops it depends on computes it once per
    distinct index, and the op reads it through the map of those loops.
    Rotary embeddings are the case: `cos(s * theta^(-2j/D))` at every
    `[b, s, h, 2, D/2]` element becomes a `[s, D/2]` table.

    ```mlir
    // before
    %r = linalg.generic {...} ins(%x1, %x2 : ...) outs(%e : tensor<1x8x4x2x16xf32>) {
      %s = linalg.index 1 ... %j = linalg.index 4 ...
      %f = math.powf %theta, %exponent ... %c = math.cos %angle ... %n = math.sin %angle
      ...
    }
    // after
    %t:2 = linalg.generic {...} outs(%c0, %s0 : tensor<8x16xf32>, tensor<8x16xf32>) {
      ... math.powf ... math.cos ... math.sin ... linalg.yield %c, %n
    }
    %r = linalg.generic {...} ins(%x1, %x2, %t#0, %t#1 : ...) ... {
      // cos and sin read as inputs (d1, d4)
    }
    ```

    The table computes the same ops on the same types: results are
    bitwise unchanged. Preconditions: on tensors, static shapes; runs after
    elementwise fusion (which would fuse the table back).
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}

def LinalgToGPUPass : Pass<"tp-linalg-to-gpu", "::mlir::ModuleOp"> {
  let summary = "Turn every linalg op on buffers into a gpu.launch and "
                "move host buffers to the device";
  let description = [{
    After bufferization, every remaining linalg op (static shapes, buffer
    semantics) becomes one `gpu.launch`:

    * parallel-only ops: a 1-D grid-stride launch over the flattened
      iteration space, 256 threads per block; each point loads its operands
      through the indexing maps, runs the op's region and stores the
      yielded values;
    * ops whose reduction dimensions are all trailing (row reductions: norm
      statistics, softmax max/sum, log-sum-exp): one block per row (grid =
      number of parallel points, block = 32..256 threads by row length),
      threads stride over the row, partial results combine with a uniform
      `gpu.all_reduce` of the combiner found by `matchReduction` (lowered to
      `shfl.sync.bfly` within warps, shared memory and `bar.sync` across
      them); thread 0 combines with the initial value and stores the row;
    * `linalg.softmax` over the last dimension (from `tp-fuse-softmax`):
      one block per row, one pass with an online max and sum, two uniform
      all-reduces, then `exp(x - max) / sum` stored (f32 for 16-bit types);
    * other reductions: one thread per output point with a remark.

    Host side: `memref.alloc`/`dealloc` become `gpu.alloc`/`gpu.dealloc`,
    `memref.copy` a `gpu.memcpy` (contiguous) or a copy kernel (strided),
    and `memref.get_global` a device copy of the host global.

    ```mlir
    // before
    linalg.generic {iterator_types = ["parallel", "reduction"]}
        ins(%x : memref<16x64xf32>) outs(%s : memref<16xf32>) {...addf...}
    // after
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c16, ...)
               threads(%tx, %ty, %tz) in (%sx = %c64, ...) {
      %p = scf.for %i = %tx to %c64 step %c64 iter_args(%acc = %zero) ...
      %r = gpu.all_reduce add %p uniform {} : (f32) -> f32
      scf.if %first { ... memref.store ... }
      gpu.terminator
    }
    ```

    Preconditions: bufferized program, static shapes, no host-side
    `memref.load`/`memref.store` outside linalg ops.
  }];
  let dependentDialects = [
    "::mlir::gpu::GPUDialect", "::mlir::scf::SCFDialect",
    "::mlir::memref::MemRefDialect", "::mlir::arith::ArithDialect",
    "::mlir::affine::AffineDialect", "::mlir::math::MathDialect",
    "::mlir::vector::VectorDialect"
  ];
}

def GPUCostReportPass : Pass<"tp-gpu-cost-report", "::mlir::ModuleOp"> {
  let summary = "Write what each host function launches and moves through "
                "device memory (JSON), and print a summary";
  let description = [{
    Runs on the host code after kernel outlining (`tp-lower-gpu`'s
    `cost-report=FILE` adds it after `tp-merge-gpu-modules`) and changes
    nothing. Per function: kernel launches (`gpu.launch_func`) with the
    bytes of the buffers each kernel loads from and stores to; GEMM calls
    with their flops (2 |C| K) and bytes (A and B read, C written); every
    other runtime call (`tprt_mlir_*` with memref operands: collectives, and
    any entry point added later), whose last memref operand is written and
    the others read; `gpu.memcpy` copies; the minimum (each memref argument
    once: inputs and weights read once, results written once); and the
    largest temporary buffer. A summary line per function goes to stderr:

    ```
    cost @forward: 3 kernel launches, 2 GEMMs (0.001 GFLOP), 1 other runtime
    calls, 0 copies; bytes moved 81920 (0.1 MiB), minimum 40960 (0.0 MiB),
    2.00x; largest temporary memref<64x32xf32> (8192 bytes)
    ```

    Preconditions: kernels outlined (`gpu.launch_func`), host code on
    memrefs with static shapes.
  }];
  let options = [
    Option<"file", "file", "std::string", /*default=*/"\"\"",
           "Where the JSON report goes">,
    Option<"device", "device", "std::string", /*default=*/"\"h100-nvlink\"",
           "Device profile of the modelled seconds: h100-nvlink, "
           "h200-nvlink, a100-nvlink, h100-pcie">
  ];
  let dependentDialects = ["::mlir::gpu::GPUDialect"];
}

def MergeGPUModulesPass : Pass<"tp-merge-gpu-modules", "::mlir::ModuleOp"> {
  let summary = "Put every outlined kernel into one gpu.module";
  let description = [{
    `gpu-kernel-outlining` makes one `gpu.module` per kernel, and each
    becomes a `gpu.binary` that the compiled model loads separately
    (`mgpuModuleLoad` or, for PTX, a JIT compilation at load time). This
    pass moves every `gpu.func` into one module, `@tp_kernels`; each kernel
    takes the name of its old module. Launches are updated to match:

    ```mlir
    // before
    gpu.launch_func @forward_kernel_3::@forward_kernel ...
    gpu.module @forward_kernel_3 { gpu.func @forward_kernel(...) kernel {...} }
    // after
    gpu.launch_func @tp_kernels::@forward_kernel_3 ...
    gpu.module @tp_kernels { gpu.func @forward_kernel_3(...) kernel {...} ... }
    ```

    Modules that hold anything but kernels, or that carry attributes (a
    target already attached), are left alone. Preconditions: runs after
    outlining and before `nvvm-attach-target`.
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect"];
}

def FuseAttentionPass : Pass<"tp-fuse-attention", "::mlir::ModuleOp"> {
  let summary = "Replace attention (scores, scale, mask, softmax, times V) "
                "by one fused online-softmax kernel";
  let description = [{
    Recognises attention on tensors, in the spellings tp-gen and torch-mlir
    produce (docs/passes/lower-gpu.md, "Fused attention"): a contraction
    Q·K^T over the head dimension (linalg.generic or a batch matmul, through
    reshapes, transposes and GQA broadcasts), a chain of elementwise ops on
    the scores (scale, additive mask tensor, causal or window mask from
    `linalg.index` compares), a row softmax over the keys (max, exp of the
    difference, sum, division) and the product with V. The subgraph becomes
    a call of a generated function that never materialises the
    `[batch, heads, seq, seq]` scores: one warp per query row (`target=gpu`,
    a `gpu.launch`), or loops (`target=loops`, the same algorithm on the
    host, for the CPU numerics check), with an online softmax over the keys
    in f32.

    ```mlir
    // before
    %s = linalg.generic ... ins(%q, %k) ...   // [b, h, s, s]
    ... scale, mask, max, exp, sum, div ...
    %o = linalg.generic ... ins(%p, %v) ...
    // after
    %qb = bufferization.to_buffer %q ...
    call @tp_fused_attention_0(%qb, %kb, %vb, %ob)
    %o = bufferization.to_tensor %ob restrict writable
    ```

    What does not match stays as it is; a candidate (a contraction whose
    operand comes from a softmax) that fails gets a remark
    `attention not fused: <reason>`. Preconditions: static shapes, on
    tensors, after tp-decompose-aggregates and before tp-gemm-to-runtime.
  }];
  let options = [
    Option<"target", "target", "std::string", /*default=*/"\"gpu\"",
           "gpu (a gpu.launch) or loops (scf loops on the host, the same "
           "recurrence, for the CPU numerics check)">,
    Option<"kernel", "kernel", "std::string", /*default=*/"\"auto\"",
           "auto (tensor cores where eligible, else CUDA cores; fused only "
           "where the cost model says it is faster than the unfused path), "
           "tensor-core or cuda-core (that kernel, always fused)">,
    Option<"device", "device", "std::string", /*default=*/"\"h100-nvlink\"",
           "Device profile of the cost model (kernel=auto)">
  ];
  let dependentDialects = [
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::memref::MemRefDialect", "::mlir::func::FuncDialect",
    "::mlir::arith::ArithDialect", "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect", "::mlir::gpu::GPUDialect",
    "::mlir::affine::AffineDialect", "::mlir::vector::VectorDialect",
    "::mlir::nvgpu::NVGPUDialect", "::mlir::NVVM::NVVMDialect",
    "::mlir::LLVM::LLVMDialect"
  ];
}

def DedupKernelsPass : Pass<"tp-dedup-kernels", "::mlir::ModuleOp"> {
  let summary = "Make identical kernels one: gpu.func in a gpu.module, "
                "private func.func in a module";
  let description = [{
    A model's repeated layers lower to the same kernels over and over: a
    32-layer Llama has 32 copies of each of its layer's kernels, which
    the NVPTX backend, ptxas (GPU) or clang (CPU) would compile 32 times.
    This pass keeps the first of each set of structurally identical
    functions and points every reference to the others at it:

    * in every `gpu.module`, its `gpu.func` ops (kernels are reached only
      through `gpu.launch_func`, whatever their visibility);
    * in every other symbol table (the builtin module), its private
      functions with a body (`func.func private`; public functions are
      entry points and stay).

    Two functions are identical when they are the same operation with the
    same attributes apart from their name (type, `kernel`, known block and
    grid sizes, workgroup buffers, argument attributes) and bodies that
    `OperationEquivalence` finds equivalent ignoring locations. A
    structural hash of the body (operation names, attributes, properties,
    result types, in walk order) sorts the candidates first, so the pass
    is linear in the size of the module. Inner symbol tables go first, and
    a table is revisited until nothing changes: host functions that
    launched equal kernels (the fused attention's wrappers) become equal
    once their kernels are one.

    ```mlir
    // before
    gpu.launch_func @tp_kernels::@forward_kernel ...
    gpu.launch_func @tp_kernels::@forward_kernel_0 ...
    gpu.module @tp_kernels {
      gpu.func @forward_kernel(%a: memref<4xf32>) kernel { ...A... }
      gpu.func @forward_kernel_0(%b: memref<4xf32>) kernel { ...A... }
    }
    // after
    gpu.launch_func @tp_kernels::@forward_kernel ...
    gpu.launch_func @tp_kernels::@forward_kernel ...
    gpu.module @tp_kernels {
      gpu.func @forward_kernel(%a: memref<4xf32>) kernel { ...A... }
    }
    ```

    The program computes exactly what it computed before: only names
    change. Preconditions: none (any module); in tp-lower-gpu it runs after
    `tp-merge-gpu-modules`, in tp-lower-cpu after `tp-outline-cpu-kernels`.
  }];
}

def OutlineCPUKernelsPass
    : Pass<"tp-outline-cpu-kernels", "::mlir::ModuleOp"> {
  let summary = "Make each loop nest of a host function a private function "
                "(a CPU kernel) called with the values it reads";
  let description = [{
    After vectorization a model's function is one long sequence of loop
    nests and runtime calls: for a 32-layer Llama-2-7B, 52 000 lines of
    LLVM IR in one function, on which clang's instruction selection,
    register allocation (every call clobbers registers that the function's
    long-lived values keep) and scheduler take minutes. This pass gives
    each top-level loop of a function (an op with
    `LoopLikeOpInterface`, without results) a private function of its own,
    `<function>_kernel_<N>`, and calls it in the loop's place, as
    `gpu-kernel-outlining` does for the GPU:

    ```mlir
    // before
    func.func @forward(%x: memref<64xf32>) {
      %c0 = arith.constant 0 : index ...
      %v = memref.view %arena[%c256][] : memref<1024xi8> to memref<64xf32>
      scf.for %i = %c0 to %c64 step %c16 { ... %x ... %v ... }
    }
    // after
    func.func @forward(%x: memref<64xf32>) {
      %v = memref.view %arena[%c256][] : memref<1024xi8> to memref<64xf32>
      call @forward_kernel_0(%x, %v) : (memref<64xf32>, memref<64xf32>) -> ()
    }
    func.func private @forward_kernel_0(%a: memref<64xf32>, %b: memref<64xf32>)
        attributes {llvm.linkage = #llvm.linkage<internal>,
                    passthrough = ["noinline"]} {
      %c0 = arith.constant 0 : index ...
      scf.for %i = %c0 to %c64 step %c16 { ... %a ... %b ... }
      return
    }
    ```

    A value the loop reads from outside it is an argument, in the order of
    its first use in the loop, unless a constant defines it: constants are
    cloned into the kernel, where they fold as before. So the loops of
    equal layers become equal kernels, which `tp-dedup-kernels` makes one,
    and clang compiles each distinct loop nest once, in a small function.
    Kernels are `noinline`: inlined back, they would make the host
    function large again. What the loops compute is unchanged; each costs
    one call more (a nest runs for microseconds at least). Loops with
    results and other ops with regions stay where they are. Preconditions:
    on buffers (after bufferization and `tp-plan-buffers`), before the
    conversion to LLVM.
  }];
  let dependentDialects = ["::mlir::func::FuncDialect",
                           "::mlir::LLVM::LLVMDialect"];
}

#endif // TP_CONVERSION_PASSES_TD
