// RUN: dlc-opt %s -p %gpu-kernels | FileCheck %s
// RUN: dlc-opt %s -p %gpu-ptx | FileCheck %s --check-prefix=PTX

// A matmul is two kernels: the fill of its output, then one thread per output element
// with the reduction over K as a loop (64x48 = 3072 threads, 12 blocks of 256).

// CHECK-LABEL: func.func @test_matmul
// CHECK:         gpu.launch_func @[[FILL:.*]]::@{{.*}} blocks in
// CHECK:         gpu.launch_func @[[MM:.*]]::@{{.*}} blocks in
// CHECK:       gpu.module @[[MM]]
// CHECK:         gpu.func @{{.*}} kernel attributes {known_block_size = array<i32: 256, 1, 1>, known_grid_size = array<i32: 12, 1, 1>}
// CHECK:           gpu.block_id x
// CHECK:           gpu.thread_id x
// CHECK:           scf.if
// CHECK:             scf.for
// CHECK:               memref.load
// CHECK:               memref.load
// CHECK:               arith.mulf
// CHECK:               arith.addf
// CHECK:               memref.store

// PTX:       gpu.binary @test_matmul_kernel_0 {{.*}}.visible .entry test_matmul_kernel_0({{.*}}mul.rn.f32{{.*}}add.rn.f32
func.func @test_matmul(%a: tensor<64x32xf32>, %b: tensor<32x48xf32>) -> tensor<64x48xf32> {
  %0 = "dlc.matmul"(%a, %b) : (tensor<64x32xf32>, tensor<32x48xf32>) -> tensor<64x48xf32>
  return %0 : tensor<64x48xf32>
}
