// The shape rules of the data-movement dlc ops (concat, slice, broadcast, pad, trilu), checked
// after parsing and by the dlc-verify pass, with the same messages at the same places.
// RUN: dlc-opt %s --split-input-file --verify-diagnostics | FileCheck %s
// RUN: dlc-opt %s --split-input-file --verify-diagnostics --no-dlc-verify -p 'builtin.module(dlc-verify)' | FileCheck %s

// CHECK-LABEL: func.func @test_valid
// CHECK-NEXT:    "dlc.concat"
// CHECK-NEXT:    "dlc.slice"
// CHECK-NEXT:    "dlc.pad"
// CHECK-NEXT:    return
func.func @test_valid(%a: tensor<2x3xf32>, %b: tensor<2x1xf32>) -> tensor<4x3xf32> {
  %0 = "dlc.concat"(%a, %b) {axis = 1} : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x4xf32>
  %1 = "dlc.slice"(%0) {starts = array<i64: 1, 3>, sizes = array<i64: 2, 3>, steps = array<i64: -1, -1>} : (tensor<2x4xf32>) -> tensor<2x3xf32>
  %2 = "dlc.pad"(%1) {mode = "reflect", pads = array<i64: 1, 0, 1, 0>} : (tensor<2x3xf32>) -> tensor<4x3xf32>
  return %2 : tensor<4x3xf32>
}

// -----

// ---------------------------------------------------------------- concat

