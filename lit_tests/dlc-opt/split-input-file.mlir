// Each chunk is parsed and transformed on its own; the outputs are joined by `// -----` after an
// empty line, as mlir-opt joins them.
// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-to-linalg)' | FileCheck %s

// Without the flag the file is one module, where the two @f clash.
// RUN: not dlc-opt %s 2>&1 | FileCheck %s --check-prefix=WHOLE
// WHOLE: split-input-file.mlir:[[# @LINE + 19]]:1: error: redefinition of symbol named 'f'

// CHECK:       module {
// CHECK-NEXT:    func.func @f(%{{.*}}: tensor<4xf32>) -> tensor<4xf32> {
// CHECK:           linalg.generic
// CHECK:       {{^}}}
// CHECK-EMPTY:
// CHECK-NEXT:  // -----
// CHECK-NEXT:  module {
// CHECK-NEXT:    func.func @f(%{{.*}}: tensor<2x2xf32>) -> tensor<2x2xf32> {
// CHECK:           linalg.transpose
// CHECK-NOT:   // -----
func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "dlc.relu"(%a) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @f(%a: tensor<2x2xf32>) -> tensor<2x2xf32> {
  %0 = "dlc.transpose"(%a) {perm = array<i64: 1, 0>} : (tensor<2x2xf32>) -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}
