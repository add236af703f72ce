// RUN: tp-opt %s --pass-pipeline="builtin.module(func.func(tp-vectorize-cpu{vector-bytes=0}))" -verify-diagnostics
// A vector of no bytes is an error on the function.

// expected-error@below {{tp-vectorize-cpu: vector-bytes 0 is not positive}}
func.func @f(%x: memref<4xf32>) {
  return
}
