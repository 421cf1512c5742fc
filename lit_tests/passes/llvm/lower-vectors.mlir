// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-lower-vectors)' | FileCheck %s

// A 2-D transfer pair becomes one 1-D load and store per row (transfer rank 1, unrolled).

// CHECK-LABEL: func.func @test_transfer_2d
// CHECK-NOT:     vector.transfer_read
// CHECK-COUNT-4: vector.load {{.*}} : memref<4x32xf32>, vector<32xf32>
// CHECK-COUNT-4: vector.store {{.*}} : memref<4x32xf32>, vector<32xf32>
func.func @test_transfer_2d(%src: memref<4x32xf32>, %dst: memref<4x32xf32>) {
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0.0 : f32
  %v = vector.transfer_read %src[%c0, %c0], %pad {in_bounds = [true, true]} : memref<4x32xf32>, vector<4x32xf32>
  vector.transfer_write %v, %dst[%c0, %c0] {in_bounds = [true, true]} : vector<4x32xf32>, memref<4x32xf32>
  return
}

// -----

// A vector.contract (a 2x1 by 1x16 outer product accumulated) lowers to FMAs.

// CHECK-LABEL: func.func @test_contract
// CHECK-NOT:     vector.contract
// CHECK-COUNT-2: vector.fma {{.*}} : vector<16xf32>
#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (k, n)>
#c = affine_map<(m, n, k) -> (m, n)>
func.func @test_contract(%a: vector<2x1xf32>, %b: vector<1x16xf32>, %c: vector<2x16xf32>) -> vector<2x16xf32> {
  %0 = vector.contract {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"], kind = #vector.kind<add>} %a, %b, %c : vector<2x1xf32>, vector<1x16xf32> into vector<2x16xf32>
  return %0 : vector<2x16xf32>
}

// -----

// A function without vector ops is left as it is.

// CHECK-LABEL: func.func @test_no_vectors
// CHECK-NEXT:    return
func.func @test_no_vectors() {
  return
}

// -----

// An operand broadcast along the inner dim (the vectorizer's broadcast to vector<32x4> and
// transpose to vector<4x32>) becomes rows of one element each, not a flattened 128-lane
// shuffle (slow for LLVM to compile).

// CHECK-LABEL: func.func @test_broadcast_rows
// CHECK-NOT:     vector.transpose
// CHECK-NOT:     vector.shuffle
// CHECK-COUNT-4: vector.extract %{{.*}}[{{[0-3]}}] : f32 from vector<4xf32>
// CHECK-NOT:     vector.shuffle
func.func @test_broadcast_rows(%x: vector<4xf32>, %y: vector<4x32xf32>) -> vector<4x32xf32> {
  %b = vector.broadcast %x : vector<4xf32> to vector<32x4xf32>
  %t = vector.transpose %b, [1, 0] : vector<32x4xf32> to vector<4x32xf32>
  %s = arith.addf %t, %y : vector<4x32xf32>
  return %s : vector<4x32xf32>
}
