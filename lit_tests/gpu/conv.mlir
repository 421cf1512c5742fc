// RUN: dlc-opt %s -p %gpu-kernels | FileCheck %s
// RUN: dlc-opt %s -p %gpu-ptx | FileCheck %s --check-prefix=PTX

// A padded conv: the padded input (fill, then a linalg.copy kernel of the interior: no
// host-side memrefCopy on device memory), the fill of the output, then the conv with one
// thread per output element and its reductions (C, KH, KW) as loops.

// CHECK-LABEL: func.func @test_conv
// CHECK:         %[[PADDED:.*]] = gpu.alloc () : memref<1x3x10x10xf32>
// CHECK:         gpu.launch_func {{.*}} args(%{{.*}} : f32, %[[PADDED]] : memref<1x3x10x10xf32>)
// CHECK:         %[[INTERIOR:.*]] = memref.subview %[[PADDED]][0, 0, 1, 1] [1, 3, 8, 8]
// CHECK:         gpu.launch_func {{.*}} args(%{{.*}} : memref<1x3x8x8xf32>, %[[INTERIOR]] : memref<1x3x8x8xf32, strided<[300, 100, 10, 1], offset: 11>>)
// CHECK:         gpu.launch_func
// CHECK:         gpu.launch_func {{.*}} args(%[[PADDED]] : memref<1x3x10x10xf32>
// CHECK-NOT:     memref.copy
// CHECK:       gpu.module
// CHECK:       gpu.module
// CHECK:       gpu.module
// CHECK:       gpu.module
// CHECK:         gpu.func @{{.*}} kernel attributes {known_block_size = array<i32: 256, 1, 1>, known_grid_size = array<i32: 2, 1, 1>}
// CHECK:           scf.if
// CHECK:             scf.for
// CHECK:               scf.for
// CHECK:                 scf.for
// CHECK:                   arith.mulf

// PTX-COUNT-4: .visible .entry test_conv_kernel{{(_[0-9]+)?}}(
func.func @test_conv(%x: tensor<1x3x8x8xf32>, %w: tensor<8x3x3x3xf32>) -> tensor<1x8x8x8xf32> {
  %0 = "dlc.conv"(%x, %w) {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, group = 1} : (tensor<1x3x8x8xf32>, tensor<8x3x3x3xf32>) -> tensor<1x8x8x8xf32>
  return %0 : tensor<1x8x8x8xf32>
}
