// dlc-distinct-empty-tensors: each use of a tensor.empty, or of a reshape or fill of one (or
// each group of uses: a slice and its insertion back, an op and the op that reads its result
// in place), gets its own copy of that chain, right before the top-level op that uses it:
// CSE's shared destinations made one-shot-bufferize analyze every use against every other
// one and keep one buffer alive from the first layer to the last.
// RUN: dlc-opt %s -p 'builtin.module(dlc-distinct-empty-tensors)' --split-input-file | FileCheck %s

#id = affine_map<(d0, d1) -> (d0, d1)>

// one empty, the init of two generics: one empty each, before its generic
// CHECK-LABEL: func.func @test_shared_init
// CHECK:         %[[E1:.*]] = tensor.empty() : tensor<4x8xf32>
// CHECK-NEXT:    linalg.generic {{.*}} ins(%arg0 : tensor<4x8xf32>) outs(%[[E1]] : tensor<4x8xf32>)
// CHECK:         %[[E2:.*]] = tensor.empty() : tensor<4x8xf32>
// CHECK-NEXT:    linalg.generic {{.*}} ins(%arg1 : tensor<4x8xf32>) outs(%[[E2]] : tensor<4x8xf32>)
// CHECK-NOT:     tensor.empty
func.func @test_shared_init(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %e = tensor.empty() : tensor<4x8xf32>
  %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %init: f32):
    %n = arith.negf %in : f32
    linalg.yield %n : f32
  } -> tensor<4x8xf32>
  %h = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%b : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %init: f32):
    %n = arith.negf %in : f32
    linalg.yield %n : f32
  } -> tensor<4x8xf32>
  return %g, %h : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// the second generic reads what the first computed in the empty: they keep one (it may run
// in place over its input)
// CHECK-LABEL: func.func @test_in_place_chain
// CHECK:         %[[E:.*]] = tensor.empty() : tensor<4x8xf32>
// CHECK-NEXT:    %[[G:.*]] = linalg.generic {{.*}} outs(%[[E]] : tensor<4x8xf32>)
// CHECK:         linalg.generic {{.*}} ins(%[[G]] : tensor<4x8xf32>) outs(%[[E]] : tensor<4x8xf32>)
// CHECK-NOT:     tensor.empty
func.func @test_in_place_chain(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %init: f32):
    %n = arith.negf %in : f32
    linalg.yield %n : f32
  } -> tensor<4x8xf32>
  %h = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%g : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %init: f32):
    %n = arith.negf %in : f32
    linalg.yield %n : f32
  } -> tensor<4x8xf32>
  return %h : tensor<4x8xf32>
}

// -----

// a zero fill of a reshaped empty, the init of two loops: the whole chain is copied for each,
// before the loop (not into its body), and the original goes
// CHECK-LABEL: func.func @test_shared_fill
// CHECK:         %[[E1:.*]] = tensor.empty() : tensor<32xf32>
// CHECK-NEXT:    %[[X1:.*]] = tensor.expand_shape %[[E1]]
// CHECK-NEXT:    %[[F1:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[X1]] : tensor<4x8xf32>)
// CHECK-NEXT:    scf.for {{.*}} iter_args(%{{.*}} = %[[F1]])
// CHECK:         %[[E2:.*]] = tensor.empty() : tensor<32xf32>
// CHECK-NEXT:    %[[X2:.*]] = tensor.expand_shape %[[E2]]
// CHECK-NEXT:    %[[F2:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[X2]] : tensor<4x8xf32>)
// CHECK-NEXT:    scf.for {{.*}} iter_args(%{{.*}} = %[[F2]])
// CHECK-NOT:     linalg.fill
func.func @test_shared_fill(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %e = tensor.empty() : tensor<32xf32>
  %x = tensor.expand_shape %e [[0, 1]] output_shape [4, 8] : tensor<32xf32> into tensor<4x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%x : tensor<4x8xf32>) -> tensor<4x8xf32>
  %r1 = scf.for %i = %c0 to %c4 step %c1 iter_args(%t = %f) -> tensor<4x8xf32> {
    %s = tensor.insert_slice %a into %t[0, 0] [4, 8] [1, 1] : tensor<4x8xf32> into tensor<4x8xf32>
    scf.yield %s : tensor<4x8xf32>
  }
  %r2 = scf.for %i = %c0 to %c4 step %c1 iter_args(%t = %f) -> tensor<4x8xf32> {
    %s = tensor.insert_slice %b into %t[0, 0] [4, 8] [1, 1] : tensor<4x8xf32> into tensor<4x8xf32>
    scf.yield %s : tensor<4x8xf32>
  }
  return %r1, %r2 : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// a padded fill whose interior two producers write in place (dlc-pad-in-place: the slice and
