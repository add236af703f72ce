// RUN: tp-opt %s --tp-plan-buffers="alignment=48" -verify-diagnostics
// An alignment that is not a power of two is an error on the module.

// expected-error@below {{tp-plan-buffers: alignment 48 is not a power of two}}
module {
  func.func @f(%x: memref<4xf32>) {
    return
  }
}
