// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-to-linalg)' | FileCheck %s
// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-to-linalg)' | FileCheck %s --check-prefix=LOWERED

// LOWERED-NOT: "dlc.

// dlc.gather: a linalg.generic over the result reads the indices on the gathered axes and
// extracts from the data; the index wraps when negative and is clamped into [0, 4].

// CHECK-DAG:   #[[IDX:map[0-9]*]] = affine_map<(d0, d1, d2) -> (d1)>
// CHECK-DAG:   #[[ID:map[0-9]*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-LABEL: func.func @test_gather_axis1
// CHECK-SAME:    (%[[DATA:.*]]: tensor<3x5x4xf32>, %[[INDICES:.*]]: tensor<2xi32>)
// CHECK-DAG:     %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG:     %[[C4:.*]] = arith.constant 4 : index
// CHECK-DAG:     %[[C5:.*]] = arith.constant 5 : index
// CHECK:         %[[INIT:.*]] = tensor.empty() : tensor<3x2x4xf32>
// CHECK:         linalg.generic {indexing_maps = [#[[IDX]], #[[ID]]], iterator_types = ["parallel", "parallel", "parallel"]}
// CHECK-SAME:      ins(%[[INDICES]] : tensor<2xi32>) outs(%[[INIT]] : tensor<3x2x4xf32>)
// CHECK-NEXT:    ^bb0(%[[RAW:[^:]+]]: i32, %{{[^:]+}}: f32):
// CHECK-DAG:       %[[I0:.*]] = linalg.index 0 : index
// CHECK-DAG:       %[[I:.*]] = arith.index_cast %[[RAW]] : i32 to index
// CHECK:           %[[NEG:.*]] = arith.cmpi slt, %[[I]], %[[C0]] : index
// CHECK:           %[[UP:.*]] = arith.addi %[[I]], %[[C5]] : index
// CHECK:           %[[WRAPPED:.*]] = arith.select %[[NEG]], %[[UP]], %[[I]] : index
// CHECK:           %[[LOW:.*]] = arith.minsi %[[WRAPPED]], %[[C4]] : index
// CHECK:           %[[SAFE:.*]] = arith.maxsi %[[LOW]], %[[C0]] : index
// CHECK:           %[[I2:.*]] = linalg.index 2 : index
// CHECK:           %[[X:.*]] = tensor.extract %[[DATA]][%[[I0]], %[[SAFE]], %[[I2]]] : tensor<3x5x4xf32>
// CHECK:           linalg.yield %[[X]] : f32
func.func @test_gather_axis1(%d: tensor<3x5x4xf32>, %i: tensor<2xi32>) -> tensor<3x2x4xf32> {
  %0 = "dlc.gather"(%d, %i) {axis = 1 : i64} : (tensor<3x5x4xf32>, tensor<2xi32>) -> tensor<3x2x4xf32>
  return %0 : tensor<3x2x4xf32>
}

// -----

// Rank-0 indices: the gathered axis disappears; the indices' map has no results.

