// dlc-schedule on the rows of a softmax, for the threads: an op of at least
// reduction.THREAD_MIN (32 Ki) elements has its row tiles in an scf.forall (OpenMP iterations
// with num_threads > 1, a loop with one thread: the same code); a smaller one keeps scf.for
// loops (a parallel region costs more than it saves there).
// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-schedule)' | FileCheck %s

#rows = affine_map<(d0, d1) -> (d0, d1)>
#out = affine_map<(d0, d1) -> (d0)>
#row = affine_map<(d0, d1) -> (d0, 0)>

// 197 rows = 24 * 8 + 5 of 197 = 12 * 16 + 5 (38,809 elements): the max's main part (192 x
// 192) is a forall of 24 row tiles, its remainders (under 32 Ki elements) serial loops; the
// row broadcast is a forall of one row per iteration.
// CHECK-LABEL: func.func @test_softmax_rows_forall
// CHECK-NOT:     linalg.generic
// CHECK:         scf.forall (%{{.*}}) in (24)
// CHECK:           vector.multi_reduction <maximumf>, {{.*}} : vector<8x16xf32> to vector<8xf32>
// CHECK:         scf.forall (%{{.*}}) in (197)
// CHECK:           arith.subf {{.*}} : vector<
func.func @test_softmax_rows_forall(%x: tensor<197x197xf32>) -> tensor<197x197xf32> {
  %lowest = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<197xf32>
  %init = linalg.fill ins(%lowest : f32) outs(%e : tensor<197xf32>) -> tensor<197xf32>
  %max = linalg.generic {indexing_maps = [#rows, #out], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<197x197xf32>) outs(%init : tensor<197xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %m = arith.maximumf %acc, %in : f32
    linalg.yield %m : f32
  } -> tensor<197xf32>
  %max2 = tensor.expand_shape %max [[0, 1]] output_shape [197, 1] : tensor<197xf32> into tensor<197x1xf32>
  %o = tensor.empty() : tensor<197x197xf32>
  %y = linalg.generic {indexing_maps = [#rows, #row, #rows], iterator_types = ["parallel", "parallel"]} ins(%x, %max2 : tensor<197x197xf32>, tensor<197x1xf32>) outs(%o : tensor<197x197xf32>) {
  ^bb0(%in: f32, %m: f32, %out: f32):
    %d = arith.subf %in, %m : f32
    linalg.yield %d : f32
  } -> tensor<197x197xf32>
  return %y : tensor<197x197xf32>
}

// -----

#rows = affine_map<(d0, d1) -> (d0, d1)>
#out = affine_map<(d0, d1) -> (d0)>
#row = affine_map<(d0, d1) -> (d0, 0)>

// 32 rows of 256 (8,192 elements): serial row loops, no forall.
// CHECK-LABEL: func.func @test_small_softmax_rows_serial
// CHECK-NOT:     scf.forall
// CHECK:         scf.for {{.*}} step %c8
// CHECK:           vector.multi_reduction <maximumf>
// CHECK-NOT:     scf.forall
// CHECK:         arith.subf {{.*}} : vector<64xf32>
// CHECK-NOT:     scf.forall
func.func @test_small_softmax_rows_serial(%x: tensor<32x256xf32>) -> tensor<32x256xf32> {
  %lowest = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<32xf32>
  %init = linalg.fill ins(%lowest : f32) outs(%e : tensor<32xf32>) -> tensor<32xf32>
  %max = linalg.generic {indexing_maps = [#rows, #out], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<32x256xf32>) outs(%init : tensor<32xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %m = arith.maximumf %acc, %in : f32
    linalg.yield %m : f32
  } -> tensor<32xf32>
  %max2 = tensor.expand_shape %max [[0, 1]] output_shape [32, 1] : tensor<32xf32> into tensor<32x1xf32>
  %o = tensor.empty() : tensor<32x256xf32>
  %y = linalg.generic {indexing_maps = [#rows, #row, #rows], iterator_types = ["parallel", "parallel"]} ins(%x, %max2 : tensor<32x256xf32>, tensor<32x1xf32>) outs(%o : tensor<32x256xf32>) {
  ^bb0(%in: f32, %m: f32, %out: f32):
    %d = arith.subf %in, %m : f32
    linalg.yield %d : f32
  } -> tensor<32x256xf32>
  return %y : tensor<32x256xf32>
}
