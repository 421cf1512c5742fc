// dlc-schedule on the rows of a softmax: the max (and sum) along the innermost loop keeps an
// 8x16 tile of partial results in registers while the row is read 16 elements at a time, then
// merges it once per 8 rows (vector.multi_reduction); the op subtracting the row max
// (broadcast along the row: map (d0, d1) -> (d0, 0)) is vectorized 64 elements at a time, the
// broadcast of the row's max read once per row (loop-invariant code motion). Both ops have
// more than reduction.THREAD_MIN elements: their row tiles are scf.forall iterations (threads).
// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-schedule)' | FileCheck %s

#rows3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#out3 = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0, 0)>

// CHECK-LABEL: func.func @test_row_max_then_subtract
// CHECK-NOT:     linalg.generic
// CHECK:         scf.forall (%{{.*}}) in (16)
// CHECK:           scf.for {{.*}} step %c16 iter_args(%{{.*}} = %{{.*}}) -> (vector<8x1x16xf32>)
// CHECK:             arith.maximumf {{.*}} : vector<8x1x16xf32>
// CHECK:           vector.multi_reduction <maximumf>, {{.*}} [2] : vector<8x1x16xf32> to vector<8x1xf32>
// CHECK:         scf.forall (%{{.*}}) in (128)
// CHECK:           vector.transfer_read {{.*}} permutation_map = {{.*}} : tensor<1x1xf32>, vector<64xf32>
// CHECK:           scf.for {{.*}} step %c64
// CHECK:             arith.subf {{.*}} : vector<64xf32>
func.func @test_row_max_then_subtract(%x: tensor<128x768xf32>) -> tensor<128x768xf32> {
  %lowest = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<128x1xf32>
  %init = linalg.fill ins(%lowest : f32) outs(%e : tensor<128x1xf32>) -> tensor<128x1xf32>
  %x3 = tensor.expand_shape %x [[0, 1], [2]] output_shape [128, 1, 768] : tensor<128x768xf32> into tensor<128x1x768xf32>
  %max = linalg.generic {indexing_maps = [#rows3, #out3], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x3 : tensor<128x1x768xf32>) outs(%init : tensor<128x1xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %m = arith.maximumf %acc, %in : f32
    linalg.yield %m : f32
  } -> tensor<128x1xf32>
  %out = tensor.empty() : tensor<128x768xf32>
  %y = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %max : tensor<128x768xf32>, tensor<128x1xf32>) outs(%out : tensor<128x768xf32>) {
  ^bb0(%in: f32, %m: f32, %o: f32):
    %d = arith.subf %in, %m : f32
    linalg.yield %d : f32
  } -> tensor<128x768xf32>
  return %y : tensor<128x768xf32>
}

// -----

// A row of 1000 = 62 * 16 + 8 is split (no masks): the 8-element remainder is reduced whole.

#in = affine_map<(d0, d1) -> (d0, d1)>
#out = affine_map<(d0, d1) -> (d0)>

// CHECK-LABEL: func.func @test_row_sum_remainder
// CHECK-NOT:     linalg.generic
// CHECK-NOT:     vector.mask
// CHECK-DAG:     vector.multi_reduction <add>, {{.*}} [1] : vector<8x16xf32> to vector<8xf32>
// CHECK-DAG:     vector.multi_reduction <add>, {{.*}} [1] : vector<8x8xf32> to vector<8xf32>
func.func @test_row_sum_remainder(%x: tensor<64x1000xf32>, %init: tensor<64xf32>) -> tensor<64xf32> {
  %s = linalg.generic {indexing_maps = [#in, #out], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<64x1000xf32>) outs(%init : tensor<64xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %a = arith.addf %acc, %v : f32
    linalg.yield %a : f32
  } -> tensor<64xf32>
  return %s : tensor<64xf32>
}

// -----

// A reduction whose body uses the accumulator twice is left to the naive path.

#in = affine_map<(d0, d1) -> (d0, d1)>
#out = affine_map<(d0, d1) -> (d0)>

// CHECK-LABEL: func.func @test_odd_combiner_naive
// CHECK:         linalg.generic
// CHECK-NOT:     vector.
func.func @test_odd_combiner_naive(%x: tensor<64x1000xf32>, %init: tensor<64xf32>) -> tensor<64xf32> {
  %s = linalg.generic {indexing_maps = [#in, #out], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<64x1000xf32>) outs(%init : tensor<64xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %m = arith.mulf %acc, %v : f32
    %a = arith.addf %acc, %m : f32
    linalg.yield %a : f32
  } -> tensor<64xf32>
  return %s : tensor<64xf32>
}
