// dlc-fuse-elementwise: linalg-fuse-elementwise-ops, each fused body bounded to max-ops ops
// (upstream alone fuses a chain of N into one op by N fusions of growing bodies: N^2). With
// max-ops=2 the five-op chain fuses in runs of two; by default (256) into one generic.
// RUN: dlc-opt %s -p 'builtin.module(dlc-fuse-elementwise{max-ops=2})' | FileCheck %s
// RUN: dlc-opt %s -p 'builtin.module(dlc-fuse-elementwise)' | FileCheck %s --check-prefix=ALL

// CHECK-LABEL: func.func @chain
// CHECK:         %[[G0:.*]] = linalg.generic
// CHECK:           arith.negf
// CHECK-NEXT:      math.exp
// CHECK-NEXT:      linalg.yield
// CHECK:         %[[G1:.*]] = linalg.generic {{.*}} ins(%[[G0]]
// CHECK:           math.sqrt
// CHECK-NEXT:      math.tanh
// CHECK-NEXT:      linalg.yield
// CHECK:         %[[G2:.*]] = linalg.generic {{.*}} ins(%[[G1]]
// CHECK:           math.absf
// CHECK-NEXT:      linalg.yield
// CHECK-NOT:     bufferization.dealloc_tensor
// CHECK:         return %[[G2]]

// ALL-LABEL: func.func @chain
// ALL:         linalg.generic
// ALL:           arith.negf
// ALL-NEXT:      math.exp
// ALL-NEXT:      math.sqrt
// ALL-NEXT:      math.tanh
// ALL-NEXT:      math.absf
// ALL-NOT:     linalg.generic
#map = affine_map<(d0) -> (d0)>
func.func @chain(%x: tensor<8xf32>) -> tensor<8xf32> {
  %e = tensor.empty() : tensor<8xf32>
  %0 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%x : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %n = arith.negf %in : f32
    linalg.yield %n : f32
  } -> tensor<8xf32>
  %1 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%0 : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %n = math.exp %in : f32
    linalg.yield %n : f32
  } -> tensor<8xf32>
  %2 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%1 : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %n = math.sqrt %in : f32
    linalg.yield %n : f32
  } -> tensor<8xf32>
  %3 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%2 : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %n = math.tanh %in : f32
    linalg.yield %n : f32
  } -> tensor<8xf32>
  %4 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%3 : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %n = math.absf %in : f32
    linalg.yield %n : f32
  } -> tensor<8xf32>
  return %4 : tensor<8xf32>
}

// A producer its consumer broadcasts (the sigmoid of a squeeze-and-excitation scale) stays
// unfused at any bound: fused, its exp would run once per element of the 3x4 result, not once
// per element of its own 1x4.

// CHECK-LABEL: func.func @broadcast
// CHECK:         %[[S:.*]] = linalg.generic {{.*}} ins(%{{.*}} : tensor<1x4xf32>)
// CHECK:           math.exp
// CHECK:         linalg.generic {{.*}} ins(%{{.*}}, %[[S]] : tensor<3x4xf32>, tensor<1x4xf32>)
// CHECK-NOT:       math.exp
// CHECK:           arith.mulf
// CHECK-NOT:     bufferization.dealloc_tensor

// ALL-LABEL: func.func @broadcast
// ALL:         linalg.generic {{.*}} ins(%{{.*}} : tensor<1x4xf32>)
// ALL:         linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<3x4xf32>, tensor<1x4xf32>)
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (0, d1)>
func.func @broadcast(%x: tensor<3x4xf32>, %s: tensor<1x4xf32>) -> tensor<3x4xf32> {
  %e1 = tensor.empty() : tensor<1x4xf32>
  %0 = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%s : tensor<1x4xf32>) outs(%e1 : tensor<1x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %n = math.exp %in : f32
    linalg.yield %n : f32
  } -> tensor<1x4xf32>
  %e = tensor.empty() : tensor<3x4xf32>
  %1 = linalg.generic {indexing_maps = [#id2, #row, #id2], iterator_types = ["parallel", "parallel"]} ins(%x, %0 : tensor<3x4xf32>, tensor<1x4xf32>) outs(%e : tensor<3x4xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %m = arith.mulf %a, %b : f32
    linalg.yield %m : f32
  } -> tensor<3x4xf32>
  return %1 : tensor<3x4xf32>
}
