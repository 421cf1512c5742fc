// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-sink-transpose)' | FileCheck %s

// A transpose sinks below relu, add (both operands transposed alike) and mul by a constant
// (transposed back at compile time), then meets its inverse and both vanish.

// CHECK-LABEL: func.func @test_sink_and_cancel
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3x4xf32>, %[[Y:.*]]: tensor<2x3x4xf32>)
// CHECK-NEXT:    %[[R:.*]] = "dlc.relu"(%[[X]]) : (tensor<2x3x4xf32>)
// CHECK-NEXT:    %[[A:.*]] = "dlc.add"(%[[R]], %[[Y]]) : (tensor<2x3x4xf32>, tensor<2x3x4xf32>)
// CHECK-NEXT:    %[[C:.*]] = "dlc.constant"() {value = dense<{{\[\[}}[1.000000e+00], [2.000000e+00], [3.000000e+00]]]> : tensor<1x3x1xf32>}
// CHECK-NEXT:    %[[M:.*]] = "dlc.mul"(%[[A]], %[[C]])
// CHECK-NEXT:    return %[[M]] : tensor<2x3x4xf32>
func.func @test_sink_and_cancel(%x: tensor<2x3x4xf32>, %y: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %c = "dlc.constant"() {value = dense<[[[1.0, 2.0, 3.0]]]> : tensor<1x1x3xf32>} : () -> tensor<1x1x3xf32>
  %t = "dlc.transpose"(%x) {perm = array<i64: 0, 2, 1>} : (tensor<2x3x4xf32>) -> tensor<2x4x3xf32>
  %u = "dlc.transpose"(%y) {perm = array<i64: 0, 2, 1>} : (tensor<2x3x4xf32>) -> tensor<2x4x3xf32>
  %r = "dlc.relu"(%t) : (tensor<2x4x3xf32>) -> tensor<2x4x3xf32>
  %a = "dlc.add"(%r, %u) : (tensor<2x4x3xf32>, tensor<2x4x3xf32>) -> tensor<2x4x3xf32>
  %m = "dlc.mul"(%a, %c) : (tensor<2x4x3xf32>, tensor<1x1x3xf32>) -> tensor<2x4x3xf32>
  %b = "dlc.transpose"(%m) {perm = array<i64: 0, 2, 1>} : (tensor<2x4x3xf32>) -> tensor<2x3x4xf32>
  return %b : tensor<2x3x4xf32>
}

// -----

// Negative: a transpose with another use stays (sinking would compute it twice), and so does
// one whose partner operand is transposed differently.

// CHECK-LABEL: func.func @test_no_sink
// CHECK:         "dlc.transpose"(%{{.*}}) {perm = array<i64: 1, 0>}
// CHECK:         "dlc.relu"
// CHECK:         "dlc.add"
// CHECK:         return
func.func @test_no_sink(%x: tensor<3x3xf32>, %y: tensor<3x3xf32>) -> (tensor<3x3xf32>, tensor<3x3xf32>) {
  %t = "dlc.transpose"(%x) {perm = array<i64: 1, 0>} : (tensor<3x3xf32>) -> tensor<3x3xf32>
  %r = "dlc.relu"(%t) : (tensor<3x3xf32>) -> tensor<3x3xf32>
  %a = "dlc.add"(%t, %y) : (tensor<3x3xf32>, tensor<3x3xf32>) -> tensor<3x3xf32>
  return %r, %a : tensor<3x3xf32>, tensor<3x3xf32>
}

// -----

// Negative: x - transpose(x) (found by dlc fuzz, seed 20261208): the transpose is its own
// "partner" (a transpose of the other operand by the inverse permutation); sinking it rebuilt
// the same pattern forever ("failed to converge"). It stays.

// CHECK-LABEL: func.func @test_self_partner
// CHECK-SAME:    (%[[X:.*]]: tensor<2x2xf32>)
// CHECK-NEXT:    %[[T:.*]] = "dlc.transpose"(%[[X]]) {perm = array<i64: 1, 0>}
// CHECK-NEXT:    %[[S:.*]] = "dlc.sub"(%[[X]], %[[T]])
// CHECK-NEXT:    return %[[S]]
func.func @test_self_partner(%x: tensor<2x2xf32>) -> tensor<2x2xf32> {
  %t = "dlc.transpose"(%x) {perm = array<i64: 1, 0>} : (tensor<2x2xf32>) -> tensor<2x2xf32>
  %s = "dlc.sub"(%x, %t) : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  return %s : tensor<2x2xf32>
}

// -----

// x * sigmoid(x) (SiLU) on a transposed x: the transpose has two uses, both elementwise ops
// that read nothing else; it sinks below both and cancels.

