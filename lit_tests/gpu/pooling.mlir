// RUN: dlc-opt %s -p %gpu-kernels | FileCheck %s
// RUN: dlc-opt %s -p %gpu-ptx | FileCheck %s --check-prefix=PTX

// A max pool: the fill of its output with -inf, then one thread per output element
// (1x4x4x4 = 64: one block of 64 threads) with the window as loops.

// CHECK-LABEL: func.func @test_max_pool
// CHECK:         gpu.launch_func
// CHECK:         gpu.launch_func
// CHECK:       gpu.module
// CHECK:       gpu.module
// CHECK:         gpu.func @{{.*}} kernel attributes {known_block_size = array<i32: 64, 1, 1>, known_grid_size = array<i32: 1, 1, 1>}
// CHECK:           scf.for
// CHECK:             scf.for
// CHECK:               arith.maximumf

// PTX:       gpu.binary @test_max_pool_kernel_0 {{.*}}.visible .entry test_max_pool_kernel_0({{.*}}max{{.*}}.f32
func.func @test_max_pool(%x: tensor<1x4x5x5xf32>) -> tensor<1x4x4x4xf32> {
  %0 = "dlc.pool"(%x) {kind = "max", kernel = array<i64: 2, 2>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, ceil_mode = 0, count_include_pad = 0, p = 2} : (tensor<1x4x5x5xf32>) -> tensor<1x4x4x4xf32>
  return %0 : tensor<1x4x4x4xf32>
}
