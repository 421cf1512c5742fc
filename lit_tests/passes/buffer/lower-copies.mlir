// dlc-lower-copies: a memref.copy into a strided slot (a padded input, a concat input) becomes
// loops over its leading dimensions around one copy of the contiguous inner block (lowered to
// llvm.memcpy instead of the runtime's element-by-element memrefCopy). Left alone: contiguous
// copies (already a memcpy), innermost strides other than 1, rows under min-row elements.
// A copy of a dynamic size or stride becomes a call of a function of ours: loops of vector
// rows and single elements.
// RUN: dlc-opt %s -p 'builtin.module(dlc-lower-copies)' --split-input-file | FileCheck %s

// CHECK-LABEL: func.func @test_pad_slot
// CHECK:         scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step
// CHECK:           scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step
// CHECK:             %[[S:.*]] = memref.subview %arg0[%[[I]], %[[J]], 0, 0] [1, 1, 40, 32] [1, 1, 1, 1]
// CHECK:             %[[T:.*]] = memref.subview %{{.*}}[%[[I]], %[[J]], 0, 0] [1, 1, 40, 32] [1, 1, 1, 1]
// CHECK:             memref.copy %[[S]], %[[T]] : memref<1x1x40x32xf32, strided<[51200, 1280, 32, 1], offset: ?>> to memref<1x1x40x32xf32, strided<[59168, 1376, 32, 1], offset: ?>>
// CHECK-NOT:     memref.copy
func.func @test_pad_slot(%a: memref<1x40x40x32xf32>, %b: memref<1x43x43x32xf32>) {
  %s = memref.subview %b[0, 1, 2, 0] [1, 40, 40, 32] [1, 1, 1, 1] : memref<1x43x43x32xf32> to memref<1x40x40x32xf32, strided<[59168, 1376, 32, 1], offset: 1440>>
  memref.copy %a, %s : memref<1x40x40x32xf32> to memref<1x40x40x32xf32, strided<[59168, 1376, 32, 1], offset: 1440>>
  return
}

// -----

// CHECK-LABEL: func.func @test_left_alone
// CHECK-NOT:     scf.for
// CHECK:         memref.copy %arg0, %arg1 : memref<8x64xf32> to memref<8x64xf32>
// CHECK:         memref.copy %{{.*}}, %{{.*}} : memref<8x4xf32, strided<[8, 1]>> to memref<8x4xf32>
// CHECK:         memref.copy %{{.*}}, %{{.*}} : memref<8x16xf32, strided<[1, 8]>> to memref<8x16xf32>
func.func @test_left_alone(%a: memref<8x64xf32>, %b: memref<8x64xf32>, %c: memref<8x8xf32>, %d: memref<8x4xf32>, %e: memref<16x8xf32>, %f: memref<8x16xf32>) {
  // contiguous on both sides
  memref.copy %a, %b : memref<8x64xf32> to memref<8x64xf32>
  // rows of 4 elements: shorter than min-row
  %s = memref.subview %c[0, 0] [8, 4] [1, 1] : memref<8x8xf32> to memref<8x4xf32, strided<[8, 1]>>
  memref.copy %s, %d : memref<8x4xf32, strided<[8, 1]>> to memref<8x4xf32>
  // a transposed view: innermost stride 8
  %t = memref.transpose %e (i, j) -> (j, i) : memref<16x8xf32> to memref<8x16xf32, strided<[1, 8]>>
  memref.copy %t, %f : memref<8x16xf32, strided<[1, 8]>> to memref<8x16xf32>
  return
}

// -----

// A slice of a [1, ?, 2304] buffer (a function of a dynamic size: its unit dimension's
// stride is dynamic) copies row by row through rank-reduced views, which lower to memcpy
// (a subview keeping the unit dimension keeps its dynamic stride: the runtime's copy).
// CHECK-LABEL: func.func @test_dynamic_unit_stride
// CHECK:         scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step
// CHECK:           scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step
// CHECK:             %[[S:.*]] = memref.subview %{{.*}}[%[[I]], %[[J]], 0] [1, 1, 768] [1, 1, 1] : memref<1x?x768xf32, strided<[?, 2304, 1], offset: 768>> to memref<768xf32, strided<[1], offset: ?>>
// CHECK:             %[[T:.*]] = memref.subview %{{.*}}[%[[I]], %[[J]], 0] [1, 1, 768] [1, 1, 1] : memref<1x?x768xf32> to memref<768xf32, strided<[1], offset: ?>>
// CHECK:             memref.copy %[[S]], %[[T]] : memref<768xf32, strided<[1], offset: ?>> to memref<768xf32, strided<[1], offset: ?>>
// CHECK-NOT:     memref.copy
func.func @test_dynamic_unit_stride(%a: memref<1x?x2304xf32>, %n: index) -> memref<1x?x768xf32> {
  %s = memref.subview %a[0, 0, 768] [1, %n, 768] [1, 1, 1] : memref<1x?x2304xf32> to memref<1x?x768xf32, strided<[?, 2304, 1], offset: 768>>
  %b = memref.alloc(%n) : memref<1x?x768xf32>
  memref.copy %s, %b : memref<1x?x768xf32, strided<[?, 2304, 1], offset: 768>> to memref<1x?x768xf32>
  return %b : memref<1x?x768xf32>
}

