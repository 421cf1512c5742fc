// RUN: dlc-opt %s -p 'builtin.module(dlc-gpu-name-kernels)' | FileCheck %s

// Each outlined kernel takes its module's (unique) name, and its launches follow, so that a
// profiler's rows are kernels, not one `main_kernel` for all.

// CHECK-LABEL: func.func @test_names
// CHECK:         gpu.launch_func @main_kernel::@main_kernel blocks
// CHECK:         gpu.launch_func @main_kernel_0::@main_kernel_0 blocks
// CHECK:       gpu.module @main_kernel {
// CHECK-NEXT:    gpu.func @main_kernel() kernel
// CHECK:       gpu.module @main_kernel_0 {
// CHECK-NEXT:    gpu.func @main_kernel_0() kernel
module attributes {gpu.container_module} {
  func.func @test_names() {
    %c1 = arith.constant 1 : index
    gpu.launch_func @main_kernel::@main_kernel blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
    gpu.launch_func @main_kernel_0::@main_kernel blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
    return
  }
  gpu.module @main_kernel {
    gpu.func @main_kernel() kernel {
      gpu.return
    }
  }
  gpu.module @main_kernel_0 {
    gpu.func @main_kernel() kernel {
      gpu.return
    }
  }
}
