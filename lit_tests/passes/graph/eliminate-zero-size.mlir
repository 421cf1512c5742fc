// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-eliminate-zero-size)' | FileCheck %s

// An op computing an empty tensor becomes an empty constant; its operands die with it.

// CHECK-LABEL: func.func @test_empty_result
// CHECK-NEXT:    %[[E:.*]] = "dlc.constant"() {value = dense<> : tensor<0x3xf32>}
// CHECK-NEXT:    return %[[E]] : tensor<0x3xf32>
func.func @test_empty_result(%x: tensor<0x3xf32>) -> tensor<0x3xf32> {
  %0 = "dlc.relu"(%x) : (tensor<0x3xf32>) -> tensor<0x3xf32>
  %1 = "dlc.add"(%0, %0) : (tensor<0x3xf32>, tensor<0x3xf32>) -> tensor<0x3xf32>
  return %1 : tensor<0x3xf32>
}

// -----

// concat(x, empty) -> x

// CHECK-LABEL: func.func @test_concat_empty
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3xf32>, %{{.*}}: tensor<2x0xf32>)
// CHECK-NEXT:    %[[R:.*]] = "dlc.relu"(%[[X]])
// CHECK-NEXT:    return %[[R]] : tensor<2x3xf32>
func.func @test_concat_empty(%x: tensor<2x3xf32>, %e: tensor<2x0xf32>) -> tensor<2x3xf32> {
  %0 = "dlc.concat"(%x, %e) {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x0xf32>) -> tensor<2x3xf32>
  %1 = "dlc.relu"(%0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %1 : tensor<2x3xf32>
}

// -----

// Negative: ops on non-empty tensors stay.

// CHECK-LABEL: func.func @test_not_empty
// CHECK-NEXT:    "dlc.concat"
// CHECK-NEXT:    "dlc.relu"
// CHECK-NEXT:    return
func.func @test_not_empty(%x: tensor<2x3xf32>, %y: tensor<2x1xf32>) -> tensor<2x4xf32> {
  %0 = "dlc.concat"(%x, %y) {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x4xf32>
  %1 = "dlc.relu"(%0) : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return %1 : tensor<2x4xf32>
}