// -----

// A copy of a dynamic innermost size and dynamic strides (the padded column piece of a
// [1, 12, S, S] block, S dynamic): views without the unit axes, cast to every size dynamic,
// and a call of one private function per element type, rank and vector width: loops over
// the axes but the last, then 64-byte vector loads and stores along it and single elements
// for the rest of the row. No runtime copy.
// CHECK-LABEL: func.func @test_dynamic_rows
// CHECK:         %[[N:.*]] = memref.dim %[[S:.*]], %c3
// CHECK:         %[[SR:.*]] = memref.subview %[[S]][0, 0, 0, 0] [1, 12, 64, %[[N]]] [1, 1, 1, 1] : memref<1x12x64x?xf32, strided<[?, ?, ?, 1]>> to memref<12x64x?xf32, strided<[?, ?, 1]>>
// CHECK:         %[[SC:.*]] = memref.cast %[[SR]] : memref<12x64x?xf32, strided<[?, ?, 1]>> to memref<?x?x?xf32, strided<[?, ?, 1], offset: ?>>
// CHECK:         %[[TR:.*]] = memref.subview %{{.*}}[0, 0, 0, 0] [1, 12, 64, %[[N]]] [1, 1, 1, 1] : memref<1x12x64x?xf32, strided<[49152, 4096, 64, 1]>> to memref<12x64x?xf32, strided<[4096, 64, 1]>>
// CHECK:         %[[TC:.*]] = memref.cast %[[TR]]
// CHECK:         call @dlc_copy_rows_f32_3d_16(%[[SC]], %[[TC]])
// CHECK-NOT:     memref.copy
// CHECK-LABEL: func.func private @dlc_copy_rows_f32_3d_16
// CHECK-SAME:      (%[[A:.*]]: memref<?x?x?xf32, strided<[?, ?, 1], offset: ?>>, %[[B:.*]]: memref<?x?x?xf32, strided<[?, ?, 1], offset: ?>>)
// CHECK-SAME:      llvm.linkage = #llvm.linkage<internal>
// CHECK:         %[[D0:.*]] = memref.dim %[[A]], %c0
// CHECK:         %[[D1:.*]] = memref.dim %[[A]], %c1
// CHECK:         %[[D2:.*]] = memref.dim %[[A]], %c2
// CHECK:         %[[Q:.*]] = arith.divui %[[D2]], %c16
// CHECK:         %[[W:.*]] = arith.muli %[[Q]], %c16
// CHECK:         scf.for %[[H:.*]] = %{{.*}} to %[[D0]] step
// CHECK:           scf.for %[[R:.*]] = %{{.*}} to %[[D1]] step
// CHECK:             scf.for %[[C:.*]] = %{{.*}} to %[[W]] step %c16
// CHECK:               %[[V:.*]] = vector.load %[[A]][%[[H]], %[[R]], %[[C]]] : {{.*}}, vector<16xf32>
// CHECK:               vector.store %[[V]], %[[B]][%[[H]], %[[R]], %[[C]]] : {{.*}}, vector<16xf32>
// CHECK:             scf.for %[[E:.*]] = %[[W]] to %[[D2]] step
// CHECK:               %[[X:.*]] = memref.load %[[A]][%[[H]], %[[R]], %[[E]]]
// CHECK:               memref.store %[[X]], %[[B]][%[[H]], %[[R]], %[[E]]]
func.func @test_dynamic_rows(%a: memref<1x12x?x?xf32>, %n: index, %b: memref<1x12x64x64xf32>) {
  %s = memref.subview %a[0, 0, 0, 0] [1, 12, 64, %n] [1, 1, 1, 1] : memref<1x12x?x?xf32> to memref<1x12x64x?xf32, strided<[?, ?, ?, 1]>>
  %t = memref.subview %b[0, 0, 0, 0] [1, 12, 64, %n] [1, 1, 1, 1] : memref<1x12x64x64xf32> to memref<1x12x64x?xf32, strided<[49152, 4096, 64, 1]>>
  memref.copy %s, %t : memref<1x12x64x?xf32, strided<[?, ?, ?, 1]>> to memref<1x12x64x?xf32, strided<[49152, 4096, 64, 1]>>
  return
}

