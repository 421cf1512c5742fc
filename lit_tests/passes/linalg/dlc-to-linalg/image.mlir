// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-to-linalg)' | FileCheck %s
// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-to-linalg)' | FileCheck %s --check-prefix=LOWERED

// LOWERED-NOT: "dlc.

// A table of one tap of weight 1 is a pure gather: the index table is the generic's only
// input, read along the resampled axis, and the body is one tensor.extract.

// CHECK-DAG:   #[[AXIS:map[0-9]*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-DAG:   #[[ID:map[0-9]*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @test_resample_nearest
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3xf32>) -> tensor<2x5xf32>
// CHECK:         %[[IDX:.*]] = arith.constant dense<[0, 0, 1, 2, 2]> : tensor<5xi64>
// CHECK:         %[[INIT:.*]] = tensor.empty() : tensor<2x5xf32>
// CHECK:         linalg.generic {indexing_maps = [#[[AXIS]], #[[ID]]], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME:      ins(%[[IDX]] : tensor<5xi64>) outs(%[[INIT]] : tensor<2x5xf32>)
// CHECK-NEXT:    ^bb0(%[[I:[^:]+]]: i64, %{{[^:]+}}: f32):
// CHECK-NEXT:      %[[ROW:.*]] = linalg.index 0 : index
// CHECK-NEXT:      %[[COL:.*]] = arith.index_cast %[[I]] : i64 to index
// CHECK-NEXT:      %[[E:.*]] = tensor.extract %[[X]][%[[ROW]], %[[COL]]] : tensor<2x3xf32>
// CHECK-NEXT:      linalg.yield %[[E]] : f32
func.func @test_resample_nearest(%x: tensor<2x3xf32>) -> tensor<2x5xf32> {
  %0 = "dlc.resample"(%x) {axis = 1, taps = 1, indices = array<i64: 0, 0, 1, 2, 2>, weights = array<f64: 1.0, 1.0, 1.0, 1.0, 1.0>, bias = array<f64: 0.0, 0.0, 0.0, 0.0, 0.0>, to = f32} : (tensor<2x3xf32>) -> tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}

// -----

// Two taps on f32: index and weight tables per tap, then the bias, blended in f32.

