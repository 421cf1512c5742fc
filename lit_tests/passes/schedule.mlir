// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-schedule)' | FileCheck %s

// A 16x64x32 matmul: register tile 8x32 (two loops), a k loop carrying the 8x32 accumulator
// in registers (hoisted out of it), one vector.fma per accumulator row per k.

// CHECK-LABEL: func.func @test_matmul
// CHECK-NOT:     linalg.matmul
// CHECK:         scf.for {{.*}} step %c8
// CHECK:           scf.for {{.*}} step %c32
// CHECK:             vector.transfer_read {{.*}} : tensor<8x32xf32>, vector<8x32xf32>
// CHECK:             scf.for {{.*}} iter_args(%[[ACC:.*]] = %{{.*}}) -> (vector<8x32xf32>)
// CHECK-COUNT-8:       vector.fma {{.*}} : vector<32xf32>
// CHECK:             vector.transfer_write {{.*}} : vector<8x32xf32>, tensor<8x32xf32>
func.func @test_matmul(%a: tensor<16x32xf32>, %b: tensor<32x64xf32>, %c: tensor<16x64xf32>) -> tensor<16x64xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<16x32xf32>, tensor<32x64xf32>) outs(%c : tensor<16x64xf32>) -> tensor<16x64xf32>
  return %0 : tensor<16x64xf32>
}

// -----

// M = 13 and N = 40 do not divide the 8x32 register tile: the op is split into 8x32, 8x8,
// 5x32 and 5x8 parts (no masks, no dynamic shapes).

// CHECK-LABEL: func.func @test_matmul_remainders
// CHECK-NOT:     linalg.matmul
// CHECK-NOT:     vector.mask
// CHECK-DAG:     vector.transfer_read {{.*}} : tensor<8x32xf32>, vector<8x32xf32>
// CHECK-DAG:     vector.transfer_read {{.*}} : tensor<4x8xf32>, vector<4x8xf32>
// CHECK-DAG:     vector.transfer_read {{.*}} : tensor<5x32xf32>, vector<5x32xf32>
// CHECK-DAG:     vector.transfer_read {{.*}} : tensor<5x8xf32>, vector<5x8xf32>
func.func @test_matmul_remainders(%a: tensor<13x64xf32>, %b: tensor<64x40xf32>, %c: tensor<13x40xf32>) -> tensor<13x40xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<13x64xf32>, tensor<64x40xf32>) outs(%c : tensor<13x40xf32>) -> tensor<13x40xf32>
  return %0 : tensor<13x40xf32>
}

// -----

// Below the volume threshold (16^3 < 32^3 multiply-adds) the naive path keeps the op.

// CHECK-LABEL: func.func @test_tiny_matmul
// CHECK:         linalg.matmul
// CHECK-NOT:     vector.
func.func @test_tiny_matmul(%a: tensor<16x16xf32>, %b: tensor<16x16xf32>, %c: tensor<16x16xf32>) -> tensor<16x16xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<16x16xf32>, tensor<16x16xf32>) outs(%c : tensor<16x16xf32>) -> tensor<16x16xf32>
  return %0 : tensor<16x16xf32>
}

// -----

// With min-volume lowered, the same op is scheduled.

// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-schedule{min-volume=1})' | FileCheck %s --check-prefix=ALL
// ALL-LABEL: func.func @test_tiny_matmul_scheduled
// ALL-NOT:     linalg.matmul
// ALL:         vector.fma
func.func @test_tiny_matmul_scheduled(%a: tensor<16x16xf32>, %b: tensor<16x16xf32>, %c: tensor<16x16xf32>) -> tensor<16x16xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<16x16xf32>, tensor<16x16xf32>) outs(%c : tensor<16x16xf32>) -> tensor<16x16xf32>
  return %0 : tensor<16x16xf32>
}
