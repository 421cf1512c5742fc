// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-to-linalg)' | FileCheck %s
// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-to-linalg)' | FileCheck %s --check-prefix=LOWERED

// LOWERED-NOT: "dlc.

// dlc.concat -> tensor.insert_slice of each operand into a tensor.empty, at running offsets.

// CHECK-LABEL: func.func @test_concat_axis_1
// CHECK-SAME:    (%[[A:.*]]: tensor<2x3xf32>, %[[B:.*]]: tensor<2x1xf32>)
// CHECK:         %[[INIT:.*]] = tensor.empty() : tensor<2x4xf32>
// CHECK-NEXT:    %[[S0:.*]] = tensor.insert_slice %[[A]] into %[[INIT]][0, 0] [2, 3] [1, 1] : tensor<2x3xf32> into tensor<2x4xf32>
// CHECK-NEXT:    %[[S1:.*]] = tensor.insert_slice %[[B]] into %[[S0]][0, 3] [2, 1] [1, 1] : tensor<2x1xf32> into tensor<2x4xf32>
// CHECK-NEXT:    return %[[S1]] : tensor<2x4xf32>
func.func @test_concat_axis_1(%a: tensor<2x3xf32>, %b: tensor<2x1xf32>) -> tensor<2x4xf32> {
  %0 = "dlc.concat"(%a, %b) {axis = 1} : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

// A chain of concats on one axis (how the importer writes Concat of N inputs) fills one tensor.

// CHECK-LABEL: func.func @test_concat_chain
// CHECK-SAME:    (%[[A:.*]]: tensor<1x2xi64>, %[[B:.*]]: tensor<2x2xi64>, %[[C:.*]]: tensor<3x2xi64>)
// CHECK:         %[[INIT:.*]] = tensor.empty() : tensor<6x2xi64>
// CHECK-NEXT:    %[[S0:.*]] = tensor.insert_slice %[[A]] into %[[INIT]][0, 0] [1, 2] [1, 1]
// CHECK-NEXT:    %[[S1:.*]] = tensor.insert_slice %[[B]] into %[[S0]][1, 0] [2, 2] [1, 1]
// CHECK-NEXT:    %[[S2:.*]] = tensor.insert_slice %[[C]] into %[[S1]][3, 0] [3, 2] [1, 1]
// CHECK-NEXT:    return %[[S2]] : tensor<6x2xi64>
func.func @test_concat_chain(%a: tensor<1x2xi64>, %b: tensor<2x2xi64>, %c: tensor<3x2xi64>) -> tensor<6x2xi64> {
  %0 = "dlc.concat"(%a, %b) {axis = 0} : (tensor<1x2xi64>, tensor<2x2xi64>) -> tensor<3x2xi64>
  %1 = "dlc.concat"(%0, %c) {axis = 0} : (tensor<3x2xi64>, tensor<3x2xi64>) -> tensor<6x2xi64>
  return %1 : tensor<6x2xi64>
}

// -----

// An inner concat with other uses on the first operand of the next is its prefix (DenseNet's
// blocks): one tensor of the outer size, the inner's users read a slice of it.

// CHECK-LABEL: func.func @test_concat_chain_shared
// CHECK:         %[[INIT:.*]] = tensor.empty() : tensor<2x5xf32>
// CHECK-NEXT:    %[[S0:.*]] = tensor.insert_slice %{{.*}} into %[[INIT]][0, 0] [2, 3] [1, 1]
// CHECK-NEXT:    %[[S1:.*]] = tensor.insert_slice %{{.*}} into %[[S0]][0, 3] [2, 1] [1, 1]
// CHECK-NEXT:    %[[INNER:.*]] = tensor.extract_slice %[[S1]][0, 0] [2, 4] [1, 1] : tensor<2x5xf32> to tensor<2x4xf32>
// CHECK-NEXT:    %[[S2:.*]] = tensor.insert_slice %{{.*}} into %[[S1]][0, 4] [2, 1] [1, 1]
// CHECK-NEXT:    return %[[INNER]], %[[S2]]
func.func @test_concat_chain_shared(%a: tensor<2x3xf32>, %b: tensor<2x1xf32>) -> (tensor<2x4xf32>, tensor<2x5xf32>) {
  %0 = "dlc.concat"(%a, %b) {axis = 1} : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x4xf32>
  %1 = "dlc.concat"(%0, %b) {axis = 1} : (tensor<2x4xf32>, tensor<2x1xf32>) -> tensor<2x5xf32>
  return %0, %1 : tensor<2x4xf32>, tensor<2x5xf32>
}

// -----

// A prefix that is the first leaf of a chain (a layer adding two features at once: concat of
// a concat) grows into the chain's last concat; one that is not its first leaf is a tensor of
// its own, inserted whole.

// CHECK-LABEL: func.func @test_concat_prefix_of_a_chain
// CHECK:         %[[INIT:.*]] = tensor.empty() : tensor<2x7xf32>
// CHECK-NEXT:    %[[S0:.*]] = tensor.insert_slice %{{.*}} into %[[INIT]][0, 0] [2, 3] [1, 1]
// CHECK-NEXT:    %[[S1:.*]] = tensor.insert_slice %{{.*}} into %[[S0]][0, 3] [2, 1] [1, 1]
// CHECK-NEXT:    %[[INNER:.*]] = tensor.extract_slice %[[S1]][0, 0] [2, 4] [1, 1]
// CHECK-NEXT:    %[[S2:.*]] = tensor.insert_slice %{{.*}} into %[[S1]][0, 4] [2, 1] [1, 1]
// CHECK-NEXT:    %[[S3:.*]] = tensor.insert_slice %{{.*}} into %[[S2]][0, 5] [2, 2] [1, 1]
// CHECK-NEXT:    return %[[INNER]], %[[S3]]
// CHECK-LABEL: func.func @test_concat_prefix_not_first
// CHECK:         tensor.empty() : tensor<2x4xf32>
// CHECK:         tensor.empty() : tensor<2x7xf32>
// CHECK-NOT:     tensor.extract_slice
func.func @test_concat_prefix_of_a_chain(%a: tensor<2x3xf32>, %b: tensor<2x1xf32>, %c: tensor<2x2xf32>) -> (tensor<2x4xf32>, tensor<2x7xf32>) {
  %0 = "dlc.concat"(%a, %b) {axis = 1} : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x4xf32>
  %1 = "dlc.concat"(%0, %b) {axis = 1} : (tensor<2x4xf32>, tensor<2x1xf32>) -> tensor<2x5xf32>
  %2 = "dlc.concat"(%1, %c) {axis = 1} : (tensor<2x5xf32>, tensor<2x2xf32>) -> tensor<2x7xf32>
  return %0, %2 : tensor<2x4xf32>, tensor<2x7xf32>
}
func.func @test_concat_prefix_not_first(%a: tensor<2x3xf32>, %b: tensor<2x1xf32>, %c: tensor<2x2xf32>) -> (tensor<2x4xf32>, tensor<2x7xf32>) {
  %0 = "dlc.concat"(%a, %b) {axis = 1} : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x4xf32>
  %1 = "dlc.concat"(%0, %b) {axis = 1} : (tensor<2x4xf32>, tensor<2x1xf32>) -> tensor<2x5xf32>
  %2 = "dlc.concat"(%c, %1) {axis = 1} : (tensor<2x2xf32>, tensor<2x5xf32>) -> tensor<2x7xf32>
  return %0, %2 : tensor<2x4xf32>, tensor<2x7xf32>
}

// -----

// An inner concat used as the second operand, or on another axis, stays a tensor of its own.

// CHECK-LABEL: func.func @test_concat_not_a_prefix
// CHECK:         tensor.empty() : tensor<2x4xf32>
// CHECK:         tensor.empty() : tensor<2x5xf32>
// CHECK:         tensor.empty() : tensor<4x4xf32>
// CHECK-NOT:     tensor.extract_slice
func.func @test_concat_not_a_prefix(%a: tensor<2x3xf32>, %b: tensor<2x1xf32>) -> (tensor<2x4xf32>, tensor<2x5xf32>, tensor<4x4xf32>) {
  %0 = "dlc.concat"(%a, %b) {axis = 1} : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x4xf32>
  %1 = "dlc.concat"(%b, %0) {axis = 1} : (tensor<2x1xf32>, tensor<2x4xf32>) -> tensor<2x5xf32>
  %2 = "dlc.concat"(%0, %0) {axis = 0} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<4x4xf32>
  return %0, %1, %2 : tensor<2x4xf32>, tensor<2x5xf32>, tensor<4x4xf32>
}

// -----

// Bool tensors move as their i8 storage.

// CHECK-LABEL: func.func @test_concat_bool
// CHECK-SAME:    (%{{.*}}: tensor<2xi8>, %{{.*}}: tensor<3xi8>) -> tensor<5xi8>
// CHECK:         tensor.insert_slice %{{.*}} into %{{.*}}[2] [3] [1] : tensor<3xi8> into tensor<5xi8>
func.func @test_concat_bool(%a: tensor<2xi1>, %b: tensor<3xi1>) -> tensor<5xi1> {
  %0 = "dlc.concat"(%a, %b) {axis = 0} : (tensor<2xi1>, tensor<3xi1>) -> tensor<5xi1>
  return %0 : tensor<5xi1>
}

// -----

// dlc.slice with positive steps -> tensor.extract_slice.

// CHECK-LABEL: func.func @test_slice_steps
// CHECK-SAME:    (%[[X:.*]]: tensor<5x6xf32>)
// CHECK-NEXT:    %[[R:.*]] = tensor.extract_slice %[[X]][1, 0] [2, 3] [2, 2] : tensor<5x6xf32> to tensor<2x3xf32>
// CHECK-NEXT:    return %[[R]]
func.func @test_slice_steps(%x: tensor<5x6xf32>) -> tensor<2x3xf32> {
  %0 = "dlc.slice"(%x) {starts = array<i64: 1, 0>, sizes = array<i64: 2, 3>, steps = array<i64: 2, 2>} : (tensor<5x6xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// A negative step -> the region read (positive steps applied), then a linalg.generic reading
// it at start + step * d along the reversed axes (the others read as plain d, sizes equal).

// CHECK-DAG:   #[[READ:map[0-9]*]] = affine_map<(d0, d1) -> (d0 * -2 + 4, d1)>
// CHECK-DAG:   #[[ID:map[0-9]*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @test_slice_negative_step
// CHECK:         %[[R:.*]] = tensor.extract_slice %{{.*}}[0, 1] [5, 2] [1, 2] : tensor<5x6xf32> to tensor<5x2xf32>
// CHECK:         linalg.generic {indexing_maps = [#[[READ]], #[[ID]]], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME:      ins(%[[R]] : tensor<5x2xf32>) outs(%{{.*}} : tensor<3x2xf32>)
// CHECK-NEXT:    ^bb0(%[[IN:[^:]+]]: f32, %{{[^:]+}}: f32):
// CHECK-NEXT:      linalg.yield %[[IN]] : f32
func.func @test_slice_negative_step(%x: tensor<5x6xf32>) -> tensor<3x2xf32> {
  %0 = "dlc.slice"(%x) {starts = array<i64: 4, 1>, sizes = array<i64: 3, 2>, steps = array<i64: -2, 2>} : (tensor<5x6xf32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

// dlc.broadcast: new leading axes only -> linalg.broadcast.

// CHECK-LABEL: func.func @test_broadcast_leading
// CHECK:         %[[INIT:.*]] = tensor.empty() : tensor<2x3x4xf32>
// CHECK-NEXT:    linalg.broadcast ins(%{{.*}} : tensor<3x4xf32>) outs(%[[INIT]] : tensor<2x3x4xf32>) dimensions = [0]
func.func @test_broadcast_leading(%x: tensor<3x4xf32>) -> tensor<2x3x4xf32> {
  %0 = "dlc.broadcast"(%x) {shape = array<i64: 2, 3, 4>} : (tensor<3x4xf32>) -> tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}

// -----

// Size-1 axes -> linalg.generic reading them at index 0.

// CHECK-DAG:   #[[READ:map[0-9]*]] = affine_map<(d0, d1, d2) -> (d1, 0)>
// CHECK-DAG:   #[[ID:map[0-9]*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-LABEL: func.func @test_broadcast_unit_axis
// CHECK:         linalg.generic {indexing_maps = [#[[READ]], #[[ID]]], iterator_types = ["parallel", "parallel", "parallel"]}
// CHECK-SAME:      ins(%{{.*}} : tensor<3x1xi32>) outs(%{{.*}} : tensor<2x3x4xi32>)
func.func @test_broadcast_unit_axis(%x: tensor<3x1xi32>) -> tensor<2x3x4xi32> {
  %0 = "dlc.broadcast"(%x) {shape = array<i64: 2, 3, 4>} : (tensor<3x1xi32>) -> tensor<2x3x4xi32>
  return %0 : tensor<2x3x4xi32>
}

// -----

// CHECK-LABEL: func.func @test_broadcast_same_shape
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-NEXT:    return %[[X]] : tensor<2x3xf32>
func.func @test_broadcast_same_shape(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = "dlc.broadcast"(%x) {shape = array<i64: 2, 3>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// dlc.pad {constant} without a value -> linalg.fill 0, then tensor.insert_slice at the befores.

// CHECK-LABEL: func.func @test_pad_zero
// CHECK-SAME:    (%[[X:.*]]: tensor<3x4xf32>)
// CHECK:         %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK:         %[[FILL:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%{{.*}} : tensor<4x7xf32>)
// CHECK-NEXT:    %[[R:.*]] = tensor.insert_slice %[[X]] into %[[FILL]][1, 2] [3, 4] [1, 1] : tensor<3x4xf32> into tensor<4x7xf32>
// CHECK-NEXT:    return %[[R]]
func.func @test_pad_zero(%x: tensor<3x4xf32>) -> tensor<4x7xf32> {
  %0 = "dlc.pad"(%x) {mode = "constant", pads = array<i64: 1, 2, 0, 1>} : (tensor<3x4xf32>) -> tensor<4x7xf32>
  return %0 : tensor<4x7xf32>
}

// -----

// A pad value operand (rank 0) is broadcast by a linalg.generic.

// CHECK-DAG:   #[[SCALAR:map[0-9]*]] = affine_map<(d0, d1) -> ()>
// CHECK-LABEL: func.func @test_pad_value
// CHECK-SAME:    (%[[X:.*]]: tensor<3x4xi64>, %[[V:.*]]: tensor<i64>)
// CHECK:         %[[BASE:.*]] = linalg.generic {indexing_maps = [#[[SCALAR]], #{{.*}}]
// CHECK-SAME:      ins(%[[V]] : tensor<i64>) outs(%{{.*}} : tensor<4x7xi64>)
// CHECK:         tensor.insert_slice %[[X]] into %[[BASE]][1, 2] [3, 4] [1, 1]
func.func @test_pad_value(%x: tensor<3x4xi64>, %v: tensor<i64>) -> tensor<4x7xi64> {
  %0 = "dlc.pad"(%x, %v) {mode = "constant", pads = array<i64: 1, 2, 0, 1>} : (tensor<3x4xi64>, tensor<i64>) -> tensor<4x7xi64>
  return %0 : tensor<4x7xi64>
}

// -----

// dlc.pad {edge} -> linalg.generic gathering x[i, clamp(j - 2, 0, 3)]; unpadded axes read as is.

// CHECK-LABEL: func.func @test_pad_edge
// CHECK-SAME:    (%[[X:.*]]: tensor<3x4xf32>)
// CHECK-DAG:     %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG:     %[[C2:.*]] = arith.constant 2 : index
// CHECK-DAG:     %[[C3:.*]] = arith.constant 3 : index
// CHECK:         linalg.generic {indexing_maps = [#{{.*}}], iterator_types = ["parallel", "parallel"]} outs(%{{.*}} : tensor<3x7xf32>)
// CHECK-NEXT:    ^bb0(%{{[^:]+}}: f32):
// CHECK-NEXT:      %[[I:.*]] = linalg.index 0 : index
// CHECK-NEXT:      %[[J:.*]] = linalg.index 1 : index
// CHECK-NEXT:      %[[S:.*]] = arith.subi %[[J]], %[[C2]] : index
// CHECK-NEXT:      %[[LO:.*]] = arith.maxsi %[[S]], %[[C0]] : index
// CHECK-NEXT:      %[[K:.*]] = arith.minsi %[[LO]], %[[C3]] : index
// CHECK-NEXT:      %[[E:.*]] = tensor.extract %[[X]][%[[I]], %[[K]]] : tensor<3x4xf32>
// CHECK-NEXT:      linalg.yield %[[E]] : f32
func.func @test_pad_edge(%x: tensor<3x4xf32>) -> tensor<3x7xf32> {
  %0 = "dlc.pad"(%x) {mode = "edge", pads = array<i64: 0, 2, 0, 1>} : (tensor<3x4xf32>) -> tensor<3x7xf32>
  return %0 : tensor<3x7xf32>
}

// -----

// dlc.pad {wrap} -> x[(j + (-2 mod 4)) mod 4]: no negative operand, a constant divisor.

// CHECK-LABEL: func.func @test_pad_wrap
// CHECK-DAG:     %[[C2:.*]] = arith.constant 2 : index
// CHECK-DAG:     %[[C4:.*]] = arith.constant 4 : index
// CHECK:         %[[J:.*]] = linalg.index 1 : index
// CHECK-NEXT:    %[[S:.*]] = arith.addi %[[J]], %[[C2]] : index
// CHECK-NEXT:    %[[K:.*]] = arith.remui %[[S]], %[[C4]] : index
// CHECK-NEXT:    tensor.extract %{{.*}}[%{{.*}}, %[[K]]] : tensor<3x4xf32>
func.func @test_pad_wrap(%x: tensor<3x4xf32>) -> tensor<3x7xf32> {
  %0 = "dlc.pad"(%x) {mode = "wrap", pads = array<i64: 0, 2, 0, 1>} : (tensor<3x4xf32>) -> tensor<3x7xf32>
  return %0 : tensor<3x7xf32>
}

// -----

// dlc.pad {reflect} -> t = (i + (-1 mod 4)) mod 4 (period 2 * (3 - 1)), then t < 3 ? t : 4 - t.

// CHECK-LABEL: func.func @test_pad_reflect
// CHECK-DAG:     %[[C3:.*]] = arith.constant 3 : index
// CHECK-DAG:     %[[C4:.*]] = arith.constant 4 : index
// CHECK:         %[[I:.*]] = linalg.index 0 : index
// CHECK-NEXT:    %[[S:.*]] = arith.addi %[[I]], %[[C3]] : index
// CHECK-NEXT:    %[[T:.*]] = arith.remui %[[S]], %[[C4]] : index
// CHECK-NEXT:    %[[IN:.*]] = arith.cmpi ult, %[[T]], %[[C3]] : index
// CHECK-NEXT:    %[[M:.*]] = arith.subi %[[C4]], %[[T]] : index
// CHECK-NEXT:    %[[K:.*]] = arith.select %[[IN]], %[[T]], %[[M]] : index
// CHECK:         tensor.extract %{{.*}}[%[[K]], %{{.*}}] : tensor<3x2xf32>
func.func @test_pad_reflect(%x: tensor<3x2xf32>) -> tensor<5x2xf32> {
  %0 = "dlc.pad"(%x) {mode = "reflect", pads = array<i64: 1, 0, 1, 0>} : (tensor<3x2xf32>) -> tensor<5x2xf32>
  return %0 : tensor<5x2xf32>
}

// -----

// dlc.trilu {upper, k} -> linalg.generic keeping x where column >= row + k, else 0.

// CHECK-LABEL: func.func @test_trilu_upper
// CHECK-DAG:     %[[ZERO:.*]] = arith.constant 0 : i32
// CHECK-DAG:     %[[K:.*]] = arith.constant -1 : index
// CHECK:         linalg.generic
// CHECK-SAME:      ins(%{{.*}} : tensor<2x3x4xi32>) outs(%{{.*}} : tensor<2x3x4xi32>)
// CHECK-NEXT:    ^bb0(%[[IN:[^:]+]]: i32, %{{[^:]+}}: i32):
// CHECK-NEXT:      %[[ROW:.*]] = linalg.index 1 : index
// CHECK-NEXT:      %[[COL:.*]] = linalg.index 2 : index
// CHECK-NEXT:      %[[D:.*]] = arith.addi %[[ROW]], %[[K]] : index
// CHECK-NEXT:      %[[KEEP:.*]] = arith.cmpi sge, %[[COL]], %[[D]] : index
// CHECK-NEXT:      %[[R:.*]] = arith.select %[[KEEP]], %[[IN]], %[[ZERO]] : i32
// CHECK-NEXT:      linalg.yield %[[R]] : i32
func.func @test_trilu_upper(%x: tensor<2x3x4xi32>) -> tensor<2x3x4xi32> {
  %0 = "dlc.trilu"(%x) {upper = 1, k = -1} : (tensor<2x3x4xi32>) -> tensor<2x3x4xi32>
  return %0 : tensor<2x3x4xi32>
}

// -----

// CHECK-LABEL: func.func @test_trilu_lower
// CHECK:         arith.cmpi sle
// CHECK:         arith.select %{{.*}}, %{{.*}}, %{{.*}} : f32
func.func @test_trilu_lower(%x: tensor<3x3xf32>) -> tensor<3x3xf32> {
  %0 = "dlc.trilu"(%x) {upper = 0, k = 0} : (tensor<3x3xf32>) -> tensor<3x3xf32>
  return %0 : tensor<3x3xf32>
}

// -----

// An empty slice starting at the end of its axis (CausalConvWithState, kernel size 1) reads
// nothing: a tensor.empty (extract_slice would not verify an offset equal to the size).

// CHECK-LABEL: func.func @test_slice_empty_at_the_end
// CHECK-NEXT:    %[[E:.*]] = tensor.empty() : tensor<1x2x0xf32>
// CHECK-NEXT:    return %[[E]]
func.func @test_slice_empty_at_the_end(%x: tensor<1x2x8xf32>) -> tensor<1x2x0xf32> {
  %0 = "dlc.slice"(%x) {starts = array<i64: 0, 0, 8>, sizes = array<i64: 1, 2, 0>, steps = array<i64: 1, 1, 1>} : (tensor<1x2x8xf32>) -> tensor<1x2x0xf32>
  return %0 : tensor<1x2x0xf32>
}