// CHECK-DAG:   #[[AXIS:map[0-9]*]] = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @test_resample_linear_f32
// CHECK-DAG:     %[[I0:.*]] = arith.constant dense<[0, 1]> : tensor<2xi64>
// CHECK-DAG:     %[[W0:.*]] = arith.constant dense<[7.500000e-01, 2.500000e-01]> : tensor<2xf32>
// CHECK-DAG:     %[[I1:.*]] = arith.constant dense<[1, 2]> : tensor<2xi64>
// CHECK-DAG:     %[[W1:.*]] = arith.constant dense<[2.500000e-01, 7.500000e-01]> : tensor<2xf32>
// CHECK-DAG:     %[[B:.*]] = arith.constant dense<0.000000e+00> : tensor<2xf32>
// CHECK:         linalg.generic {indexing_maps = [#[[AXIS]], #[[AXIS]], #[[AXIS]], #[[AXIS]], #[[AXIS]], #{{.*}}]
// CHECK-SAME:      ins(%[[I0]], %[[W0]], %[[I1]], %[[W1]], %[[B]] :
// CHECK:           tensor.extract
// CHECK-NEXT:      arith.mulf
// CHECK-NEXT:      arith.addf
// CHECK:           tensor.extract
// CHECK-NEXT:      arith.mulf
// CHECK-NEXT:      %[[SUM:.*]] = arith.addf
// CHECK-NEXT:      linalg.yield %[[SUM]] : f32
func.func @test_resample_linear_f32(%x: tensor<3x2xf32>) -> tensor<2x2xf32> {
  %0 = "dlc.resample"(%x) {axis = 0, taps = 2, indices = array<i64: 0, 1, 1, 2>, weights = array<f64: 0.75, 0.25, 0.25, 0.75>, bias = array<f64: 0.0, 0.0>, to = f32} : (tensor<3x2xf32>) -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// -----

// uint8 (stored as i8): blended in f64 from arith.uitofp, then rounded half to even,
// saturated to [0, 255] and converted back with arith.fptoui.

// CHECK-LABEL: func.func @test_resample_linear_u8
// CHECK-SAME:    (%[[X:.*]]: tensor<3x2xi8>) -> tensor<2x2xi8>
// CHECK-DAG:     %[[MAX:.*]] = arith.constant 2.550000e+02 : f64
// CHECK-DAG:     %[[ZERO:.*]] = arith.constant 0.000000e+00 : f64
// CHECK:         linalg.generic
// CHECK:           %[[E:.*]] = tensor.extract %[[X]]
// CHECK-NEXT:      arith.uitofp %[[E]] : i8 to f64
// CHECK:           %[[R:.*]] = math.roundeven %{{.*}} : f64
// CHECK-NEXT:      %[[LO:.*]] = arith.maximumf %[[R]], %[[ZERO]] : f64
// CHECK-NEXT:      %[[HI:.*]] = arith.minimumf %[[LO]], %[[MAX]] : f64
// CHECK:           %[[C:.*]] = arith.fptoui %{{.*}} : f64 to i8
// CHECK-NEXT:      linalg.yield %[[C]] : i8
func.func @test_resample_linear_u8(%x: tensor<3x2xui8>) -> tensor<2x2xui8> {
  %0 = "dlc.resample"(%x) {axis = 0, taps = 2, indices = array<i64: 0, 1, 1, 2>, weights = array<f64: 0.75, 0.25, 0.25, 0.75>, bias = array<f64: 0.0, 0.0>, to = ui8} : (tensor<3x2xui8>) -> tensor<2x2xui8>
  return %0 : tensor<2x2xui8>
}

// -----

// An intermediate axis of a chain: int32 in, f64 out (no rounding).

// CHECK-LABEL: func.func @test_resample_to_f64
// CHECK:         linalg.generic
// CHECK:           arith.sitofp %{{.*}} : i32 to f64
// CHECK-NOT:       math.roundeven
// CHECK:           linalg.yield %{{.*}} : f64
func.func @test_resample_to_f64(%x: tensor<2xi32>) -> tensor<3xf64> {
  %0 = "dlc.resample"(%x) {axis = 0, taps = 1, indices = array<i64: 0, 1, 1>, weights = array<f64: 1.0, 0.5, 1.0>, bias = array<f64: 0.0, 0.0, 0.0>, to = f64} : (tensor<2xi32>) -> tensor<3xf64>
  return %0 : tensor<3xf64>
}

// -----

// tf_crop_and_resize's extrapolated positions: weight 0 and the bias holds the value.

// CHECK-LABEL: func.func @test_resample_extrapolation
// CHECK:         %[[B:.*]] = arith.constant dense<[5.000000e+00, 0.000000e+00]> : tensor<2xf32>
// CHECK:         linalg.generic
// CHECK-SAME:      ins(%{{.*}}, %{{.*}}, %[[B]] :
func.func @test_resample_extrapolation(%x: tensor<2xf32>) -> tensor<2xf32> {
  %0 = "dlc.resample"(%x) {axis = 0, taps = 1, indices = array<i64: 0, 1>, weights = array<f64: 0.0, 1.0>, bias = array<f64: 5.0, 0.0>, to = f32} : (tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// grid_sample: one generic over the result with no inputs; the body reads the grid's two
// coordinates (x, the last axis, first), floors them, and gathers 2 x 2 taps.

// CHECK-DAG:   #[[ID:map[0-9]*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-LABEL: func.func @test_grid_sample_linear
// CHECK-SAME:    (%[[X:.*]]: tensor<2x2x3x4xf32>, %[[G:.*]]: tensor<2x5x6x2xf32>)
// CHECK:         %[[INIT:.*]] = tensor.empty() : tensor<2x2x5x6xf32>
// CHECK:         linalg.generic {indexing_maps = [#[[ID]]], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
// CHECK-SAME:      outs(%[[INIT]] : tensor<2x2x5x6xf32>)
// CHECK-COUNT-2:   tensor.extract %[[G]]
// CHECK-COUNT-2:   math.floor
// CHECK-COUNT-4:   tensor.extract %[[X]]
// CHECK-NOT:       tensor.extract
// CHECK:           linalg.yield %{{.*}} : f32
func.func @test_grid_sample_linear(%x: tensor<2x2x3x4xf32>, %g: tensor<2x5x6x2xf32>) -> tensor<2x2x5x6xf32> {
  %0 = "dlc.grid_sample"(%x, %g) {mode = "linear", padding_mode = "zeros", align_corners = 0} : (tensor<2x2x3x4xf32>, tensor<2x5x6x2xf32>) -> tensor<2x2x5x6xf32>
  return %0 : tensor<2x2x5x6xf32>
}

// -----

// nearest rounds half to even and reads one tap; border padding clamps the index.

// CHECK-LABEL: func.func @test_grid_sample_nearest_border
// CHECK:         linalg.generic
// CHECK-COUNT-2:   math.roundeven
// CHECK:           arith.minsi
// CHECK-NEXT:      arith.maxsi
// CHECK:           %[[E:.*]] = tensor.extract %{{.*}} : tensor<1x1x3x4xf32>
// CHECK-NEXT:      linalg.yield %[[E]] : f32
func.func @test_grid_sample_nearest_border(%x: tensor<1x1x3x4xf32>, %g: tensor<1x2x2x2xf32>) -> tensor<1x1x2x2xf32> {
  %0 = "dlc.grid_sample"(%x, %g) {mode = "nearest", padding_mode = "border", align_corners = 1} : (tensor<1x1x3x4xf32>, tensor<1x2x2x2xf32>) -> tensor<1x1x2x2xf32>
  return %0 : tensor<1x1x2x2xf32>
}

// -----

// cubic on a 3-D volume: 4 x 4 x 4 taps.

// CHECK-LABEL: func.func @test_grid_sample_cubic_3d
// CHECK:         linalg.generic
// CHECK-COUNT-64:  tensor.extract %arg0
// CHECK-NOT:       tensor.extract
func.func @test_grid_sample_cubic_3d(%x: tensor<1x1x3x4x5xf64>, %g: tensor<1x2x2x2x3xf64>) -> tensor<1x1x2x2x2xf64> {
  %0 = "dlc.grid_sample"(%x, %g) {mode = "cubic", padding_mode = "reflection", align_corners = 0} : (tensor<1x1x3x4x5xf64>, tensor<1x2x2x2x3xf64>) -> tensor<1x1x2x2x2xf64>
  return %0 : tensor<1x1x2x2x2xf64>
}
