// A vector-matrix product (M = 1: a classifier's Gemm) reads B once, row by row: its cache
// loop runs over k (16 rows of B per step), all of N inside it by [1, 32] register tiles,
// each accumulating its 16 rows (vector.fma); with N outside k, each tile read a 128-byte
// strip of every row of B, a row apart (MobileNetV2's 1280 x 1000 Gemm: 1.1 -> 0.5 ms).
// RUN: dlc-opt %s --cpu-target=avx512 -O2 --until=linalg | FileCheck %s

// CHECK-LABEL: func.func @test_vector_matrix
// CHECK:         scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step %c16
// CHECK:           tensor.extract_slice %{{.*}}[%[[K]], 0] [16, 96] [1, 1] : tensor<512x96xf32> to tensor<16x96xf32>
// CHECK:           scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c32
// CHECK:             scf.for %{{.*}} = %{{.*}} to %c16 step %c1 iter_args(%{{.*}} = %{{.*}}) -> (vector<32xf32>)
// CHECK:               vector.fma {{.*}} : vector<32xf32>
func.func @test_vector_matrix(%a: tensor<1x512xf32>, %b: tensor<512x96xf32>) -> tensor<1x96xf32> {
  %0 = "dlc.matmul"(%a, %b) : (tensor<1x512xf32>, tensor<512x96xf32>) -> tensor<1x96xf32>
  return %0 : tensor<1x96xf32>
}
