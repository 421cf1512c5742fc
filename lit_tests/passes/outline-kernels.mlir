// dlc-outline-kernels: each top-level op with regions of a function becomes a call to a
// private noinline function of its own; the values it uses from the function are arguments
// (in the order of their first use), constants without operands are cloned in, its results
// are the function's. Two kernels of the same text (here: the same loop over other buffers and
// another global) are one function called twice; a different one (mulf) is another. Ops
// without regions stay where they were.
// RUN: dlc-opt %s -p 'builtin.module(dlc-outline-kernels)' | FileCheck %s

// CHECK-LABEL: func.func @main(%arg0: memref<4xf32>, %arg1: memref<4xf32>, %arg2: memref<4xf32>) {
// CHECK:         %[[W:.*]] = memref.get_global @w
// CHECK:         %[[V:.*]] = memref.get_global @v
// CHECK-NEXT:    call @main__kernel0(%arg0, %[[W]], %arg1) : (memref<4xf32>, memref<4xf32>, memref<4xf32>) -> ()
// CHECK-NEXT:    call @main__kernel0(%arg1, %[[V]], %arg2) : (memref<4xf32>, memref<4xf32>, memref<4xf32>) -> ()
// CHECK-NEXT:    call @main__kernel1(%arg2, %[[V]], %arg1) : (memref<4xf32>, memref<4xf32>, memref<4xf32>) -> ()
// CHECK-NEXT:    %[[R:.*]] = call @main__kernel2() : () -> index
// CHECK-NEXT:    %[[I:.*]] = arith.index_cast %[[R]]
// CHECK:         memref.store
// CHECK-NEXT:    return
// CHECK-LABEL: func.func private @main__kernel0(%arg0: memref<4xf32>, %arg1: memref<4xf32>, %arg2: memref<4xf32>) attributes {llvm.linkage = #llvm.linkage<internal>, passthrough = ["noinline"]} {
// CHECK-DAG:     %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG:     %[[C4:.*]] = arith.constant 4 : index
// CHECK-DAG:     %[[C1:.*]] = arith.constant 1 : index
// CHECK:         scf.for %[[I:.*]] = %[[C0]] to %[[C4]] step %[[C1]] {
// CHECK:           arith.addf
// CHECK:           memref.store %{{.*}}, %arg2[%[[I]]]
// CHECK:         return
// CHECK-LABEL: func.func private @main__kernel1(
// CHECK:           arith.mulf
// CHECK-LABEL: func.func private @main__kernel2() -> index
// CHECK:         %[[S:.*]] = scf.for
// CHECK:         return %[[S]] : index
// CHECK-NOT:   func.func
memref.global "private" constant @w : memref<4xf32> = dense<1.0>
memref.global "private" constant @v : memref<4xf32> = dense<2.0>
func.func @main(%x: memref<4xf32>, %y: memref<4xf32>, %z: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c1 = arith.constant 1 : index
  %w = memref.get_global @w : memref<4xf32>
  %v = memref.get_global @v : memref<4xf32>
  scf.for %i = %c0 to %c4 step %c1 {
    %a = memref.load %x[%i] : memref<4xf32>
    %b = memref.load %w[%i] : memref<4xf32>
    %s = arith.addf %a, %b : f32
    memref.store %s, %y[%i] : memref<4xf32>
  }
  scf.for %i = %c0 to %c4 step %c1 {
    %a = memref.load %y[%i] : memref<4xf32>
    %b = memref.load %v[%i] : memref<4xf32>
    %s = arith.addf %a, %b : f32
    memref.store %s, %z[%i] : memref<4xf32>
  }
  scf.for %i = %c0 to %c4 step %c1 {
    %a = memref.load %z[%i] : memref<4xf32>
    %b = memref.load %v[%i] : memref<4xf32>
    %s = arith.mulf %a, %b : f32
    memref.store %s, %y[%i] : memref<4xf32>
  }
  %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%acc = %c0) -> index {
    %n = arith.addi %acc, %i : index
    scf.yield %n : index
  }
  %f = arith.index_cast %r : index to i32
  %g = arith.sitofp %f : i32 to f32
  memref.store %g, %y[%c0] : memref<4xf32>
  return
}
