// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-to-linalg)' | FileCheck %s
// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-to-linalg)' | FileCheck %s --check-prefix=LOWERED

// LOWERED-NOT: "dlc.

// dlc.nonzero: scf.for loops over x (row-major) carry the positions and the count; each
// element's indices go to column `count`, and the count grows where x != 0 (NaN included).

// CHECK-LABEL: func.func @test_nonzero
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3xf32>) -> (tensor<2x6xi64>, tensor<i64>)
// CHECK:         %[[INIT:[^ ]+]] = linalg.fill ins(%{{.*}} : i64) outs(%{{.*}} : tensor<2x6xi64>)
// CHECK:         %[[ROWS:.*]]:2 = scf.for %[[I:[^ ]+]] = %{{.*}} iter_args(%{{.*}} = %[[INIT]], %{{.*}} = %{{.*}}) -> (tensor<2x6xi64>, index)
// CHECK:           scf.for %[[J:[^ ]+]] = %{{.*}} iter_args(%[[P:[^ ]+]] = %{{.*}}, %[[COUNT:[^ ]+]] = %{{.*}}) -> (tensor<2x6xi64>, index)
// CHECK:             tensor.insert %{{.*}} into %[[P]][%{{.*}}, %[[COUNT]]] : tensor<2x6xi64>
// CHECK:             tensor.insert
// CHECK:             %[[V:[^ ]+]] = tensor.extract %[[X]][%[[I]], %[[J]]] : tensor<2x3xf32>
// CHECK:             arith.cmpf une, %[[V]]
// CHECK:             arith.addi %[[COUNT]]
// CHECK:         %[[N:[^ ]+]] = arith.index_cast %[[ROWS]]#1 : index to i64
// CHECK:         %[[C:[^ ]+]] = tensor.from_elements %[[N]] : tensor<i64>
// CHECK:         return %[[ROWS]]#0, %[[C]] : tensor<2x6xi64>, tensor<i64>
func.func @test_nonzero(%x: tensor<2x3xf32>) -> (tensor<2x6xi64>, tensor<i64>) {
  %0:2 = "dlc.nonzero"(%x) : (tensor<2x3xf32>) -> (tensor<2x6xi64>, tensor<i64>)
  return %0#0, %0#1 : tensor<2x6xi64>, tensor<i64>
}

// -----

// dlc.compress: one loop over the axis copies each slice to slot `count`, and the count
// grows where the condition (bool, stored as i8) holds.

// CHECK-LABEL: func.func @test_compress
// CHECK-SAME:    (%[[X:.*]]: tensor<3x4xf32>, %[[COND:.*]]: tensor<4xi8>)
// CHECK:         scf.for %[[J:[^ ]+]] = %{{.*}} iter_args(%{{.*}} = %{{.*}}, %[[COUNT:[^ ]+]] = %{{.*}}) -> (tensor<3x4xf32>, index)
// CHECK:           scf.for %[[I:[^ ]+]] =
// CHECK:             tensor.extract %[[X]][%[[I]], %[[J]]]
// CHECK:             tensor.insert %{{.*}}[%[[I]], %[[COUNT]]] : tensor<3x4xf32>
// CHECK:           tensor.extract %[[COND]][%[[J]]] : tensor<4xi8>
// CHECK:           arith.cmpi ne
// CHECK:         tensor.from_elements %{{.*}} : tensor<i64>
func.func @test_compress(%x: tensor<3x4xf32>, %c: tensor<4xi1>) -> (tensor<3x4xf32>, tensor<i64>) {
  %0:2 = "dlc.compress"(%x, %c) {axis = 1 : i64} : (tensor<3x4xf32>, tensor<4xi1>) -> (tensor<3x4xf32>, tensor<i64>)
  return %0#0, %0#1 : tensor<3x4xf32>, tensor<i64>
}

// -----

// dlc.runtime_topk: k is read at run time and clamped into [0, 5]; it bounds the slot loop
// of the insertion sort.

