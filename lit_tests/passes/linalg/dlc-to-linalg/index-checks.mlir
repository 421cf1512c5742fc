// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-to-linalg)' | FileCheck %s
// RUN: not dlc-opt %S/Inputs/constant-index.mlir -p 'builtin.module(dlc-to-linalg)' 2>&1 | FileCheck %s --check-prefix=CONST

// Indices read at run time are checked before the op: a scalar loop finds whether one is out
// of [-size, size - 1] and the first such value; only then (scf.if, the cold path) it stores
// [check id + 1, value] into the public status global that the runtime reads after the call.
// The module records what each check id is about (the op, its node, the axis and its size).

// CHECK:       module attributes {dlc.index_checks = ["'dlc.gather' (node 'rows'), indices into axis 0 of size 3"]}
// CHECK-LABEL: func.func @test_gather_checked
// CHECK-SAME:    (%{{.*}}: tensor<3x4xf32>, %[[INDICES:.*]]: tensor<2xi32>)
// CHECK-DAG:     %[[MINUS3:.*]] = arith.constant -3 : i64
// CHECK-DAG:     %[[THREE:.*]] = arith.constant 3 : i64
// CHECK-DAG:     %[[ZERO:.*]] = arith.constant 0 : i64
// CHECK-DAG:     %[[ONE:.*]] = arith.constant 1 : i64
// CHECK:         %[[FOUND:.*]]:2 = scf.for %[[IV:.*]] = {{.*}} iter_args(%[[FLAG:.*]] = %[[ZERO]], %[[FIRST:.*]] = %[[ZERO]]) -> (i64, i64)
// CHECK:           %[[RAW:.*]] = tensor.extract %[[INDICES]][%[[IV]]] : tensor<2xi32>
// CHECK:           %[[VALUE:.*]] = arith.extsi %[[RAW]] : i32 to i64
// CHECK:           arith.cmpi slt, %[[VALUE]], %[[MINUS3]] : i64
// CHECK:           arith.cmpi sge, %[[VALUE]], %[[THREE]] : i64
// CHECK:           scf.yield
// CHECK:         %[[FAILED:.*]] = arith.cmpi ne, %[[FOUND]]#0, %[[ZERO]] : i64
// CHECK:         scf.if %[[FAILED]] {
// CHECK:           %[[STATUS:.*]] = memref.get_global @_mlir_dlc_status : memref<2xi64>
// CHECK:           memref.store %[[ONE]], %[[STATUS]][%{{.*}}] : memref<2xi64>
// CHECK:           memref.store %[[FOUND]]#1, %[[STATUS]][%{{.*}}] : memref<2xi64>
// CHECK:         linalg.generic
// CHECK:       memref.global @_mlir_dlc_status : memref<2xi64> = dense<0>
func.func @test_gather_checked(%d: tensor<3x4xf32>, %i: tensor<2xi32>) -> tensor<2x4xf32> {
  %0 = "dlc.gather"(%d, %i) {axis = 0 : i64} : (tensor<3x4xf32>, tensor<2xi32>) -> tensor<2x4xf32> loc("rows")
  return %0 : tensor<2x4xf32>
}

// -----

// The ND ops bound each component of an index tuple by its own axis (the last loop picks it).

// CHECK:       module attributes {dlc.index_checks = ["'dlc.gather_nd' (node 'pick'), indices into axes [0, 1] of sizes [2, 5]"]}
// CHECK-LABEL: func.func @test_gather_nd_checked
// CHECK-DAG:     %[[TWO:.*]] = arith.constant 2 : i64
// CHECK-DAG:     %[[FIVE:.*]] = arith.constant 5 : i64
// CHECK:         scf.for %{{.*}} = {{.*}} {
// CHECK:           scf.for %[[C:[^ ]+]] = {{.*}} {
// CHECK:             %[[IS1:.*]] = arith.cmpi eq, %[[C]], %{{.*}} : index
// CHECK:             arith.select %[[IS1]], %[[FIVE]], %[[TWO]] : i64
// CHECK:         scf.if
func.func @test_gather_nd_checked(%d: tensor<2x5xf32>, %i: tensor<3x2xi64>) -> tensor<3xf32> {
  %0 = "dlc.gather_nd"(%d, %i) {batch_dims = 0 : i64} : (tensor<2x5xf32>, tensor<3x2xi64>) -> tensor<3xf32> loc("pick")
  return %0 : tensor<3xf32>
}

// -----

// Constant indices are checked at compile time: in range, no runtime check at all.

// CHECK-NOT:   dlc.index_checks
// CHECK-LABEL: func.func @test_constant_indices_unchecked
// CHECK-NOT:     scf.if
// CHECK-NOT:     memref.global
func.func @test_constant_indices_unchecked(%d: tensor<3x4xf32>) -> tensor<2x4xf32> {
  %i = "dlc.constant"() {value = dense<[2, -3]> : tensor<2xi64>} : () -> tensor<2xi64>
  %0 = "dlc.gather"(%d, %i) {axis = 0 : i64} : (tensor<3x4xf32>, tensor<2xi64>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// CONST: seven: error: 'dlc.gather' (node 'seven'), indices into axis 0 of size 3: constant index 7 is out of range [-3, 2]
