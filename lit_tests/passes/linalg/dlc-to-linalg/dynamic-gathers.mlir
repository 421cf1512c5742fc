// RUN: dlc-opt %s -p 'builtin.module(dlc-to-linalg,canonicalize,cse)' | FileCheck %s

// Gathers with the function's dynamic size (`?`): indices of that size into a static table
// (positions 0..s-1 of a position table: BERT's token types under torch.compile), and tuples
// into data of that size (a padding mask read at [batch, position]). The checks' bounds are
// the run-time size where it is data's, and say `?` in their message.

// CHECK:       module attributes {dlc.index_checks = ["'dlc.gather_elements', indices into axis 1 of size 512", "'dlc.gather_nd', indices into axes [0, 1] of sizes [1, ?]"]}

// CHECK-LABEL: func.func @test_gather_elements
// CHECK:         %[[N:.*]] = tensor.dim %{{.*}}, %{{.*}} : tensor<1x?xi64>
// CHECK:         scf.for %{{.*}} = %{{.*}} to %[[N]]
// CHECK:         %[[E:.*]] = tensor.empty(%[[N]]) : tensor<1x?xi64>
// CHECK:         linalg.generic
// CHECK-SAME:      outs(%[[E]] : tensor<1x?xi64>)
// CHECK:           tensor.extract %{{.*}} : tensor<1x512xi64>
func.func @test_gather_elements(%d: tensor<1x512xi64>, %i: tensor<1x?xi64>) -> tensor<1x?xi64> {
  %g = "dlc.gather_elements"(%d, %i) {axis = 1 : i64} : (tensor<1x512xi64>, tensor<1x?xi64>) -> tensor<1x?xi64>
  return %g : tensor<1x?xi64>
}

// CHECK-LABEL: func.func @test_gather_nd
// CHECK:         %[[N:.*]] = tensor.dim %{{.*}}, %{{.*}} : tensor<1x?xf32>
// CHECK:         scf.for
// CHECK:           scf.for
// CHECK:             %[[B:.*]] = arith.index_cast %[[N]] : index to i64
// CHECK:             arith.select %{{.*}}, %[[B]], %{{.*}} : i64
// CHECK:         linalg.generic
// CHECK:           arith.subi %[[N]], %{{.*}} : index
// CHECK:           tensor.extract %{{.*}} : tensor<1x?xf32>
func.func @test_gather_nd(%d: tensor<1x?xf32>, %i: tensor<?x2xi64>) -> tensor<?xf32> {
  %g = "dlc.gather_nd"(%d, %i) {batch_dims = 0 : i64} : (tensor<1x?xf32>, tensor<?x2xi64>) -> tensor<?xf32>
  return %g : tensor<?xf32>
}