func.func @test_concat_other_axis_differs(%a: tensor<2x3xf32>, %b: tensor<3x1xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'dlc.concat' op operand shapes [2x3], [3x1] differ outside axis 1}}
  %0 = "dlc.concat"(%a, %b) {axis = 1} : (tensor<2x3xf32>, tensor<3x1xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @test_concat_axis_out_of_range(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<2x6xf32> {
  // expected-error @+1 {{'dlc.concat' op axis 2 is out of range [0, 2) for rank-2 operands}}
  %0 = "dlc.concat"(%a, %b) {axis = 2} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x6xf32>
  return %0 : tensor<2x6xf32>
}

// -----

func.func @test_concat_element_types_differ(%a: tensor<2xf32>, %b: tensor<2xi32>) -> tensor<4xf32> {
  // expected-error @+1 {{'dlc.concat' op operands must have the same element type, got f32, i32}}
  %0 = "dlc.concat"(%a, %b) {axis = 0} : (tensor<2xf32>, tensor<2xi32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @test_concat_wrong_result_type(%a: tensor<2xf32>, %b: tensor<3xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'dlc.concat' op result type tensor<4xf32> does not match the inferred type tensor<5xf32>}}
  %0 = "dlc.concat"(%a, %b) {axis = 0} : (tensor<2xf32>, tensor<3xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// ---------------------------------------------------------------- slice

func.func @test_slice_out_of_bounds(%x: tensor<5xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{'dlc.slice' op axis 0: elements 1 to 5 (step 2) are out of bounds for size 5}}
  %0 = "dlc.slice"(%x) {starts = array<i64: 1>, sizes = array<i64: 3>, steps = array<i64: 2>} : (tensor<5xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @test_slice_negative_step_below_zero(%x: tensor<5xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{'dlc.slice' op axis 0: elements 1 to -1 (step -1) are out of bounds for size 5}}
  %0 = "dlc.slice"(%x) {starts = array<i64: 1>, sizes = array<i64: 3>, steps = array<i64: -1>} : (tensor<5xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @test_slice_zero_step(%x: tensor<5xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{'dlc.slice' op axis 0: steps must be non-zero and sizes >= 0 (step 0, size 3)}}
  %0 = "dlc.slice"(%x) {starts = array<i64: 0>, sizes = array<i64: 3>, steps = array<i64: 0>} : (tensor<5xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @test_slice_rank_mismatch(%x: tensor<5x2xf32>) -> tensor<3x2xf32> {
  // expected-error @+1 {{'dlc.slice' op starts [0] must have one entry per axis (2)}}
  %0 = "dlc.slice"(%x) {starts = array<i64: 0>, sizes = array<i64: 3, 2>, steps = array<i64: 1, 1>} : (tensor<5x2xf32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

// ---------------------------------------------------------------- broadcast

func.func @test_broadcast_incompatible(%x: tensor<3x2xf32>) -> tensor<3x4xf32> {
  // expected-error @+1 {{'dlc.broadcast' op [3x2] does not broadcast to [3x4]}}
  %0 = "dlc.broadcast"(%x) {shape = array<i64: 3, 4>} : (tensor<3x2xf32>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

func.func @test_broadcast_to_lower_rank(%x: tensor<1x4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'dlc.broadcast' op [1x4] does not broadcast to [4]}}
  %0 = "dlc.broadcast"(%x) {shape = array<i64: 4>} : (tensor<1x4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// ---------------------------------------------------------------- pad

func.func @test_pad_unknown_mode(%x: tensor<3xf32>) -> tensor<5xf32> {
  // expected-error @+1 {{'dlc.pad' op mode 'mirror' is not one of constant, reflect, edge, wrap}}
  %0 = "dlc.pad"(%x) {mode = "mirror", pads = array<i64: 1, 1>} : (tensor<3xf32>) -> tensor<5xf32>
  return %0 : tensor<5xf32>
}

// -----

func.func @test_pad_negative(%x: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{'dlc.pad' op pads [-1, 1] must be >= 0}}
  %0 = "dlc.pad"(%x) {mode = "constant", pads = array<i64: -1, 1>} : (tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @test_pad_wrong_pads_length(%x: tensor<3x2xf32>) -> tensor<5x2xf32> {
  // expected-error @+1 {{'dlc.pad' op pads [1, 1] must have one entry per axis (4)}}
  %0 = "dlc.pad"(%x) {mode = "constant", pads = array<i64: 1, 1>} : (tensor<3x2xf32>) -> tensor<5x2xf32>
  return %0 : tensor<5x2xf32>
}

// -----

func.func @test_pad_value_not_scalar(%x: tensor<3xf32>, %v: tensor<1xf32>) -> tensor<5xf32> {
  // expected-error @+1 {{'dlc.pad' op the pad value must be a rank-0 tensor of a constant pad (got [1], mode 'constant')}}
  %0 = "dlc.pad"(%x, %v) {mode = "constant", pads = array<i64: 1, 1>} : (tensor<3xf32>, tensor<1xf32>) -> tensor<5xf32>
  return %0 : tensor<5xf32>
}

// -----

func.func @test_pad_value_with_edge(%x: tensor<3xf32>, %v: tensor<f32>) -> tensor<5xf32> {
  // expected-error @+1 {{the pad value must be a rank-0 tensor of a constant pad (got [scalar], mode 'edge')}}
  %0 = "dlc.pad"(%x, %v) {mode = "edge", pads = array<i64: 1, 1>} : (tensor<3xf32>, tensor<f32>) -> tensor<5xf32>
  return %0 : tensor<5xf32>
}

// -----

func.func @test_pad_reflect_empty_axis(%x: tensor<0x2xf32>) -> tensor<2x2xf32> {
  // expected-error @+1 {{'dlc.pad' op axis 0 is empty: mode 'reflect' has nothing to copy}}
  %0 = "dlc.pad"(%x) {mode = "reflect", pads = array<i64: 1, 0, 1, 0>} : (tensor<0x2xf32>) -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// -----

// ---------------------------------------------------------------- trilu

func.func @test_trilu_rank_1(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'dlc.trilu' op trilu needs a rank >= 2 operand, got [4]}}
  %0 = "dlc.trilu"(%x) {upper = 1, k = 0} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @test_trilu_bad_upper(%x: tensor<2x2xf32>) -> tensor<2x2xf32> {
  // expected-error @+1 {{'dlc.trilu' op upper must be 0 or 1, got 2}}
  %0 = "dlc.trilu"(%x) {upper = 2, k = 0} : (tensor<2x2xf32>) -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}