// CHECK-LABEL: func.func @test_runtime_topk
// CHECK-SAME:    (%[[X:.*]]: tensor<2x5xf32>, %[[K:.*]]: tensor<1xi64>)
// CHECK-DAG:     %[[C5:.*]] = arith.constant 5 : index
// CHECK:         %[[RAW:[^ ]+]] = tensor.extract %[[K]][%{{.*}}] : tensor<1xi64>
// CHECK:         %[[KI:[^ ]+]] = arith.index_cast %[[RAW]] : i64 to index
// CHECK:         %[[LOW:[^ ]+]] = arith.minsi %[[KI]], %[[C5]] : index
// CHECK:         %[[COUNT:[^ ]+]] = arith.maxsi %[[LOW]], %{{.*}} : index
// CHECK:         scf.for
// CHECK:           scf.for
// CHECK:             scf.for %{{.*}} = %{{.*}} to %[[COUNT]] step
// CHECK:               arith.cmpf olt
// CHECK:         arith.index_cast %[[COUNT]] : index to i64
func.func @test_runtime_topk(%x: tensor<2x5xf32>, %k: tensor<1xi64>) -> (tensor<2x5xf32>, tensor<2x5xi64>, tensor<i64>) {
  %0:3 = "dlc.runtime_topk"(%x, %k) {axis = 1 : i64, largest = 1 : i64} : (tensor<2x5xf32>, tensor<1xi64>) -> (tensor<2x5xf32>, tensor<2x5xi64>, tensor<i64>)
  return %0#0, %0#1, %0#2 : tensor<2x5xf32>, tensor<2x5xi64>, tensor<i64>
}

// -----

// dlc.non_max_suppression: per batch and class, rounds that visit the best unvisited box; a
// selected row is written under an scf.if (never past the end).

// CHECK-LABEL: func.func @test_non_max_suppression
// CHECK:         scf.for
// CHECK:           scf.for
// CHECK:             tensor.empty() : tensor<6xi8>
// CHECK:             scf.for
// CHECK:               scf.for
// CHECK:                 arith.cmpf ogt
// CHECK:               scf.if %{{.*}} -> (tensor<4x3xi64>, index)
// CHECK:                 tensor.insert %{{.*}} : tensor<4x3xi64>
// CHECK:         tensor.from_elements %{{.*}} : tensor<i64>
func.func @test_non_max_suppression(%b: tensor<1x6x4xf32>, %s: tensor<1x2x6xf32>, %m: tensor<1xi64>, %i: tensor<1xf32>, %t: tensor<1xf32>) -> (tensor<4x3xi64>, tensor<i64>) {
  %0:2 = "dlc.non_max_suppression"(%b, %s, %m, %i, %t) {center_point_box = 0 : i64, max_per_class = 2 : i64, use_score_threshold = 1 : i64} : (tensor<1x6x4xf32>, tensor<1x2x6xf32>, tensor<1xi64>, tensor<1xf32>, tensor<1xf32>) -> (tensor<4x3xi64>, tensor<i64>)
  return %0#0, %0#1 : tensor<4x3xi64>, tensor<i64>
}

// -----

// dlc.unique: loops compare slices, number the first occurrences, then gather y, indices,
// the inverse and the counts.

// CHECK-LABEL: func.func @test_unique
// CHECK-SAME:    -> (tensor<3x2xi32>, tensor<3xi64>, tensor<3xi64>, tensor<3xi64>, tensor<i64>)
// CHECK:         arith.cmpi slt
// CHECK:         scf.if
// CHECK:         %[[OUT:.*]]:4 = scf.for
// CHECK:         %[[C:[^ ]+]] = tensor.from_elements %{{.*}} : tensor<i64>
// CHECK:         return %[[OUT]]#0, %[[OUT]]#1, %[[OUT]]#2, %[[OUT]]#3, %[[C]]
func.func @test_unique(%x: tensor<3x2xi32>) -> (tensor<3x2xi32>, tensor<3xi64>, tensor<3xi64>, tensor<3xi64>, tensor<i64>) {
  %0:5 = "dlc.unique"(%x) {axis = 0 : i64, sorted = 1 : i64} : (tensor<3x2xi32>) -> (tensor<3x2xi32>, tensor<3xi64>, tensor<3xi64>, tensor<3xi64>, tensor<i64>)
  return %0#0, %0#1, %0#2, %0#3, %0#4 : tensor<3x2xi32>, tensor<3xi64>, tensor<3xi64>, tensor<3xi64>, tensor<i64>
}
