// RUN: tp-opt %s --split-input-file --convert-tp-to-runtime --verify-diagnostics
// Collectives the runtime cannot carry are located errors.

tp.mesh @m ["tp" = 4]
func.func @f8_elements(%x: tensor<8xf8E4M3FN>) -> tensor<8xf8E4M3FN> {
  // expected-error @below {{'tp.all_reduce' op has element type 'f8E4M3FN', which the runtime cannot communicate (it communicates f32, f16, bf16, f64, i64, i32, and integers of fewer bits as i32)}}
  %r = tp.all_reduce max %x over @m ["tp"] : tensor<8xf8E4M3FN>
  return %r : tensor<8xf8E4M3FN>
}

// -----

tp.mesh @m ["tp" = 4]
func.func @complex_elements(%x: tensor<8xcomplex<f32>>) -> tensor<32xcomplex<f32>> {
  // expected-error @below {{'tp.all_gather' op has element type 'complex<f32>', which the runtime cannot communicate}}
  %r = tp.all_gather %x over @m ["tp"] dim = 0 : tensor<8xcomplex<f32>> -> tensor<32xcomplex<f32>>
  return %r : tensor<32xcomplex<f32>>
}

// -----

tp.mesh @m ["tp" = 4]
func.func @dynamic(%x: tensor<?xf32>) -> tensor<?xf32> {
  // expected-error @below {{'tp.all_reduce' op needs static shapes to be lowered}}
  %r = tp.all_reduce sum %x over @m ["tp"] : tensor<?xf32>
  return %r : tensor<?xf32>
}

// -----

// A dense_resource blob one byte longer than its type: the LLVM translation
// would read the first 24 bytes and drop the last one without a word.
func.func @long_blob() -> tensor<2x3xf32> {
  // expected-error @below {{convert-tp-to-runtime: dense_resource<w_blob> holds 25 bytes of data, but 'tensor<2x3xf32>' takes 24 (6 elements of 4 bytes)}}
  %w = arith.constant dense_resource<w_blob> : tensor<2x3xf32>
  return %w : tensor<2x3xf32>
}

{-#
  dialect_resources: {
    builtin: {
      w_blob: "0x04000000000000000000803F0000004000004040000080400000A04000"
    }
  }
#-}

// -----

func.func @missing_blob() -> tensor<2x3xf32> {
  // expected-error @below {{convert-tp-to-runtime: dense_resource<gone> of type 'tensor<2x3xf32>' has no data}}
  %w = arith.constant dense_resource<gone> : tensor<2x3xf32>
  return %w : tensor<2x3xf32>
}

// -----

// Unsigned and signed integer types: no arith extension takes them (the
// pass used to emit an invalid arith.extsi on ui8).
tp.mesh @m ["tp" = 4]
func.func @unsigned_elements(%x: tensor<8xui8>) -> tensor<32xui8> {
  // expected-error @below {{'tp.all_gather' op has element type 'ui8', which the runtime cannot communicate (integers must be signless, e.g. i8)}}
  %r = tp.all_gather %x over @m ["tp"] dim = 0 : tensor<8xui8> -> tensor<32xui8>
  return %r : tensor<32xui8>
}

// -----

tp.mesh @m ["tp" = 4]
func.func @signed_elements(%x: tensor<8xsi32>) -> tensor<8xsi32> {
  // expected-error @below {{'tp.all_reduce' op has element type 'si32', which the runtime cannot communicate (integers must be signless, e.g. i32)}}
  %r = tp.all_reduce sum %x over @m ["tp"] : tensor<8xsi32>
  return %r : tensor<8xsi32>
}
