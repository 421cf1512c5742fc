// dlc-schedule packs a large matmul (mmt4d-style data tiling): A is copied to [M/8][K][8] and
// B to [N/32][K][32] by vectorized transposes (B's read row by row), and the product is a generic over
// (mb, nb, m0, n0, k) writing the row-major result, tiled by an scf.forall, its 8 x 32 (AVX-512)
// register tile a contracting multiply-add whose accumulator stays in registers over k.
// A matmul with a short reduction (K < 128) keeps the plain schedule (vector.fma).
// RUN: dlc-opt %s -p 'builtin.module(dlc-schedule{target=avx512})' --split-input-file | FileCheck %s
// RUN: dlc-opt %s -p 'builtin.module(dlc-schedule{target=avx2})' --split-input-file | FileCheck %s --check-prefix=AVX2

// On an AVX2 CPU (`codegen/target.py`) the register tile is 4 x 16: A packed to [M/4][K][4], B
// to [N/16][K][16].
// AVX2-LABEL: func.func @test_packed
// AVX2:         vector.transpose {{.*}} : vector<1x4x16xf32> to vector<1x16x4xf32>
// AVX2:         tensor.extract_slice %{{.*}}[%{{.*}}, %{{.*}}, 0] [8, 1, 16]
// AVX2:         scf.forall (%{{.*}}, %{{.*}}) = (0, 0) to (64, 16) step (32, 8)
// AVX2:           scf.for {{.*}} iter_args({{.*}}) -> (vector<4x16xf32>)
// AVX2:             arith.mulf {{.*}} fastmath<contract> : vector<4x16xf32>
// AVX2:             arith.addf {{.*}} fastmath<contract> : vector<4x16xf32>
// AVX2-NOT:     vector<8x32xf32>

// CHECK-LABEL: func.func @test_packed
// CHECK-NOT:     linalg.matmul
// CHECK:         vector.transpose {{.*}} : vector<1x8x16xf32> to vector<1x16x8xf32>
// B's pack reads B's rows in order: its k loop (step 8) is outside its panel loop (nb, step 1)
// CHECK:         scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step %c8
// CHECK-NEXT:      scf.for %[[NB:.*]] = %{{.*}} to %{{.*}} step %c1
// CHECK-NEXT:        tensor.extract_slice %{{.*}}[%[[K]], %[[NB]], 0] [8, 1, 32]
// CHECK:         vector.transpose {{.*}} : vector<8x1x32xf32> to vector<1x8x32xf32>
// (128 x 128 output tiles, 2 x 2 of them: 32 row panels of 8 by 16, 8 column panels of 32 by 4; for the threads, matmul.thread_tiles)
// CHECK:         scf.forall (%{{.*}}, %{{.*}}) = (0, 0) to (32, 8) step (16, 4)
// CHECK:           scf.for {{.*}} iter_args({{.*}}) -> (vector<8x32xf32>)
// CHECK:             arith.mulf {{.*}} fastmath<contract> : vector<8x32xf32>
// CHECK:             arith.addf {{.*}} fastmath<contract> : vector<8x32xf32>
// CHECK:           scf.forall.in_parallel
// CHECK-NOT:     linalg.matmul
func.func @test_packed(%a: tensor<256x256xf32>, %b: tensor<256x256xf32>) -> tensor<256x256xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<256x256xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<256x256xf32>) -> tensor<256x256xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<256x256xf32>, tensor<256x256xf32>) outs(%acc : tensor<256x256xf32>) -> tensor<256x256xf32>
  return %mm : tensor<256x256xf32>
}

// -----

// CHECK-LABEL: func.func @test_short_reduction
// CHECK-NOT:     fastmath<contract>
// CHECK:         vector.fma
func.func @test_short_reduction(%a: tensor<1024x64xf32>, %b: tensor<64x1024xf32>) -> tensor<1024x1024xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1024x1024xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<1024x64xf32>, tensor<64x1024xf32>) outs(%acc : tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  return %mm : tensor<1024x1024xf32>
}
