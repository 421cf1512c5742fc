// dlc.recurrence -> one scf.for over the steps, whatever their number: the step's matmul by
// Rᵀ, one elementwise generic computing the new states (an LSTM's cell state carried by the
// loop, read by the payload), its hidden state written at its slot of the [T + 1, B, H] states.
// RUN: dlc-opt %s -p 'builtin.module(dlc-to-linalg)' | FileCheck %s

// CHECK-LABEL: func.func @test_lstm_reverse
// CHECK:         %[[SLOTS:.+]] = tensor.insert_slice %{{.+}} into %{{.+}}[500, 0, 0] [1, 2, 5] [1, 1, 1] : tensor<2x5xf32> into tensor<501x2x5xf32>
// CHECK:         %[[LOOP:.+]]:3 = scf.for %[[I:.+]] = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[HS:.+]] = %[[SLOTS]], %{{.+}} = %{{.+}}, %[[C:.+]] = %{{.+}}) -> (tensor<501x2x5xf32>, tensor<2x20xf32>, tensor<2x5xf32>)
// CHECK:           %[[T:.+]] = arith.subi %{{.+}}, %[[I]]
// CHECK:           %[[READ:.+]] = arith.addi %[[T]]
// CHECK:           %[[PREV:.+]] = tensor.extract_slice %[[HS]][%[[READ]], 0, 0] [1, 2, 5]
// CHECK:           linalg.matmul ins(%[[PREV]], %{{.+}} : tensor<2x5xf32>, tensor<5x20xf32>)
// CHECK:           %[[NEW:.+]]:2 = linalg.generic
// CHECK-SAME:        outs(%{{.+}}, %[[C]] : tensor<2x5xf32>, tensor<2x5xf32>)
// CHECK:             math.tanh
// CHECK:           %[[STORED:.+]] = tensor.insert_slice %[[NEW]]#0 into %[[HS]][%[[T]], 0, 0]
// CHECK:           scf.yield %[[STORED]], %{{.+}}, %[[NEW]]#1
// CHECK:         tensor.extract_slice %[[LOOP]]#0[0, 0, 0] [500, 2, 5] [1, 1, 1]
// CHECK-NOT:     scf.for
func.func @test_lstm_reverse(%x: tensor<500x2x20xf32>, %r: tensor<5x20xf32>, %s: tensor<2x2x5xf32>, %p: tensor<15xf32>) -> (tensor<500x2x5xf32>, tensor<2x2x5xf32>) {
  %y, %f = "dlc.recurrence"(%x, %r, %s, %p) {kind = "lstm", reverse = 1, activations = "Sigmoid,Tanh,Tanh", params = array<f64>, clip = array<f64>, input_forget = 0} : (tensor<500x2x20xf32>, tensor<5x20xf32>, tensor<2x2x5xf32>, tensor<15xf32>) -> (tensor<500x2x5xf32>, tensor<2x2x5xf32>)
  return %y, %f : tensor<500x2x5xf32>, tensor<2x2x5xf32>
}

// CHECK-LABEL: func.func @test_gru_forward
// CHECK:         scf.for
// CHECK:           linalg.matmul
// CHECK:           linalg.generic
// CHECK-SAME:        outs(%{{[^ ]+}} : tensor<3x4xf64>)
// CHECK:         tensor.extract_slice %{{.+}}[1, 0, 0] [6, 3, 4] [1, 1, 1]
// CHECK:         tensor.extract_slice %{{.+}}[6, 0, 0] [1, 3, 4] [1, 1, 1]
func.func @test_gru_forward(%x: tensor<6x3x12xf64>, %r: tensor<4x12xf64>, %s: tensor<1x3x4xf64>, %rbh: tensor<4xf64>) -> (tensor<6x3x4xf64>, tensor<1x3x4xf64>) {
  %y, %f = "dlc.recurrence"(%x, %r, %s, %rbh) {kind = "gru", reverse = 0, activations = "Sigmoid,Tanh", params = array<f64>, clip = array<f64>, input_forget = 0} : (tensor<6x3x12xf64>, tensor<4x12xf64>, tensor<1x3x4xf64>, tensor<4xf64>) -> (tensor<6x3x4xf64>, tensor<1x3x4xf64>)
  return %y, %f : tensor<6x3x4xf64>, tensor<1x3x4xf64>
}
