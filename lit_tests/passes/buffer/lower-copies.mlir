// dlc-lower-copies: a memref.copy into a strided slot (a padded input, a concat input) becomes
// loops over its leading dimensions around one copy of the contiguous inner block (lowered to
// llvm.memcpy instead of the runtime's element-by-element memrefCopy). Left alone: contiguous
// copies (already a memcpy), innermost strides other than 1, rows under min-row elements.
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
