// -o writes the output to a file instead of stdout.
// RUN: rm -f %t.mlir
// RUN: dlc-opt %s -p 'builtin.module(dlc-to-linalg)' -o %t.mlir | count 0
// RUN: FileCheck %s < %t.mlir

// CHECK-LABEL: func.func @test_output_file
// CHECK:         linalg.generic
func.func @test_output_file(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "dlc.relu"(%a) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
