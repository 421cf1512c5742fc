// dlc-pack-gemv: a vector-matrix product whose constant weights exceed 2 MiB reads them from
// contiguous panels of W columns (256 on avx512, 64 on avx2), the last padded with zero columns:
// a batch matmul over the panels, its one row broadcast, reshaped back and sliced to N.
// RUN: dlc-opt %s --cpu-target avx512 --split-input-file -p 'builtin.module(dlc-pack-gemv{model-bytes=0})' | FileCheck %s
// RUN: dlc-opt %s --cpu-target avx2 --split-input-file -p 'builtin.module(dlc-pack-gemv{model-bytes=0})' | FileCheck %s --check-prefix=AVX2

// CHECK-LABEL: func.func @test_head
// CHECK:         %[[ROW:.*]] = "dlc.reshape"(%{{.*}}) {shape = array<i64: 1, 1, 1024>}
// CHECK:         %[[P:.*]] = "dlc.constant"() {value = dense<{{.*}}> : tensor<4x1024x256xf32>}
// CHECK:         %[[Y:.*]] = "dlc.matmul"(%[[ROW]], %[[P]]) : (tensor<1x1x1024xf32>, tensor<4x1024x256xf32>) -> tensor<4x1x256xf32>
// CHECK:         %[[F:.*]] = "dlc.reshape"(%[[Y]]) {shape = array<i64: 1, 1024>}
// CHECK:         %[[S:.*]] = "dlc.slice"(%[[F]]) {{.*}} -> tensor<1x1000xf32>
// CHECK:         "dlc.reshape"(%[[S]]) {shape = array<i64: 1, 1, 1000>}
// AVX2-LABEL:  func.func @test_head
// AVX2:          tensor<16x1024x64xf32>
func.func @test_head(%a: tensor<1x1x1024xf32>) -> tensor<1x1x1000xf32> {
  %w = "dlc.constant"() {value = dense<0.5> : tensor<1024x1000xf32>} : () -> tensor<1024x1000xf32>
  %y = "dlc.matmul"(%a, %w) : (tensor<1x1x1024xf32>, tensor<1024x1000xf32>) -> tensor<1x1x1000xf32>
  return %y : tensor<1x1x1000xf32>
}

// -----

// A Gemm with transposed weights and a bias: the weights transposed at compile time, the bias
// added to the product.
// CHECK-LABEL: func.func @test_gemm_bias
// CHECK:         "dlc.matmul"(%{{.*}}, %{{.*}}) : (tensor<1x1x768xf32>, tensor<3x768x256xf32>) -> tensor<3x1x256xf32>
// CHECK:         "dlc.add"(%{{.*}}, %{{.*}}) : (tensor<1x768xf32>, tensor<768xf32>) -> tensor<1x768xf32>
func.func @test_gemm_bias(%a: tensor<1x768xf32>, %c: tensor<768xf32>) -> tensor<1x768xf32> {
  %w = "dlc.constant"() {value = dense<0.25> : tensor<768x768xf32>} : () -> tensor<768x768xf32>
  %y = "dlc.gemm"(%a, %w, %c) {alpha = 1.0 : f32, beta = 1.0 : f32, transA = 0 : i64, transB = 1 : i64} : (tensor<1x768xf32>, tensor<768x768xf32>, tensor<768xf32>) -> tensor<1x768xf32>
  return %y : tensor<1x768xf32>
}

// -----

// Two rows, or weights that fit the L2 cache (512 KiB here): left alone.
// CHECK-LABEL: func.func @test_left_alone
// CHECK:         "dlc.matmul"(%{{.*}}, %{{.*}}) : (tensor<2x1024xf32>, tensor<1024x1000xf32>)
// CHECK:         "dlc.matmul"(%{{.*}}, %{{.*}}) : (tensor<1x512xf32>, tensor<512x256xf32>)
func.func @test_left_alone(%a: tensor<2x1024xf32>, %b: tensor<1x512xf32>) -> (tensor<2x1000xf32>, tensor<1x256xf32>) {
  %w = "dlc.constant"() {value = dense<0.5> : tensor<1024x1000xf32>} : () -> tensor<1024x1000xf32>
  %v = "dlc.constant"() {value = dense<0.5> : tensor<512x256xf32>} : () -> tensor<512x256xf32>
  %y = "dlc.matmul"(%a, %w) : (tensor<2x1024xf32>, tensor<1024x1000xf32>) -> tensor<2x1000xf32>
  %z = "dlc.matmul"(%b, %v) : (tensor<1x512xf32>, tensor<512x256xf32>) -> tensor<1x256xf32>
  return %y, %z : tensor<2x1000xf32>, tensor<1x256xf32>
}

// -----

// A model whose constants fit the last-level cache (64 MiB by default) is left alone: its
// weights are read from L3 at every call, strided rows or not.
// RUN: dlc-opt %s --cpu-target avx512 --split-input-file -p 'builtin.module(dlc-pack-gemv)' | FileCheck %s --check-prefix=SMALL
// SMALL-LABEL: func.func @test_head
// SMALL:         "dlc.matmul"(%{{.*}}, %{{.*}}) : (tensor<1x1x1024xf32>, tensor<1024x1000xf32>)
