// RUN: tp-opt %s --tp-merge-gpu-modules | FileCheck %s
// Outlined kernels move into one gpu.module, named after their old modules;
// launches follow. A module with a target attached stays apart.

// CHECK-LABEL: func.func @forward
// CHECK: gpu.launch_func @tp_kernels::@forward_kernel blocks
// CHECK: gpu.launch_func @tp_kernels::@forward_kernel_0 blocks
// CHECK: gpu.launch_func @with_target::@k blocks
// CHECK: gpu.module @tp_kernels {
// CHECK-NEXT: gpu.func @forward_kernel(%{{.*}}: memref<4xf32>) kernel
// CHECK: gpu.func @forward_kernel_0(%{{.*}}: memref<4xf32>) kernel
// CHECK-NOT: gpu.module @forward_kernel
// CHECK: gpu.module @with_target [#nvvm.target]
// CHECK-NOT: gpu.module @forward_kernel
module attributes {gpu.container_module} {
  func.func @forward(%x: memref<4xf32>) {
    %c1 = arith.constant 1 : index
    gpu.launch_func @forward_kernel::@forward_kernel blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%x : memref<4xf32>)
    gpu.launch_func @forward_kernel_0::@forward_kernel blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%x : memref<4xf32>)
    gpu.launch_func @with_target::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%x : memref<4xf32>)
    return
  }
  gpu.module @forward_kernel {
    gpu.func @forward_kernel(%arg0: memref<4xf32>) kernel {
      gpu.return
    }
  }
  gpu.module @forward_kernel_0 {
    gpu.func @forward_kernel(%arg0: memref<4xf32>) kernel {
      gpu.return
    }
  }
  gpu.module @with_target [#nvvm.target] {
    gpu.func @k(%arg0: memref<4xf32>) kernel {
      gpu.return
    }
  }
}
