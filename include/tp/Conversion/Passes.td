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
    Preconditions: a partitioned program (`--tp-verify-partitioned`) with a
    single `tp.mesh`.
  }];
  let dependentDialects = [
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::memref::MemRefDialect", "::mlir::func::FuncDialect",
    "::mlir::arith::ArithDialect"
  ];
}

#endif // TP_CONVERSION_PASSES_TD
