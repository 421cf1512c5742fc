// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-schedule{target=avx512})' | FileCheck %s
// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-schedule{target=avx2})' | FileCheck %s --check-prefix=AVX2

// A 16x64x32 matmul: register tile 8x32 (two loops), a k loop carrying the 8x32 accumulator
// in registers (hoisted out of it), one vector.fma per accumulator row per k.

// The same on an AVX2 CPU (16 ymm registers of 8 lanes, `codegen/target.py`): a 4x16 tile.
// AVX2-LABEL: func.func @test_matmul
// AVX2:         scf.for {{.*}} step %c4
// AVX2:           scf.for {{.*}} step %c16
// AVX2:             scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}) -> (vector<4x16xf32>)
// AVX2-COUNT-4:       vector.fma {{.*}} : vector<16xf32>
// AVX2-NOT:         vector<8x32xf32>

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

// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-schedule{min-volume=1 target=avx512})' | FileCheck %s --check-prefix=ALL
// ALL-LABEL: func.func @test_tiny_matmul_scheduled
// ALL-NOT:     linalg.matmul
// ALL:         vector.fma
func.func @test_tiny_matmul_scheduled(%a: tensor<16x16xf32>, %b: tensor<16x16xf32>, %c: tensor<16x16xf32>) -> tensor<16x16xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<16x16xf32>, tensor<16x16xf32>) outs(%c : tensor<16x16xf32>) -> tensor<16x16xf32>
  return %0 : tensor<16x16xf32>
}
