// RUN: tp-opt %s --split-input-file --tp-dedup-kernels | FileCheck %s

// Two identical kernels (names and locations apart) become the first; the
// launches of the second follow it. A kernel that differs in one constant,
// one with another block size, and one with another argument type stay.

// CHECK-LABEL: func.func @launches
// CHECK: gpu.launch_func @tp_kernels::@scale_a blocks
// CHECK: gpu.launch_func @tp_kernels::@scale_a blocks
// CHECK: gpu.launch_func @tp_kernels::@scale_by_3 blocks
// CHECK: gpu.launch_func @tp_kernels::@scale_a_wide blocks
// CHECK: gpu.launch_func @tp_kernels::@scale_a_f16 blocks
// CHECK: gpu.module @tp_kernels {
// CHECK-NEXT: gpu.func @scale_a(
// CHECK-NOT: gpu.func @scale_b
// CHECK: gpu.func @scale_by_3(
// CHECK: gpu.func @scale_a_wide(
// CHECK: gpu.func @scale_a_f16(
module attributes {gpu.container_module} {
  func.func @launches(%x: memref<4xf32>, %h: memref<4xf16>) {
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    gpu.launch_func @tp_kernels::@scale_a blocks in (%c1, %c1, %c1) threads in (%c4, %c1, %c1) args(%x : memref<4xf32>)
    gpu.launch_func @tp_kernels::@scale_b blocks in (%c1, %c1, %c1) threads in (%c4, %c1, %c1) args(%x : memref<4xf32>)
    gpu.launch_func @tp_kernels::@scale_by_3 blocks in (%c1, %c1, %c1) threads in (%c4, %c1, %c1) args(%x : memref<4xf32>)
    gpu.launch_func @tp_kernels::@scale_a_wide blocks in (%c1, %c1, %c1) threads in (%c4, %c1, %c1) args(%x : memref<4xf32>)
    gpu.launch_func @tp_kernels::@scale_a_f16 blocks in (%c1, %c1, %c1) threads in (%c4, %c1, %c1) args(%h : memref<4xf16>)
    return
  }
  gpu.module @tp_kernels {
    gpu.func @scale_a(%a: memref<4xf32>) kernel attributes {known_block_size = array<i32: 4, 1, 1>} {
      %i = gpu.thread_id x
      %two = arith.constant 2.0 : f32
      %v = memref.load %a[%i] : memref<4xf32>
      %w = arith.mulf %v, %two : f32
      memref.store %w, %a[%i] : memref<4xf32>
      gpu.return
    }
    gpu.func @scale_b(%b: memref<4xf32>) kernel attributes {known_block_size = array<i32: 4, 1, 1>} {
      %j = gpu.thread_id x loc("other.py":3:1)
      %c = arith.constant 2.0 : f32
      %u = memref.load %b[%j] : memref<4xf32>
      %y = arith.mulf %u, %c : f32
      memref.store %y, %b[%j] : memref<4xf32>
      gpu.return
    }
    gpu.func @scale_by_3(%a: memref<4xf32>) kernel attributes {known_block_size = array<i32: 4, 1, 1>} {
      %i = gpu.thread_id x
      %three = arith.constant 3.0 : f32
      %v = memref.load %a[%i] : memref<4xf32>
      %w = arith.mulf %v, %three : f32
      memref.store %w, %a[%i] : memref<4xf32>
      gpu.return
    }
    gpu.func @scale_a_wide(%a: memref<4xf32>) kernel attributes {known_block_size = array<i32: 8, 1, 1>} {
      %i = gpu.thread_id x
      %two = arith.constant 2.0 : f32
      %v = memref.load %a[%i] : memref<4xf32>
      %w = arith.mulf %v, %two : f32
      memref.store %w, %a[%i] : memref<4xf32>
      gpu.return
    }
    gpu.func @scale_a_f16(%a: memref<4xf16>) kernel attributes {known_block_size = array<i32: 4, 1, 1>} {
      %i = gpu.thread_id x
      %two = arith.constant 2.0 : f16
      %v = memref.load %a[%i] : memref<4xf16>
      %w = arith.mulf %v, %two : f16
      memref.store %w, %a[%i] : memref<4xf16>
      gpu.return
    }
  }
}

// -----

// The same dataflow on swapped operands is another kernel: x - y is not
// y - x (equivalence follows the use-def structure, not the op list).