// the insertion of the same slice back): one fill per pair
// CHECK-LABEL: func.func @test_padded_pairs
// CHECK:         %[[F1:.*]] = linalg.fill
// CHECK-NEXT:    %[[S1:.*]] = tensor.extract_slice %[[F1]][1, 0] [4, 8] [1, 1]
// CHECK:         tensor.insert_slice %{{.*}} into %[[F1]][1, 0] [4, 8] [1, 1]
// CHECK:         %[[F2:.*]] = linalg.fill
// CHECK-NEXT:    %[[S2:.*]] = tensor.extract_slice %[[F2]][1, 0] [4, 8] [1, 1]
// CHECK:         tensor.insert_slice %{{.*}} into %[[F2]][1, 0] [4, 8] [1, 1]
func.func @test_padded_pairs(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> (tensor<6x8xf32>, tensor<6x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<6x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<6x8xf32>) -> tensor<6x8xf32>
  %s1 = tensor.extract_slice %f[1, 0] [4, 8] [1, 1] : tensor<6x8xf32> to tensor<4x8xf32>
  %g1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<4x8xf32>) outs(%s1 : tensor<4x8xf32>) {
  ^bb0(%in: f32, %init: f32):
    %n = arith.negf %in : f32
    linalg.yield %n : f32
  } -> tensor<4x8xf32>
  %p1 = tensor.insert_slice %g1 into %f[1, 0] [4, 8] [1, 1] : tensor<4x8xf32> into tensor<6x8xf32>
  %s2 = tensor.extract_slice %f[1, 0] [4, 8] [1, 1] : tensor<6x8xf32> to tensor<4x8xf32>
  %g2 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%b : tensor<4x8xf32>) outs(%s2 : tensor<4x8xf32>) {
  ^bb0(%in: f32, %init: f32):
    %n = arith.negf %in : f32
    linalg.yield %n : f32
  } -> tensor<4x8xf32>
  %p2 = tensor.insert_slice %g2 into %f[1, 0] [4, 8] [1, 1] : tensor<4x8xf32> into tensor<6x8xf32>
  return %p1, %p2 : tensor<6x8xf32>, tensor<6x8xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// a use of another kind (the empty is a generic's input): left as it is
// CHECK-LABEL: func.func @test_other_use
// CHECK:         %[[E:.*]] = tensor.empty() : tensor<4x8xf32>
// CHECK-NOT:     tensor.empty
// CHECK:         linalg.generic {{.*}} ins(%[[E]] : tensor<4x8xf32>) outs(%[[E]] : tensor<4x8xf32>)
func.func @test_other_use() -> tensor<4x8xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%e : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %init: f32):
    %n = arith.negf %in : f32
    linalg.yield %n : f32
  } -> tensor<4x8xf32>
  return %g : tensor<4x8xf32>
}

// -----

// one slice of one fill that two row sums computed in (CSE merged both): a fill, a slice and
// an insertion each
// CHECK-LABEL: func.func @test_shared_slice
// CHECK:         %[[F1:.*]] = linalg.fill
// CHECK-NEXT:    %[[S1:.*]] = tensor.extract_slice %[[F1]][0, 0] [4, 1] [1, 1]
// CHECK-NEXT:    %[[L1:.*]] = scf.for {{.*}} iter_args(%{{.*}} = %[[S1]])
// CHECK:         tensor.insert_slice %[[L1]] into %[[F1]][0, 0] [4, 1] [1, 1]
// CHECK:         %[[F2:.*]] = linalg.fill
// CHECK-NEXT:    %[[S2:.*]] = tensor.extract_slice %[[F2]][0, 0] [4, 1] [1, 1]
// CHECK-NEXT:    %[[L2:.*]] = scf.for {{.*}} iter_args(%{{.*}} = %[[S2]])
// CHECK:         tensor.insert_slice %[[L2]] into %[[F2]][0, 0] [4, 1] [1, 1]
func.func @test_shared_slice(%a: tensor<4x1xf32>, %b: tensor<4x1xf32>) -> (tensor<5x1xf32>, tensor<5x1xf32>) {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %e = tensor.empty() : tensor<5x1xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<5x1xf32>) -> tensor<5x1xf32>
  %s = tensor.extract_slice %f[0, 0] [4, 1] [1, 1] : tensor<5x1xf32> to tensor<4x1xf32>
  %l1 = scf.for %i = %c0 to %c4 step %c1 iter_args(%t = %s) -> tensor<4x1xf32> {
    %u = tensor.insert_slice %a into %t[0, 0] [4, 1] [1, 1] : tensor<4x1xf32> into tensor<4x1xf32>
    scf.yield %u : tensor<4x1xf32>
  }
  %r1 = tensor.insert_slice %l1 into %f[0, 0] [4, 1] [1, 1] : tensor<4x1xf32> into tensor<5x1xf32>
  %l2 = scf.for %i = %c0 to %c4 step %c1 iter_args(%t = %s) -> tensor<4x1xf32> {
    %u = tensor.insert_slice %b into %t[0, 0] [4, 1] [1, 1] : tensor<4x1xf32> into tensor<4x1xf32>
    scf.yield %u : tensor<4x1xf32>
  }
  %r2 = tensor.insert_slice %l2 into %f[0, 0] [4, 1] [1, 1] : tensor<4x1xf32> into tensor<5x1xf32>
  return %r1, %r2 : tensor<5x1xf32>, tensor<5x1xf32>
}

