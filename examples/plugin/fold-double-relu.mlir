// RUN: dlc-opt %s --load-pass-plugin=%S/my_passes.py --my-fold-double-relu | FileCheck %s

// CHECK-LABEL: func.func @double_relu
// CHECK-NEXT:    %[[R:.*]] = "dlc.relu"(%arg0)
// CHECK-NEXT:    return %[[R]]
func.func @double_relu(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "dlc.relu"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %1 = "dlc.relu"(%0) : (tensor<4xf32>) -> tensor<4xf32>
  return %1 : tensor<4xf32>
}
