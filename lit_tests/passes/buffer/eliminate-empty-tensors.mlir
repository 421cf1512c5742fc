// dlc-eliminate-empty-tensors: upstream eliminate-empty-tensors, run only when the source of a
// subset insertion may be an equivalent alias of a tensor.empty (a linalg op's init, a loop's
// init, a reshape's source, up to the empty); otherwise the module is left as it is, which is
// what upstream would leave.
// RUN: dlc-opt %s -p 'builtin.module(dlc-eliminate-empty-tensors)' --split-input-file | FileCheck %s

// the fill's empty becomes the slice of the insertion's destination
// CHECK-LABEL: func.func @test_eliminated
// CHECK-NOT:     tensor.empty
// CHECK:         %[[S:.*]] = tensor.extract_slice %arg0[0, 8] [4, 8] [1, 1]
// CHECK:         %[[F:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[S]] : tensor<4x8xf32>)
// CHECK:         tensor.insert_slice %[[F]] into %arg0[0, 8] [4, 8] [1, 1]
func.func @test_eliminated(%dest: tensor<4x16xf32>, %x: f32) -> tensor<4x16xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %f = linalg.fill ins(%x : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %r = tensor.insert_slice %f into %dest[0, 8] [4, 8] [1, 1] : tensor<4x8xf32> into tensor<4x16xf32>
  return %r : tensor<4x16xf32>
}

// -----

// through a loop's init
// CHECK-LABEL: func.func @test_through_a_loop
// CHECK-NOT:     tensor.empty
// CHECK:         %[[S:.*]] = tensor.extract_slice %arg0[0, 0] [4, 8] [1, 1]
// CHECK:         scf.for {{.*}} iter_args(%{{.*}} = %[[S]])
func.func @test_through_a_loop(%dest: tensor<4x16xf32>, %x: f32) -> tensor<4x16xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %e = tensor.empty() : tensor<4x8xf32>
  %l = scf.for %i = %c0 to %c4 step %c1 iter_args(%t = %e) -> tensor<4x8xf32> {
    %f = linalg.fill ins(%x : f32) outs(%t : tensor<4x8xf32>) -> tensor<4x8xf32>
    scf.yield %f : tensor<4x8xf32>
  }
  %r = tensor.insert_slice %l into %dest[0, 0] [4, 8] [1, 1] : tensor<4x8xf32> into tensor<4x16xf32>
  return %r : tensor<4x16xf32>
}

// -----

// no insertion's source reaches an empty (the generic's empty is its input's slice's source,
// not its init): nothing to do
// CHECK-LABEL: func.func @test_nothing
// CHECK:         %[[E:.*]] = tensor.empty() : tensor<4x8xf32>
// CHECK:         %[[S:.*]] = tensor.extract_slice %arg1[0, 0] [4, 8] [1, 1]
// CHECK:         linalg.generic {{.*}} ins(%[[S]] : tensor<4x8xf32>) outs(%arg2 : tensor<4x8xf32>)
func.func @test_nothing(%dest: tensor<4x16xf32>, %a: tensor<4x16xf32>, %b: tensor<4x8xf32>) -> (tensor<4x16xf32>, tensor<4x8xf32>) {
  %e = tensor.empty() : tensor<4x8xf32>
  %s = tensor.extract_slice %a[0, 0] [4, 8] [1, 1] : tensor<4x16xf32> to tensor<4x8xf32>
  %g = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%s : tensor<4x8xf32>) outs(%b : tensor<4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %n = arith.negf %in : f32
    linalg.yield %n : f32
  } -> tensor<4x8xf32>
  %r = tensor.insert_slice %g into %dest[0, 0] [4, 8] [1, 1] : tensor<4x8xf32> into tensor<4x16xf32>
  return %r, %e : tensor<4x16xf32>, tensor<4x8xf32>
}
