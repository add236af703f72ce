// Bad pass options: each is a located error and exit code 1.
// RUN: %expect-exit 1 tp-opt %s --tp-propagate="tp=-2" 2>&1 | FileCheck %s --check-prefix=NEG
// RUN: %expect-exit 1 tp-opt %s --tp-propagate="tp=4 device=tpu-v9" 2>&1 | FileCheck %s --check-prefix=DEVICE
// RUN: %expect-exit 1 tp-opt %s --tp-propagate="tp=4 memory-budget=lots" 2>&1 | FileCheck %s --check-prefix=BUDGET
// RUN: %expect-exit 1 tp-opt %s --tp-propagate="tp=4 sequence-parallel=maybe" 2>&1 | FileCheck %s --check-prefix=SP
// RUN: %expect-exit 1 tp-opt %s --tp-propagate="tp=4 link-bandwidth=-5" 2>&1 | FileCheck %s --check-prefix=BW
// RUN: %expect-exit 1 tp-opt %s --tp-propagate="tp=4 link-bandwidth=0" 2>&1 | FileCheck %s --check-prefix=BW0
// RUN: %expect-exit 1 tp-opt %s --tp-propagate="tp=4 peak-flops=1e-310" 2>&1 | FileCheck %s --check-prefix=FLOPS
// RUN: %expect-exit 1 tp-opt %s --tp-propagate="tp=4 memory-bandwidth=0.5" 2>&1 | FileCheck %s --check-prefix=MEMBW
// RUN: %expect-exit 1 tp-opt %s --tp-propagate="tp=4 link-latency=1e300" 2>&1 | FileCheck %s --check-prefix=LAT
// RUN: %expect-exit 1 tp-opt %s --tp-propagate="tp=0" 2>&1 | FileCheck %s --check-prefix=TP0
// RUN: %expect-exit 1 tp-opt %s --tp-propagate="tp=4 search-axes=-1" 2>&1 | FileCheck %s --check-prefix=SEARCH
// RUN: %expect-exit 1 tp-opt %s --tp-propagate="mesh=nope" 2>&1 | FileCheck %s --check-prefix=MESH
// RUN: %expect-exit 1 tp-opt %s --tp-propagate="tp=two" 2>&1 | FileCheck %s --check-prefix=PARSE
// RUN: %expect-exit 1 tp-opt %s --tp-propagate="tp=4 report=/nonexistent-dir/r.json" 2>&1 | FileCheck %s --check-prefix=REPORT
// RUN: %expect-exit 1 tp-opt %s --tp-propagate="tp=4 param-share=0.5" 2>&1 | FileCheck %s --check-prefix=SHARE
// RUN: %expect-exit 1 tp-opt %s --tp-propagate="tp=4 large-constant-bytes=0" 2>&1 | FileCheck %s --check-prefix=CONST
// RUN: %expect-exit 1 tp-opt %s --tp-propagate="tp=4 mesh-axes=dp=2,tp=2" 2>&1 | FileCheck %s --check-prefix=AXES-TP
// RUN: %expect-exit 1 tp-opt %s --tp-propagate="mesh-axes=dp=2,tp" 2>&1 | FileCheck %s --check-prefix=AXES-SYNTAX
// RUN: %expect-exit 1 tp-opt %s --tp-propagate="mesh-axes=dp=0" 2>&1 | FileCheck %s --check-prefix=AXES-ZERO
// RUN: %expect-exit 1 tp-opt %s --tp-propagate="mesh-axes=tp=2,tp=4" 2>&1 | FileCheck %s --check-prefix=AXES-TWICE
// RUN: %expect-exit 1 tp-opt %s --tp-propagate="tp=4 batch-axis=dp" 2>&1 | FileCheck %s --check-prefix=BATCH-AXIS
// RUN: %expect-exit 1 tp-opt %s --tp-propagate="mesh-axes=dp=3,tp=2 batch-axis=dp" 2>&1 | FileCheck %s --check-prefix=BATCH-DIV
// RUN: %expect-exit 0 tp-opt %s --tp-propagate="tp=4 memory-budget=1Gi device=a100-nvlink sequence-parallel=off" -o /dev/null

// NEG: error: tp-propagate: tp=-2 must be at least 1
// DEVICE: error: tp-propagate: unknown device profile 'tpu-v9'; known: h100-nvlink, h200-nvlink, a100-nvlink, h100-pcie
// BUDGET: error: tp-propagate: memory-budget='lots' is neither 'none' nor a positive number of bytes
// SP: error: tp-propagate: sequence-parallel='maybe' must be auto, on or off
// BW: error: tp-propagate: link-bandwidth=-5 must be from 1 to 1e30 bytes/s (-1, the default, keeps the device's)
// BW0: error: tp-propagate: link-bandwidth=0 must be from 1 to 1e30 bytes/s (-1, the default, keeps the device's)
// FLOPS: error: tp-propagate: peak-flops=1e-310 must be from 1 to 1e30 FLOP/s
// MEMBW: error: tp-propagate: memory-bandwidth=0.5 must be from 1 to 1e30 bytes/s
// LAT: error: tp-propagate: link-latency=1e+300 must be at most 1e6 seconds
// TP0: error: tp-propagate: tp=0 must be at least 1
// SEARCH: error: tp-propagate: search-axes=-1 must not be negative (0: every axis on its own)
// MESH: error: tp-propagate: mesh=nope names no tp.mesh
// SHARE: error: tp-propagate: param-share=0.50 must be at least 1 (parameters cannot take less than their share)
// CONST: error: tp-propagate: large-constant-bytes=0 must be at least 1
// PARSE: for the --tp option: 'two' value invalid for long argument
// REPORT: error: tp-propagate: cannot write report '/nonexistent-dir/r.json'
// AXES-TP: error: tp-propagate: tp=4 and mesh-axes=dp=2,tp=2 both give a mesh; drop one
// AXES-SYNTAX: error: tp-propagate: mesh-axes='dp=2,tp': 'tp' is not NAME=SIZE with a size from 1 to 1048576
// AXES-ZERO: error: tp-propagate: mesh-axes='dp=0': 'dp=0' is not NAME=SIZE with a size from 1 to 1048576
// AXES-TWICE: error: tp-propagate: mesh-axes='tp=2,tp=4' names axis "tp" twice
// BATCH-AXIS: error: tp-propagate: batch-axis=dp is not an axis of mesh @tp
// BATCH-DIV: error: tp-propagate: batch-axis=dp: dimension 0 of argument #0 of 'f' has size 8, which mesh axis "dp" (3) does not divide

func.func @f(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %y = math.exp %x : tensor<8x8xf32>
  return %y : tensor<8x8xf32>
}