// CHECK-LABEL: func.func @test_sink_silu
// CHECK-SAME:    (%[[X:.*]]: tensor<1x4x4x8xf32>)
// CHECK-NEXT:    %[[S:.*]] = "dlc.unary"(%[[X]]) {fn = "sigmoid"
// CHECK-NEXT:    %[[M:.*]] = "dlc.mul"(%[[X]], %[[S]])
// CHECK-NEXT:    return %[[M]] : tensor<1x4x4x8xf32>
func.func @test_sink_silu(%x: tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32> {
  %t = "dlc.transpose"(%x) {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x4x4x8xf32>) -> tensor<1x8x4x4xf32>
  %s = "dlc.unary"(%t) {fn = "sigmoid", params = array<f64>} : (tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
  %m = "dlc.mul"(%t, %s) : (tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
  %b = "dlc.transpose"(%m) {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x8x4x4xf32>) -> tensor<1x4x4x8xf32>
  return %b : tensor<1x4x4x8xf32>
}

// -----

// x * hardsigmoid-like chain (relu(x + 3) * c): binary ops with a constant are part of the chain.

// CHECK-LABEL: func.func @test_sink_chain
// CHECK-NOT:     "dlc.transpose"
// CHECK:         return
func.func @test_sink_chain(%x: tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32> {
  %c = "dlc.constant"() {value = dense<3.0> : tensor<f32>} : () -> tensor<f32>
  %t = "dlc.transpose"(%x) {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x4x4x8xf32>) -> tensor<1x8x4x4xf32>
  %a = "dlc.add"(%t, %c) : (tensor<1x8x4x4xf32>, tensor<f32>) -> tensor<1x8x4x4xf32>
  %r = "dlc.relu"(%a) : (tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
  %m = "dlc.mul"(%t, %r) : (tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
  %b = "dlc.transpose"(%m) {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x8x4x4xf32>) -> tensor<1x4x4x8xf32>
  return %b : tensor<1x4x4x8xf32>
}

// -----

// The scale of a squeeze-and-excitation block, [1, C, 1, 1], broadcast over a transposed
// activation: the small scale is transposed back (a reshape, it moves no data) and the large
// transpose sinks and cancels.

// CHECK-LABEL: func.func @test_sink_broadcast_scale
// CHECK-SAME:    (%[[X:.*]]: tensor<1x4x4x8xf32>, %[[S:.*]]: tensor<1x8x1x1xf32>)
// CHECK-NEXT:    %[[T:.*]] = "dlc.reshape"(%[[S]]) {shape = array<i64: 1, 1, 1, 8>}
// CHECK-NEXT:    %[[M:.*]] = "dlc.mul"(%[[T]], %[[X]])
// CHECK-NEXT:    return %[[M]] : tensor<1x4x4x8xf32>
func.func @test_sink_broadcast_scale(%x: tensor<1x4x4x8xf32>, %s: tensor<1x8x1x1xf32>) -> tensor<1x4x4x8xf32> {
  %t = "dlc.transpose"(%x) {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x4x4x8xf32>) -> tensor<1x8x4x4xf32>
  %m = "dlc.mul"(%s, %t) : (tensor<1x8x1x1xf32>, tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
  %b = "dlc.transpose"(%m) {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x8x4x4xf32>) -> tensor<1x4x4x8xf32>
  return %b : tensor<1x4x4x8xf32>
}

// -----

// Negative: x * sigmoid(x) where sigmoid(x) has another use: sinking would leave the transpose
// for that use and add one below the mul.

// CHECK-LABEL: func.func @test_no_sink_shared_chain
// CHECK:         "dlc.transpose"(%{{.*}}) {perm = array<i64: 0, 3, 1, 2>}
// CHECK-NEXT:    "dlc.unary"
// CHECK-NEXT:    "dlc.mul"
func.func @test_no_sink_shared_chain(%x: tensor<1x4x4x8xf32>) -> (tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>) {
  %t = "dlc.transpose"(%x) {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x4x4x8xf32>) -> tensor<1x8x4x4xf32>
  %s = "dlc.unary"(%t) {fn = "sigmoid", params = array<f64>} : (tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
  %m = "dlc.mul"(%t, %s) : (tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
  return %m, %s : tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>
}

// -----

// A per-tensor quantize / dequantize pair is elementwise: the transpose sinks below both (the
// integer convs of a QDQ model meet the next conv's transpose there); a per-channel dequantize
// keeps it.

// CHECK-LABEL: func.func @test_quantize_pair
// CHECK:         %[[Q:.*]] = "dlc.quantize"(%arg0
// CHECK:         %[[D:.*]] = "dlc.dequantize"(%[[Q]]
// CHECK:         %[[T:.*]] = "dlc.transpose"(%[[D]]) {perm = array<i64: 0, 3, 1, 2>}
// CHECK:         return %[[T]]
func.func @test_quantize_pair(%x: tensor<1x4x4x2xf32>) -> tensor<1x2x4x4xf32> {
  %s = "dlc.constant"() {value = dense<0.5> : tensor<f32>} : () -> tensor<f32>
  %z = "dlc.constant"() {value = dense<3> : tensor<ui8>} : () -> tensor<ui8>
  %t = "dlc.transpose"(%x) {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x4x4x2xf32>) -> tensor<1x2x4x4xf32>
  %q = "dlc.quantize"(%t, %s, %z) {axis = 0 : i64, block_size = 0 : i64, to = ui8} : (tensor<1x2x4x4xf32>, tensor<f32>, tensor<ui8>) -> tensor<1x2x4x4xui8>
  %d = "dlc.dequantize"(%q, %s, %z) {axis = 0 : i64, block_size = 0 : i64, to = f32} : (tensor<1x2x4x4xui8>, tensor<f32>, tensor<ui8>) -> tensor<1x2x4x4xf32>
  return %d : tensor<1x2x4x4xf32>
}

// CHECK-LABEL: func.func @test_per_channel_dequantize
// CHECK:         "dlc.transpose"
// CHECK:         "dlc.dequantize"
func.func @test_per_channel_dequantize(%x: tensor<1x4x4x2xi8>) -> tensor<1x2x4x4xf32> {
  %s = "dlc.constant"() {value = dense<[0.5, 0.25]> : tensor<2xf32>} : () -> tensor<2xf32>
  %t = "dlc.transpose"(%x) {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x4x4x2xi8>) -> tensor<1x2x4x4xi8>
  %d = "dlc.dequantize"(%t, %s) {axis = 1 : i64, block_size = 0 : i64, to = f32} : (tensor<1x2x4x4xi8>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
  return %d : tensor<1x2x4x4xf32>
}

// -----

// A DenseNet block: x (a transpose to NCHW) is both the concat's operand and its batch
// norm's (a mul by a [C, 1, 1] constant, numpy-broadcast); the concat's other operand is a
// transpose used by it alone. The transpose sinks through both uses (the constant gets its
// leading unit dim, then is transposed back: [1, 1, 1, C]), the concat runs on the channels
// axis of NHWC, and the transposes meet their inverses and vanish.

// CHECK-LABEL: func.func @test_sink_dense_block
// CHECK-SAME:    (%[[X:.*]]: tensor<1x4x4x2xf32>, %[[Y:.*]]: tensor<1x4x4x3xf32>)
// CHECK-NOT:     dlc.transpose
// CHECK-DAG:     "dlc.concat"(%[[X]], %[[Y]]) {axis = 3 : i64}
// CHECK-DAG:     %[[C:.*]] = "dlc.constant"() {value = dense<{{.*}}> : tensor<1x1x1x2xf32>}
// CHECK-DAG:     "dlc.mul"(%[[X]], %[[C]])
// CHECK-NOT:     dlc.transpose
// CHECK:         return
func.func @test_sink_dense_block(%x: tensor<1x4x4x2xf32>, %y: tensor<1x4x4x3xf32>) -> (tensor<1x4x4x5xf32>, tensor<1x4x4x2xf32>) {
  %t = "dlc.transpose"(%x) {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x4x4x2xf32>) -> tensor<1x2x4x4xf32>
  %u = "dlc.transpose"(%y) {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x4x4x3xf32>) -> tensor<1x3x4x4xf32>
  %cat = "dlc.concat"(%t, %u) {axis = 1 : i64} : (tensor<1x2x4x4xf32>, tensor<1x3x4x4xf32>) -> tensor<1x5x4x4xf32>
  %c = "dlc.constant"() {value = dense<[[[2.0]], [[3.0]]]> : tensor<2x1x1xf32>} : () -> tensor<2x1x1xf32>
  %m = "dlc.mul"(%t, %c) : (tensor<1x2x4x4xf32>, tensor<2x1x1xf32>) -> tensor<1x2x4x4xf32>
  %a = "dlc.transpose"(%cat) {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x5x4x4xf32>) -> tensor<1x4x4x5xf32>
  %b = "dlc.transpose"(%m) {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x2x4x4xf32>) -> tensor<1x4x4x2xf32>
  return %a, %b : tensor<1x4x4x5xf32>, tensor<1x4x4x2xf32>
}

// -----

// Negative: a concat whose other operand is a transpose with another use (here returned):
// sinking into the concat would leave that transpose computed as well. Both stay before it.

// CHECK-LABEL: func.func @test_no_sink_shared_partner
// CHECK:         "dlc.transpose"
// CHECK:         "dlc.transpose"
// CHECK:         "dlc.concat"(%{{.*}}, %{{.*}}) {axis = 1 : i64}
func.func @test_no_sink_shared_partner(%x: tensor<1x4x4x2xf32>, %y: tensor<1x4x4x3xf32>) -> (tensor<1x5x4x4xf32>, tensor<1x3x4x4xf32>) {
  %t = "dlc.transpose"(%x) {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x4x4x2xf32>) -> tensor<1x2x4x4xf32>
  %u = "dlc.transpose"(%y) {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x4x4x3xf32>) -> tensor<1x3x4x4xf32>
  %cat = "dlc.concat"(%t, %u) {axis = 1 : i64} : (tensor<1x2x4x4xf32>, tensor<1x3x4x4xf32>) -> tensor<1x5x4x4xf32>
  return %cat, %u : tensor<1x5x4x4xf32>, tensor<1x3x4x4xf32>
}