// CHECK-LABEL: func.func @operand_order
// CHECK: gpu.launch_func @k::@sub_xy blocks
// CHECK: gpu.launch_func @k::@sub_yx blocks
// CHECK: gpu.func @sub_xy(
// CHECK: gpu.func @sub_yx(
module attributes {gpu.container_module} {
  func.func @operand_order(%x: memref<4xf32>, %y: memref<4xf32>) {
    %c1 = arith.constant 1 : index
    gpu.launch_func @k::@sub_xy blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%x : memref<4xf32>, %y : memref<4xf32>)
    gpu.launch_func @k::@sub_yx blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%x : memref<4xf32>, %y : memref<4xf32>)
    return
  }
  gpu.module @k {
    gpu.func @sub_xy(%a: memref<4xf32>, %b: memref<4xf32>) kernel {
      %c0 = arith.constant 0 : index
      %u = memref.load %a[%c0] : memref<4xf32>
      %v = memref.load %b[%c0] : memref<4xf32>
      %d = arith.subf %u, %v : f32
      memref.store %d, %a[%c0] : memref<4xf32>
      gpu.return
    }
    gpu.func @sub_yx(%a: memref<4xf32>, %b: memref<4xf32>) kernel {
      %c0 = arith.constant 0 : index
      %u = memref.load %a[%c0] : memref<4xf32>
      %v = memref.load %b[%c0] : memref<4xf32>
      %d = arith.subf %v, %u : f32
      memref.store %d, %a[%c0] : memref<4xf32>
      gpu.return
    }
  }
}

// -----

// Host functions: identical private functions become one and their calls
// (and symbol references in attributes) follow; public functions stay
// even when identical. Two wrappers that launch identical kernels are
// equal once the kernels are one (inner tables go first).

// CHECK-LABEL: func.func @entry
// CHECK: call @wrap_0(
// CHECK: call @wrap_0(
// CHECK: call @helper_0(
// CHECK: call @helper_0(
// CHECK-NOT: @helper_1
// CHECK: func.func private @helper_0(
// CHECK-NOT: func.func private @helper_1
// CHECK: func.func @public_twin(
// CHECK: func.func @public_twin_copy(
// CHECK: func.func private @wrap_0({{.*}}) attributes {tpgpu.kernel = @kernels::@attention_0}
// CHECK: gpu.launch_func @kernels::@attention_0 blocks
// CHECK-NOT: func.func private @wrap_1
// CHECK: gpu.module @kernels {
// CHECK-NEXT: gpu.func @attention_0(
// CHECK-NOT: gpu.func @attention_1
module attributes {gpu.container_module} {
  func.func @entry(%x: memref<4xf32>) {
    call @wrap_0(%x) : (memref<4xf32>) -> ()
    call @wrap_1(%x) : (memref<4xf32>) -> ()
    call @helper_0(%x) : (memref<4xf32>) -> ()
    call @helper_1(%x) : (memref<4xf32>) -> ()
    return
  }
  func.func private @helper_0(%x: memref<4xf32>) {
    %c0 = arith.constant 0 : index
    %v = memref.load %x[%c0] : memref<4xf32>
    %w = arith.addf %v, %v : f32
    memref.store %w, %x[%c0] : memref<4xf32>
    return
  }
  func.func private @helper_1(%y: memref<4xf32>) {
    %c0 = arith.constant 0 : index
    %v = memref.load %y[%c0] : memref<4xf32>
    %w = arith.addf %v, %v : f32
    memref.store %w, %y[%c0] : memref<4xf32>
    return
  }
  func.func @public_twin(%x: memref<4xf32>) {
    return
  }
  func.func @public_twin_copy(%x: memref<4xf32>) {
    return
  }
  func.func private @wrap_0(%x: memref<4xf32>) attributes {tpgpu.kernel = @kernels::@attention_0} {
    %c1 = arith.constant 1 : index
    gpu.launch_func @kernels::@attention_0 blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%x : memref<4xf32>)
    return
  }
  func.func private @wrap_1(%x: memref<4xf32>) attributes {tpgpu.kernel = @kernels::@attention_1} {
    %c1 = arith.constant 1 : index
    gpu.launch_func @kernels::@attention_1 blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%x : memref<4xf32>)
    return
  }
  gpu.module @kernels {
    gpu.func @attention_0(%a: memref<4xf32>) kernel {
      gpu.return
    }
    gpu.func @attention_1(%a: memref<4xf32>) kernel {
      gpu.return
    }
  }
}

// -----

// A private function that calls another becomes equal to its twin once
// the callees are one (a table is revisited until nothing changes).

// CHECK-LABEL: func.func @chain
// CHECK: call @outer_0(
// CHECK: call @outer_0(
// CHECK: func.func private @outer_0(
// CHECK-NEXT: call @inner_0(
// CHECK-NOT: @outer_1
// CHECK-NOT: @inner_1
module {
  func.func @chain(%x: memref<4xf32>) {
    call @outer_0(%x) : (memref<4xf32>) -> ()
    call @outer_1(%x) : (memref<4xf32>) -> ()
    return
  }
  func.func private @outer_0(%x: memref<4xf32>) {
    call @inner_0(%x) : (memref<4xf32>) -> ()
    return
  }
  func.func private @outer_1(%x: memref<4xf32>) {
    call @inner_1(%x) : (memref<4xf32>) -> ()
    return
  }
  func.func private @inner_0(%x: memref<4xf32>) {
    %c0 = arith.constant 0 : index
    %v = memref.load %x[%c0] : memref<4xf32>
    memref.store %v, %x[%c0] : memref<4xf32>
    return
  }
  func.func private @inner_1(%x: memref<4xf32>) {
    %c0 = arith.constant 0 : index
    %v = memref.load %x[%c0] : memref<4xf32>
    memref.store %v, %x[%c0] : memref<4xf32>
    return
  }
}