// -----

// Rows along an axis not at stride 1 (a [?, 1] column, a view of [?]): element by element,
// in a function of ours. A dynamic copy of identity layouts is a memcpy already: left.
// CHECK-LABEL: func.func @test_dynamic_strided_and_left
// CHECK:         memref.copy %arg0, %arg1 : memref<?x?xf32> to memref<?x?xf32>
// CHECK:         memref.subview %arg2[0, 0] [%{{.*}}, 1] [1, 1] : memref<?x1xi8, strided<[?, 1], offset: ?>> to memref<?xi8, strided<[?], offset: ?>>
// CHECK:         memref.subview %arg3[0, 0] [%{{.*}}, 1] [1, 1] : memref<?x1xi8, strided<[4, 1]>> to memref<?xi8, strided<[4]>>
// CHECK:         call @dlc_copy_rows_i8_1d_1
// CHECK-NOT:     memref.copy
// CHECK-LABEL: func.func private @dlc_copy_rows_i8_1d_1
// CHECK:         scf.for %[[I:.*]] =
// CHECK-NEXT:      %[[X:.*]] = memref.load %arg0[%[[I]]] : memref<?xi8, strided<[?], offset: ?>>
// CHECK-NEXT:      memref.store %[[X]], %arg1[%[[I]]] : memref<?xi8, strided<[?], offset: ?>>
// CHECK-NOT:     vector.load
func.func @test_dynamic_strided_and_left(%a: memref<?x?xf32>, %b: memref<?x?xf32>, %c: memref<?x1xi8, strided<[?, 1], offset: ?>>, %d: memref<?x1xi8, strided<[4, 1]>>) {
  memref.copy %a, %b : memref<?x?xf32> to memref<?x?xf32>
  memref.copy %c, %d : memref<?x1xi8, strided<[?, 1], offset: ?>> to memref<?x1xi8, strided<[4, 1]>>
  return
}

// -----

// A copy onto itself (an elementwise block computed in place through a collapsed view of its
// destination, inserted back through the expanded one) is erased; a copy between two
// different subviews of one buffer, or onto a reshape of another buffer, is kept.
// CHECK-LABEL: func.func @test_self_copy
// CHECK-NOT:     memref.copy
// CHECK:         %[[T:.*]] = memref.subview %arg0[0, %arg2, 0]
// CHECK-NEXT:    memref.copy %{{.*}}, %[[T]]
// CHECK-NEXT:    memref.copy %{{.*}}, %arg3
// CHECK-NOT:     memref.copy
func.func @test_self_copy(%a: memref<1x?x32xf32>, %i: index, %j: index, %b: memref<1x64x32xf32>) {
  %s = memref.subview %a[0, %i, 0] [1, 64, 32] [1, 1, 1] : memref<1x?x32xf32> to memref<1x64x32xf32, strided<[?, 32, 1], offset: ?>>
  %c = memref.collapse_shape %s [[0, 1, 2]] : memref<1x64x32xf32, strided<[?, 32, 1], offset: ?>> into memref<2048xf32, strided<[1], offset: ?>>
  %e = memref.expand_shape %c [[0, 1, 2]] output_shape [1, 64, 32] : memref<2048xf32, strided<[1], offset: ?>> into memref<1x64x32xf32, strided<[2048, 32, 1], offset: ?>>
  memref.copy %e, %s : memref<1x64x32xf32, strided<[2048, 32, 1], offset: ?>> to memref<1x64x32xf32, strided<[?, 32, 1], offset: ?>>
  // the same rows through an equal subview: onto itself too
  %s2 = memref.subview %a[0, %i, 0] [1, 64, 32] [1, 1, 1] : memref<1x?x32xf32> to memref<1x64x32xf32, strided<[?, 32, 1], offset: ?>>
  memref.copy %s, %s2 : memref<1x64x32xf32, strided<[?, 32, 1], offset: ?>> to memref<1x64x32xf32, strided<[?, 32, 1], offset: ?>>
  // other rows of the same buffer: kept
  %t = memref.subview %a[0, %j, 0] [1, 64, 32] [1, 1, 1] : memref<1x?x32xf32> to memref<1x64x32xf32, strided<[?, 32, 1], offset: ?>>
  memref.copy %s, %t : memref<1x64x32xf32, strided<[?, 32, 1], offset: ?>> to memref<1x64x32xf32, strided<[?, 32, 1], offset: ?>>
  // into another buffer: kept
  memref.copy %e, %b : memref<1x64x32xf32, strided<[2048, 32, 1], offset: ?>> to memref<1x64x32xf32>
  return
}
