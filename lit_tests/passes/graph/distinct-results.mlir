// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-distinct-results)' | FileCheck %s

// return %a, %a -> return %a, alloc_tensor() copy(%a): every result gets its own buffer.

// CHECK-LABEL: func.func @test_returned_twice
// CHECK:         %[[R:.*]] = "dlc.relu"
// CHECK-NEXT:    %[[COPY:.*]] = bufferization.alloc_tensor() copy(%[[R]]) : tensor<4xf32>
// CHECK-NEXT:    return %[[R]], %[[COPY]] : tensor<4xf32>, tensor<4xf32>
func.func @test_returned_twice(%a: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = "dlc.relu"(%a) : (tensor<4xf32>) -> tensor<4xf32>
  return %0, %0 : tensor<4xf32>, tensor<4xf32>
}

// -----

// A function argument returned three times: two copies.

// CHECK-LABEL: func.func @test_argument_three_times
// CHECK-SAME:    (%[[A:[^:]*]]: tensor<4xf32> {bufferization.writable = false})
// CHECK-NEXT:    %[[C1:.*]] = bufferization.alloc_tensor() copy(%[[A]]) : tensor<4xf32>
// CHECK-NEXT:    %[[C2:.*]] = bufferization.alloc_tensor() copy(%[[A]]) : tensor<4xf32>
// CHECK-NEXT:    return %[[A]], %[[C1]], %[[C2]]
func.func @test_argument_three_times(%a: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  return %a, %a, %a : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// Distinct results and declarations are left alone (arguments become read-only).

// CHECK-LABEL: func.func @test_distinct
// CHECK-SAME:    (%[[A:[^:]*]]: tensor<4xf32> {bufferization.writable = false},
// CHECK-SAME:     %[[B:[^:]*]]: tensor<4xf32> {bufferization.writable = false})
// CHECK-NEXT:    return %[[A]], %[[B]] : tensor<4xf32>, tensor<4xf32>
// CHECK:       func.func private @test_declaration(tensor<4xf32>) -> tensor<4xf32>
// CHECK-NOT:   bufferization.alloc_tensor
func.func @test_distinct(%a: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  return %a, %b : tensor<4xf32>, tensor<4xf32>
}
func.func private @test_declaration(tensor<4xf32>) -> tensor<4xf32>
