// dlc-pad-in-place: the fill of a padded buffer (and its tensor.empty) moves before the
// tensor.empty its interior's producer writes into, so that eliminate-empty-tensors can make
// the producer write straight into the padded buffer. Left alone: a fill with another user, a
// fill already before the producer, an interior that does not come from a tensor.empty.
// Then a padded buffer's fill is cut down to the border around the interior (buffers of
// border-min bytes or more: 512 KiB by default; 0 here).
// RUN: dlc-opt %s -p 'builtin.module(dlc-pad-in-place{border-min=0})' --split-input-file | FileCheck %s
// RUN: dlc-opt %s -p 'builtin.module(dlc-pad-in-place)' --split-input-file | FileCheck %s --check-prefix=DEFAULT
// RUN: dlc-opt %s -p 'builtin.module(dlc-pad-in-place{border-min=0},eliminate-empty-tensors,one-shot-bufferize{bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map},canonicalize,cse,canonicalize)' --split-input-file | FileCheck %s --check-prefix=BUF

#id = affine_map<(d0, d1) -> (d0, d1)>
// The fill then covers the border only (the interior is overwritten whole): top and bottom
// rows, then the left and right columns of the interior rows, filled in place.
// By default a 400-byte buffer keeps its whole fill (moved all the same).
// DEFAULT-LABEL: func.func @test_moved
// DEFAULT:         %[[PAD:.*]] = tensor.empty() : tensor<10x10xf32>
// DEFAULT-NEXT:    linalg.fill ins(%{{.*}} : f32) outs(%[[PAD]] : tensor<10x10xf32>)
// DEFAULT-NEXT:    tensor.empty() : tensor<8x8xf32>
// CHECK-LABEL: func.func @test_moved
// CHECK:         %[[PAD:.*]] = tensor.empty() : tensor<10x10xf32>
// CHECK:         %[[TOP:.*]] = tensor.insert_slice %{{.*}} into %[[PAD]][0, 0] [1, 10] [1, 1]
// CHECK:         %[[BOTTOM:.*]] = tensor.insert_slice %{{.*}} into %[[TOP]][9, 0] [1, 10] [1, 1]
// CHECK:         %[[LEFT:.*]] = tensor.insert_slice %{{.*}} into %[[BOTTOM]][1, 0] [8, 1] [1, 1]
// CHECK:         %[[FILL:.*]] = tensor.insert_slice %{{.*}} into %[[LEFT]][1, 9] [8, 1] [1, 1]
// CHECK-NEXT:    %[[E:.*]] = tensor.empty() : tensor<8x8xf32>
// CHECK-NEXT:    %[[R:.*]] = linalg.generic
// CHECK:         tensor.insert_slice %[[R]] into %[[FILL]][1, 1] [8, 8] [1, 1]
// CHECK-NOT:     linalg.fill {{.*}} tensor<10x10xf32>
// BUF-LABEL: func.func @test_moved
// BUF:         %[[A:.*]] = memref.alloc() {{.*}} : memref<10x10xf32>
// BUF-NOT:     memref.alloc
// BUF-NOT:     memref.copy
// BUF-COUNT-4: linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : memref<{{1x10|8x1}}xf32, strided
// BUF-NOT:     linalg.fill
// BUF:         return
func.func @test_moved(%x: tensor<8x8xf32>) -> tensor<10x10xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x8xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<8x8xf32>) outs(%e : tensor<8x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.maximumf %a, %zero : f32
    linalg.yield %m : f32
  } -> tensor<8x8xf32>
  %pad = tensor.empty() : tensor<10x10xf32>
  %filled = linalg.fill ins(%zero : f32) outs(%pad : tensor<10x10xf32>) -> tensor<10x10xf32>
  %inserted = tensor.insert_slice %r into %filled[1, 1] [8, 8] [1, 1] : tensor<8x8xf32> into tensor<10x10xf32>
  return %inserted : tensor<10x10xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @test_fill_used_twice
// CHECK:         linalg.generic
// CHECK:         linalg.fill
// CHECK:         tensor.insert_slice
func.func @test_fill_used_twice(%x: tensor<8x8xf32>) -> (tensor<10x10xf32>, tensor<10x10xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x8xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<8x8xf32>) outs(%e : tensor<8x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.maximumf %a, %zero : f32
    linalg.yield %m : f32
  } -> tensor<8x8xf32>
  %pad = tensor.empty() : tensor<10x10xf32>
  %filled = linalg.fill ins(%zero : f32) outs(%pad : tensor<10x10xf32>) -> tensor<10x10xf32>
  %inserted = tensor.insert_slice %r into %filled[1, 1] [8, 8] [1, 1] : tensor<8x8xf32> into tensor<10x10xf32>
  return %inserted, %filled : tensor<10x10xf32>, tensor<10x10xf32>
}