// -----

// A static empty (and its fill) hoisted out of a loop of blocks (a bound not a constant: a
// dynamic function's) and used only in its body moves into the body, one copy per use: each
// block allocates its intermediates there, where dlc-plan-buffers reuses them. The empty of a
// dynamic size, and the loop's own init, stay outside.
// CHECK-LABEL: func.func @test_sink_into_loop_of_blocks
// CHECK:         %[[INIT:.*]] = tensor.empty(%{{.*}}) : tensor<?x8xf32>
// CHECK-NOT:     tensor.empty
// CHECK:         scf.for {{.*}} iter_args(%{{.*}} = %[[INIT]])
// CHECK:           %[[E1:.*]] = tensor.empty() : tensor<4x8xf32>
// CHECK-NEXT:      %[[F1:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E1]] : tensor<4x8xf32>)
// CHECK-NEXT:      linalg.generic {{.*}} outs(%[[F1]] : tensor<4x8xf32>)
// CHECK:           %[[E2:.*]] = tensor.empty() : tensor<4x8xf32>
// CHECK-NEXT:      %[[F2:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E2]] : tensor<4x8xf32>)
// CHECK-NEXT:      linalg.generic {{.*}} outs(%[[F2]] : tensor<4x8xf32>)
// CHECK:           tensor.insert_slice
#id = affine_map<(d0, d1) -> (d0, d1)>

func.func @test_sink_into_loop_of_blocks(%a: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  %n = tensor.dim %a, %c0 : tensor<?x8xf32>
  %init = tensor.empty(%n) : tensor<?x8xf32>
  %e = tensor.empty() : tensor<4x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %r = scf.for %i = %c0 to %n step %c4 iter_args(%acc = %init) -> (tensor<?x8xf32>) {
    %x = tensor.extract_slice %a[%i, 0] [4, 8] [1, 1] : tensor<?x8xf32> to tensor<4x8xf32>
    %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x8xf32>) outs(%f : tensor<4x8xf32>) {
    ^bb0(%in: f32, %o: f32):
      %s = arith.addf %in, %o : f32
      linalg.yield %s : f32
    } -> tensor<4x8xf32>
    %h = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%g : tensor<4x8xf32>) outs(%f : tensor<4x8xf32>) {
    ^bb0(%in: f32, %o: f32):
      %s = arith.addf %in, %o : f32
      linalg.yield %s : f32
    } -> tensor<4x8xf32>
    %y = tensor.insert_slice %h into %acc[%i, 0] [4, 8] [1, 1] : tensor<4x8xf32> into tensor<?x8xf32>
    scf.yield %y : tensor<?x8xf32>
  }
  return %r : tensor<?x8xf32>
}

// -----

// A loop of constant bounds keeps its hoisted empty outside (a static function's loops are
// left as they were).
// CHECK-LABEL: func.func @test_static_loop_left
// CHECK:         tensor.empty() : tensor<4x8xf32>
// CHECK-NEXT:    scf.for
#id = affine_map<(d0, d1) -> (d0, d1)>

func.func @test_static_loop_left(%a: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %e = tensor.empty() : tensor<4x8xf32>
  %r = scf.for %i = %c0 to %c8 step %c4 iter_args(%acc = %a) -> (tensor<8x8xf32>) {
    %x = tensor.extract_slice %acc[%i, 0] [4, 8] [1, 1] : tensor<8x8xf32> to tensor<4x8xf32>
    %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
    ^bb0(%in: f32, %o: f32):
      %s = arith.negf %in : f32
      linalg.yield %s : f32
    } -> tensor<4x8xf32>
    %y = tensor.insert_slice %g into %acc[%i, 0] [4, 8] [1, 1] : tensor<4x8xf32> into tensor<8x8xf32>
    scf.yield %y : tensor<8x8xf32>
  }
  return %r : tensor<8x8xf32>
}
