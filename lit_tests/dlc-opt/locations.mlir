// Diagnostics at locations that are not positions in the input: a name location wrapping a
// file position prints that position; a bare name prints the name; an unknown location prints
// the input file's name.
// RUN: not dlc-opt %s 2>&1 | FileCheck %s

// CHECK-DAG: model.onnx:3:4: error: 'dlc.relu' op result type tensor<3xf32> does not match the inferred type tensor<2xf32>
// CHECK-DAG: {{^}}relu_7: error: 'dlc.relu' op result type tensor<4xf32> does not match
// CHECK-DAG: {{^}}{{.*}}locations.mlir: error: 'dlc.relu' op result type tensor<5xf32> does not match
// CHECK-DAG: model.onnx:9:1: error: 'dlc.relu' op result type tensor<6xf32> does not match
func.func @test_locations(%a: tensor<2xf32>) -> tensor<2xf32> {
  %0 = "dlc.relu"(%a) : (tensor<2xf32>) -> tensor<3xf32> loc("relu_1"("model.onnx":3:4))
  %1 = "dlc.relu"(%a) : (tensor<2xf32>) -> tensor<4xf32> loc("relu_7")
  %2 = "dlc.relu"(%a) : (tensor<2xf32>) -> tensor<5xf32> loc(unknown)
  %3 = "dlc.relu"(%a) : (tensor<2xf32>) -> tensor<6xf32> loc(fused["relu_9", "model.onnx":9:1])
  return %a : tensor<2xf32>
}