// -----

// CHECK-LABEL: func.func @test_interior_is_an_argument
// CHECK:         arith.addf
// CHECK:         tensor.empty
// CHECK:         linalg.fill
func.func @test_interior_is_an_argument(%x: tensor<8x8xf32>, %s: f32) -> tensor<10x10xf32> {
  %v = arith.addf %s, %s : f32
  %pad = tensor.empty() : tensor<10x10xf32>
  %filled = linalg.fill ins(%v : f32) outs(%pad : tensor<10x10xf32>) -> tensor<10x10xf32>
  %inserted = tensor.insert_slice %x into %filled[1, 1] [8, 8] [1, 1] : tensor<8x8xf32> into tensor<10x10xf32>
  return %inserted : tensor<10x10xf32>
}

// -----

// Two convs' identical padded buffers merged by CSE into one fill: each insert gets its own
// fill (the last one keeps the original, already before its producer).
#id = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @test_shared_fill
// CHECK:         %[[F1:.*]] = tensor.insert_slice %{{.*}} into %{{.*}}[1, 9] [8, 1] [1, 1]
// CHECK:         %[[F2:.*]] = tensor.insert_slice %{{.*}} into %{{.*}}[1, 9] [8, 1] [1, 1]
// CHECK:         linalg.generic
// CHECK:         tensor.insert_slice %{{.*}} into %[[F2]]
// CHECK:         linalg.generic
// CHECK:         tensor.insert_slice %{{.*}} into %[[F1]]
// CHECK:         return
// BUF-LABEL: func.func @test_shared_fill
// BUF-NOT:     memref.copy
// BUF:         return
func.func @test_shared_fill(%x: tensor<8x8xf32>) -> (tensor<10x10xf32>, tensor<10x10xf32>) {
  %zero = arith.constant 0.0 : f32
  %pad = tensor.empty() : tensor<10x10xf32>
  %filled = linalg.fill ins(%zero : f32) outs(%pad : tensor<10x10xf32>) -> tensor<10x10xf32>
  %e = tensor.empty() : tensor<8x8xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<8x8xf32>) outs(%e : tensor<8x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.maximumf %a, %zero : f32
    linalg.yield %m : f32
  } -> tensor<8x8xf32>
  %i1 = tensor.insert_slice %r into %filled[1, 1] [8, 8] [1, 1] : tensor<8x8xf32> into tensor<10x10xf32>
  %e2 = tensor.empty() : tensor<8x8xf32>
  %r2 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<8x8xf32>) outs(%e2 : tensor<8x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.minimumf %a, %zero : f32
    linalg.yield %m : f32
  } -> tensor<8x8xf32>
  %i2 = tensor.insert_slice %r2 into %filled[1, 1] [8, 8] [1, 1] : tensor<8x8xf32> into tensor<10x10xf32>
  return %i1, %i2 : tensor<10x10xf32>, tensor<10x10xf32>
}

// -----