// CHECK-DAG:   #[[SCALAR:map[0-9]*]] = affine_map<(d0) -> ()>
// CHECK-LABEL: func.func @test_gather_scalar_index
// CHECK:         linalg.generic {indexing_maps = [#[[SCALAR]], #{{.*}}], iterator_types = ["parallel"]}
// CHECK-SAME:      ins(%{{.*}} : tensor<i64>) outs(%{{.*}} : tensor<3xf32>)
// CHECK:           tensor.extract %{{.*}}[%{{.*}}, %{{.*}}] : tensor<3x4xf32>
func.func @test_gather_scalar_index(%d: tensor<3x4xf32>, %i: tensor<i64>) -> tensor<3xf32> {
  %0 = "dlc.gather"(%d, %i) {axis = 1 : i64} : (tensor<3x4xf32>, tensor<i64>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// CHECK-LABEL: func.func @test_gather_elements
// CHECK-SAME:    (%[[DATA:.*]]: tensor<3x4xf32>, %[[INDICES:.*]]: tensor<3x2xi64>)
// CHECK:         linalg.generic {{.*}} ins(%[[INDICES]] : tensor<3x2xi64>) outs(%{{.*}} : tensor<3x2xf32>)
// CHECK:           %[[ROW:.*]] = linalg.index 0 : index
// CHECK:           %[[SAFE:.*]] = arith.maxsi
// CHECK:           %[[X:.*]] = tensor.extract %[[DATA]][%[[ROW]], %[[SAFE]]] : tensor<3x4xf32>
// CHECK:           linalg.yield %[[X]] : f32
func.func @test_gather_elements(%d: tensor<3x4xf32>, %i: tensor<3x2xi64>) -> tensor<3x2xf32> {
  %0 = "dlc.gather_elements"(%d, %i) {axis = 1 : i64} : (tensor<3x4xf32>, tensor<3x2xi64>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

// dlc.gather_nd: a linalg.generic with no inputs; its body reads each index of the tuple
// with tensor.extract, then the data.

// CHECK-LABEL: func.func @test_gather_nd
// CHECK-SAME:    (%[[DATA:.*]]: tensor<2x3x4xf32>, %[[INDICES:.*]]: tensor<5x2xi64>)
// CHECK-DAG:     %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG:     %[[C1:.*]] = arith.constant 1 : index
// CHECK:         linalg.generic {indexing_maps = [#{{.*}}], iterator_types = ["parallel", "parallel"]} outs(%{{.*}} : tensor<5x4xf32>)
// CHECK:           %[[I0:.*]] = linalg.index 0 : index
// CHECK:           %[[I1:.*]] = linalg.index 1 : index
// CHECK:           tensor.extract %[[INDICES]][%[[I0]], %[[C0]]] : tensor<5x2xi64>
// CHECK:           tensor.extract %[[INDICES]][%[[I0]], %[[C1]]] : tensor<5x2xi64>
// CHECK:           %[[A:.*]] = arith.maxsi
// CHECK:           %[[B:.*]] = arith.maxsi
// CHECK:           %[[X:.*]] = tensor.extract %[[DATA]][%[[A]], %[[B]], %[[I1]]] : tensor<2x3x4xf32>
// CHECK:           linalg.yield %[[X]] : f32
func.func @test_gather_nd(%d: tensor<2x3x4xf32>, %i: tensor<5x2xi64>) -> tensor<5x4xf32> {
  %0 = "dlc.gather_nd"(%d, %i) {batch_dims = 0 : i64} : (tensor<2x3x4xf32>, tensor<5x2xi64>) -> tensor<5x4xf32>
  return %0 : tensor<5x4xf32>
}

// -----

// dlc.scatter_elements: a copy of the data, then an scf.for nest over the updates carrying
// the tensor; each update is combined with the current element and inserted.

// CHECK-LABEL: func.func @test_scatter_elements_add
// CHECK-SAME:    (%[[DATA:.*]]: tensor<4x3xf32>, %[[INDICES:.*]]: tensor<2x3xi64>, %[[UPDATES:.*]]: tensor<2x3xf32>)
// CHECK:         %[[INIT:.*]] = tensor.empty() : tensor<4x3xf32>
// CHECK:         %[[COPY:.*]] = linalg.copy {{.*}} ins(%[[DATA]] : tensor<4x3xf32>) outs(%[[INIT]] : tensor<4x3xf32>)
// CHECK:         %[[RESULT:.*]] = scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[OUTER:.*]] = %[[COPY]]) -> (tensor<4x3xf32>)
// CHECK:           scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[ACC:.*]] = %[[OUTER]]) -> (tensor<4x3xf32>)
// CHECK:             tensor.extract %[[INDICES]][%[[I]], %[[J]]] : tensor<2x3xi64>
// CHECK:             %[[ROW:.*]] = arith.maxsi
// CHECK:             %[[OLD:.*]] = tensor.extract %[[ACC]][%[[ROW]], %[[J]]] : tensor<4x3xf32>
// CHECK:             %[[NEW:.*]] = tensor.extract %[[UPDATES]][%[[I]], %[[J]]] : tensor<2x3xf32>
// CHECK:             %[[SUM:.*]] = arith.addf %[[OLD]], %[[NEW]] : f32
// CHECK:             %[[INSERTED:.*]] = tensor.insert %[[SUM]] into %[[ACC]][%[[ROW]], %[[J]]] : tensor<4x3xf32>
// CHECK:             scf.yield %[[INSERTED]] : tensor<4x3xf32>
// CHECK:         return %[[RESULT]] : tensor<4x3xf32>
func.func @test_scatter_elements_add(%d: tensor<4x3xf32>, %i: tensor<2x3xi64>, %u: tensor<2x3xf32>) -> tensor<4x3xf32> {
  %0 = "dlc.scatter_elements"(%d, %i, %u) {axis = 0 : i64, reduction = "add"} : (tensor<4x3xf32>, tensor<2x3xi64>, tensor<2x3xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// Bool is stored as i8 0/1: reduction "add" is a logical or.

// CHECK-LABEL: func.func @test_scatter_elements_bool_add
// CHECK-SAME:    tensor<4xi8>
// CHECK:           %[[OR:.*]] = arith.ori %{{.*}}, %{{.*}} : i8
// CHECK:           tensor.insert %[[OR]] into
func.func @test_scatter_elements_bool_add(%d: tensor<4xi1>, %i: tensor<2xi64>, %u: tensor<2xi1>) -> tensor<4xi1> {
  %0 = "dlc.scatter_elements"(%d, %i, %u) {axis = 0 : i64, reduction = "add"} : (tensor<4xi1>, tensor<2xi64>, tensor<2xi1>) -> tensor<4xi1>
  return %0 : tensor<4xi1>
}

// -----

// CHECK-LABEL: func.func @test_scatter_nd_max
// CHECK-SAME:    (%[[DATA:.*]]: tensor<4x3xi32>, %[[INDICES:.*]]: tensor<2x1xi64>, %[[UPDATES:.*]]: tensor<2x3xi32>)
// CHECK-DAG:     %[[C0:.*]] = arith.constant 0 : index
// CHECK:         linalg.copy
// CHECK:         scf.for %[[I:.*]] = {{.*}} iter_args
// CHECK:           scf.for %[[J:.*]] = {{.*}} iter_args(%[[ACC:.*]] = %{{.*}})
// CHECK:             tensor.extract %[[INDICES]][%[[I]], %[[C0]]] : tensor<2x1xi64>
// CHECK:             %[[ROW:.*]] = arith.maxsi %{{.*}}, %[[C0]] : index
// CHECK:             %[[OLD:.*]] = tensor.extract %[[ACC]][%[[ROW]], %[[J]]]
// CHECK:             %[[NEW:.*]] = tensor.extract %[[UPDATES]][%[[I]], %[[J]]]
// CHECK:             %[[MAX:.*]] = arith.maxsi %[[OLD]], %[[NEW]] : i32
// CHECK:             tensor.insert %[[MAX]] into %[[ACC]][%[[ROW]], %[[J]]] : tensor<4x3xi32>
func.func @test_scatter_nd_max(%d: tensor<4x3xi32>, %i: tensor<2x1xi64>, %u: tensor<2x3xi32>) -> tensor<4x3xi32> {
  %0 = "dlc.scatter_nd"(%d, %i, %u) {reduction = "max"} : (tensor<4x3xi32>, tensor<2x1xi64>, tensor<2x3xi32>) -> tensor<4x3xi32>
  return %0 : tensor<4x3xi32>
}

// -----

// dlc.one_hot: off/on are read once; the body compares the (wrapped) index with the new axis.

// CHECK-DAG:   #[[IDX:map[0-9]*]] = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @test_one_hot
// CHECK-SAME:    (%[[INDICES:.*]]: tensor<3xi64>, %[[VALUES:.*]]: tensor<2xf32>)
// CHECK-DAG:     %[[DEPTH:.*]] = arith.constant 5 : i64
// CHECK-DAG:     %[[OFF:.*]] = tensor.extract %[[VALUES]][%c0] : tensor<2xf32>
// CHECK-DAG:     %[[ON:.*]] = tensor.extract %[[VALUES]][%c1] : tensor<2xf32>
// CHECK:         linalg.generic {indexing_maps = [#[[IDX]], #{{.*}}], iterator_types = ["parallel", "parallel"]} ins(%[[INDICES]] : tensor<3xi64>)
// CHECK-NEXT:    ^bb0(%[[RAW:[^:]+]]: i64, %{{[^:]+}}: f32):
// CHECK:           %[[COLUMN:.*]] = linalg.index 1 : index
// CHECK:           arith.addi %[[RAW]], %[[DEPTH]] : i64
// CHECK:           %[[WRAPPED:.*]] = arith.select
// CHECK:           %[[C:.*]] = arith.index_cast %[[COLUMN]] : index to i64
// CHECK:           %[[HIT:.*]] = arith.cmpi eq, %[[WRAPPED]], %[[C]] : i64
// CHECK:           %[[R:.*]] = arith.select %[[HIT]], %[[ON]], %[[OFF]] : f32
// CHECK:           linalg.yield %[[R]] : f32
func.func @test_one_hot(%i: tensor<3xi64>, %v: tensor<2xf32>) -> tensor<3x5xf32> {
  %0 = "dlc.one_hot"(%i, %v) {depth = 5 : i64, axis = 1 : i64} : (tensor<3xi64>, tensor<2xf32>) -> tensor<3x5xf32>
  return %0 : tensor<3x5xf32>
}

// -----

// Float indices are compared as floats (as onnx.reference does).

// CHECK-LABEL: func.func @test_one_hot_float_indices
// CHECK:           arith.cmpf olt
// CHECK:           arith.sitofp %{{.*}} : i64 to f32
// CHECK:           arith.cmpf oeq
func.func @test_one_hot_float_indices(%i: tensor<3xf32>, %v: tensor<2xi32>) -> tensor<4x3xi32> {
  %0 = "dlc.one_hot"(%i, %v) {depth = 4 : i64, axis = 0 : i64} : (tensor<3xf32>, tensor<2xi32>) -> tensor<4x3xi32>
  return %0 : tensor<4x3xi32>
}

// -----

// dlc.topk: both results start filled with 0; one scf.for per row (the axis excluded), one
// over the axis, one over the k slots carrying both tensors, the element, its index and the
// "shifting" flag. Floats compare in numpy's sort order, NaN above every number (x > y as
// y < x, or x NaN and y not).

// CHECK-LABEL: func.func @test_topk
// CHECK-SAME:    (%[[X:.*]]: tensor<3x5xf32>) -> (tensor<3x2xf32>, tensor<3x2xi64>)
// CHECK-DAG:     %[[C2:.*]] = arith.constant 2 : index
// CHECK-DAG:     %[[C3:.*]] = arith.constant 3 : index
// CHECK-DAG:     %[[C5:.*]] = arith.constant 5 : index
// CHECK-DAG:     %[[FALSE:.*]] = arith.constant false
// CHECK:         %[[VALUES:.*]] = linalg.fill {{.*}} -> tensor<3x2xf32>
// CHECK:         %[[INDICES:.*]] = linalg.fill {{.*}} -> tensor<3x2xi64>
// CHECK:         %[[R:.*]]:2 = scf.for %[[ROW:.*]] = %{{.*}} to %[[C3]] {{.*}} iter_args(%{{.*}} = %[[VALUES]], %{{.*}} = %[[INDICES]])
// CHECK:           scf.for %[[J:.*]] = %{{.*}} to %[[C5]]
// CHECK:             %[[V:.*]] = tensor.extract %[[X]][%[[ROW]], %[[J]]] : tensor<3x5xf32>
// CHECK:             %[[I:.*]] = arith.index_cast %[[J]] : index to i64
// CHECK:             scf.for %[[P:.*]] = %{{.*}} to %[[C2]] {{.*}} iter_args({{.*}}, %{{.*}} = %[[V]], %{{.*}} = %[[I]], %{{.*}} = %[[FALSE]]) -> (tensor<3x2xf32>, tensor<3x2xi64>, f32, i64, i1)
// CHECK:               arith.cmpi uge, %[[P]], %[[J]] : index
// CHECK:               arith.cmpf olt
// CHECK:               arith.cmpf uno
// CHECK:               tensor.insert {{.*}} : tensor<3x2xf32>
// CHECK:               tensor.insert {{.*}} : tensor<3x2xi64>
// CHECK:         return %[[R]]#0, %[[R]]#1 : tensor<3x2xf32>, tensor<3x2xi64>
func.func @test_topk(%x: tensor<3x5xf32>) -> (tensor<3x2xf32>, tensor<3x2xi64>) {
  %0:2 = "dlc.topk"(%x) {k = 2 : i64, axis = 1 : i64, largest = 1 : i64} : (tensor<3x5xf32>) -> (tensor<3x2xf32>, tensor<3x2xi64>)
  return %0#0, %0#1 : tensor<3x2xf32>, tensor<3x2xi64>
}

// -----

// Smallest of unsigned integers: an unsigned comparison.

// CHECK-LABEL: func.func @test_topk_smallest_unsigned
// CHECK-SAME:    tensor<6xi8>
// CHECK:               arith.cmpi ult, %{{.*}}, %{{.*}} : i8
func.func @test_topk_smallest_unsigned(%x: tensor<6xui8>) -> tensor<3xi64> {
  %0:2 = "dlc.topk"(%x) {k = 3 : i64, axis = 0 : i64, largest = 0 : i64} : (tensor<6xui8>) -> (tensor<3xui8>, tensor<3xi64>)
  return %0#1 : tensor<3xi64>
}