// A destination chain through a reshape (packed convs compute [.., F/32, 32] and collapse it):
// eliminate-empty-tensors follows same-type chains only, so the pass roots the chain in a
// 4-D empty (expand_shape of it) and replaces that empty by the padded buffer's interior; the
// chains of two producers that CSE made share one 5-D empty and fill each get their own.
#id5 = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>
// CHECK-LABEL: func.func @test_collapsed_into_padding
// CHECK:         %[[E2:.*]] = tensor.empty() : tensor<1x4x4x64xf32>
// CHECK-NEXT:    %[[X2:.*]] = tensor.expand_shape %[[E2]] {{\[\[}}0], [1], [2], [3, 4]] output_shape [1, 4, 4, 2, 32]
// CHECK-NEXT:    %[[F2:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[X2]] : tensor<1x4x4x2x32xf32>)
// CHECK:         %[[PAD:.*]] = tensor.insert_slice %{{.*}} into %{{.*}}[0, 1, 5, 0] [1, 4, 1, 64] [1, 1, 1, 1]
// CHECK-NEXT:    %[[IN:.*]] = tensor.extract_slice %[[PAD]][0, 1, 1, 0] [1, 4, 4, 64] [1, 1, 1, 1]
// CHECK-NEXT:    %[[X:.*]] = tensor.expand_shape %[[IN]]
// CHECK-NEXT:    %[[F:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[X]] : tensor<1x4x4x2x32xf32>)
// CHECK:         linalg.generic {{.*}} outs(%[[F]] :
// CHECK:         tensor.insert_slice %{{.*}} into %[[PAD]][0, 1, 1, 0] [1, 4, 4, 64] [1, 1, 1, 1]
// CHECK:         linalg.generic {{.*}} outs(%[[F2]] :
// BUF-LABEL: func.func @test_collapsed_into_padding
// BUF-NOT:     memref.copy
// BUF:         return
func.func @test_collapsed_into_padding(%x: tensor<1x4x4x2x32xf32>) -> (tensor<1x6x6x64xf32>, tensor<1x4x4x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x4x4x2x32xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<1x4x4x2x32xf32>) -> tensor<1x4x4x2x32xf32>
  %r = linalg.generic {indexing_maps = [#id5, #id5], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%x : tensor<1x4x4x2x32xf32>) outs(%acc : tensor<1x4x4x2x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %o : f32
    linalg.yield %s : f32
  } -> tensor<1x4x4x2x32xf32>
  %c = tensor.collapse_shape %r [[0], [1], [2], [3, 4]] : tensor<1x4x4x2x32xf32> into tensor<1x4x4x64xf32>
  %pad = tensor.empty() : tensor<1x6x6x64xf32>
  %filled = linalg.fill ins(%zero : f32) outs(%pad : tensor<1x6x6x64xf32>) -> tensor<1x6x6x64xf32>
  %inserted = tensor.insert_slice %c into %filled[0, 1, 1, 0] [1, 4, 4, 64] [1, 1, 1, 1] : tensor<1x4x4x64xf32> into tensor<1x6x6x64xf32>
  %r2 = linalg.generic {indexing_maps = [#id5, #id5], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%x : tensor<1x4x4x2x32xf32>) outs(%acc : tensor<1x4x4x2x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.mulf %a, %o : f32
    linalg.yield %s : f32
  } -> tensor<1x4x4x2x32xf32>
  %c2 = tensor.collapse_shape %r2 [[0], [1], [2], [3, 4]] : tensor<1x4x4x2x32xf32> into tensor<1x4x4x64xf32>
  return %inserted, %c2 : tensor<1x6x6x64xf32>, tensor<1x4x4x64xf32>
}

// -----

// Two collapsed chains concatenated: the concat's empty and its first insert move up so that
// each chain starts from its slot of the concat buffer.
#id5 = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>
// CHECK-LABEL: func.func @test_collapsed_into_concat
// CHECK:         %[[CAT:.*]] = tensor.empty() : tensor<1x4x4x128xf32>
// CHECK-NEXT:    tensor.extract_slice %[[CAT]][0, 0, 0, 0] [1, 4, 4, 64] [1, 1, 1, 1]
// CHECK:         %[[FIRST:.*]] = tensor.insert_slice %{{.*}} into %[[CAT]][0, 0, 0, 0]
// CHECK-NEXT:    tensor.extract_slice %[[FIRST]][0, 0, 0, 64] [1, 4, 4, 64] [1, 1, 1, 1]
// CHECK:         tensor.insert_slice %{{.*}} into %[[FIRST]][0, 0, 0, 64]
// BUF-LABEL: func.func @test_collapsed_into_concat
// BUF-NOT:     memref.copy
// BUF:         return
func.func @test_collapsed_into_concat(%x: tensor<1x4x4x2x32xf32>) -> tensor<1x4x4x128xf32> {
  %e1 = tensor.empty() : tensor<1x4x4x2x32xf32>
  %r1 = linalg.generic {indexing_maps = [#id5, #id5], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%x : tensor<1x4x4x2x32xf32>) outs(%e1 : tensor<1x4x4x2x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %a : f32
    linalg.yield %s : f32
  } -> tensor<1x4x4x2x32xf32>
  %c1 = tensor.collapse_shape %r1 [[0], [1], [2], [3, 4]] : tensor<1x4x4x2x32xf32> into tensor<1x4x4x64xf32>
  %e2 = tensor.empty() : tensor<1x4x4x2x32xf32>
  %r2 = linalg.generic {indexing_maps = [#id5, #id5], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%x : tensor<1x4x4x2x32xf32>) outs(%e2 : tensor<1x4x4x2x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.mulf %a, %a : f32
    linalg.yield %s : f32
  } -> tensor<1x4x4x2x32xf32>
  %c2 = tensor.collapse_shape %r2 [[0], [1], [2], [3, 4]] : tensor<1x4x4x2x32xf32> into tensor<1x4x4x64xf32>
  %cat = tensor.empty() : tensor<1x4x4x128xf32>
  %i1 = tensor.insert_slice %c1 into %cat[0, 0, 0, 0] [1, 4, 4, 64] [1, 1, 1, 1] : tensor<1x4x4x64xf32> into tensor<1x4x4x128xf32>
  %i2 = tensor.insert_slice %c2 into %i1[0, 0, 0, 64] [1, 4, 4, 64] [1, 1, 1, 1] : tensor<1x4x4x64xf32> into tensor<1x4x4x128xf32>
  return %i2 : tensor<1x4x4x128xf32>
}
