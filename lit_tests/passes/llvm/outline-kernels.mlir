// dlc-outline-kernels: each top-level op with regions of a function, and each run of other
// computing ops between them, becomes a call to a private noinline function of its own; the
// values it uses from the function are arguments (in the order of their first use), except
// constants used as they are, which are cloned in, and views, which it rebuilds from the
// buffer they view, their offsets arguments (%c0, %c16: what differs between identical
// layers); its results are the function's. Two kernels of the same text (here: the same loop
// over other views of the arena and another global) are one function called twice; a different
// one (mulf) is another. Allocations and deallocations stay; main's constants and views only
// the kernels used are erased.
// RUN: dlc-opt %s -p 'builtin.module(dlc-outline-kernels)' | FileCheck %s

// CHECK-LABEL: func.func @main(%arg0: memref<4xf32>, %arg1: memref<4xf32>) {
// CHECK-DAG:     %[[ARENA:.*]] = memref.get_global @arena
// CHECK-DAG:     %[[W:.*]] = memref.get_global @w
// CHECK-DAG:     %[[V:.*]] = memref.get_global @v
// CHECK-DAG:     %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG:     %[[C16:.*]] = arith.constant 16 : index
// CHECK:         call @main__kernel0(%arg0, %[[W]], %[[ARENA]], %[[C0]]) : (memref<4xf32>, memref<4xf32>, memref<32xi8>, index) -> ()
// CHECK-NEXT:    call @main__kernel0(%arg0, %[[V]], %[[ARENA]], %[[C16]]) : (memref<4xf32>, memref<4xf32>, memref<32xi8>, index) -> ()
// CHECK-NEXT:    %[[A:.*]] = memref.alloc() : memref<4xf32>
// CHECK-NEXT:    call @main__kernel1(%[[ARENA]], %[[C0]], %[[V]], %[[A]]) : (memref<32xi8>, index, memref<4xf32>, memref<4xf32>) -> ()
// CHECK-NEXT:    %[[R:.*]] = call @main__kernel2() : () -> index
// CHECK-NEXT:    call @main__kernel3(%[[R]], %[[A]], %[[ARENA]], %[[C16]], %arg1) : (index, memref<4xf32>, memref<32xi8>, index, memref<4xf32>) -> ()
// CHECK-NEXT:    memref.dealloc %[[A]]
// CHECK-NEXT:    return
// CHECK-LABEL: func.func private @main__kernel0(%arg0: memref<4xf32>, %arg1: memref<4xf32>, %arg2: memref<32xi8>, %arg3: index) attributes {llvm.linkage = #llvm.linkage<internal>, passthrough = ["noinline"]} {
// CHECK-DAG:     %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG:     %[[C4:.*]] = arith.constant 4 : index
// CHECK-DAG:     %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG:     %[[Y:.*]] = memref.view %arg2[%arg3][] : memref<32xi8> to memref<4xf32>
// CHECK:         scf.for %[[I:.*]] = %[[C0]] to %[[C4]] step %[[C1]] {
// CHECK:           arith.addf
// CHECK:           memref.store %{{.*}}, %[[Y]][%[[I]]]
// CHECK:         return
// CHECK-LABEL: func.func private @main__kernel1(
// CHECK:           arith.mulf
// CHECK-LABEL: func.func private @main__kernel2() -> index
// CHECK:         %[[S:.*]] = scf.for
// CHECK:         return %[[S]] : index
// CHECK-LABEL: func.func private @main__kernel3(%arg0: index, %arg1: memref<4xf32>, %arg2: memref<32xi8>, %arg3: index, %arg4: memref<4xf32>)
// CHECK-NEXT:    %[[C0:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[Z:.*]] = memref.view %arg2[%arg3][] : memref<32xi8> to memref<4xf32>
// CHECK-NEXT:    %[[I:.*]] = arith.index_cast %arg0
// CHECK-NEXT:    %[[F:.*]] = arith.sitofp %[[I]]
// CHECK-NEXT:    memref.store %[[F]], %arg1[%[[C0]]]
// CHECK-NEXT:    memref.copy %[[Z]], %arg4
// CHECK-NEXT:    return
// CHECK-NOT:   func.func
memref.global "private" constant @w : memref<4xf32> = dense<1.0>
memref.global "private" constant @v : memref<4xf32> = dense<2.0>
memref.global "private" @arena : memref<32xi8> = uninitialized
func.func @main(%x: memref<4xf32>, %out: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %arena = memref.get_global @arena : memref<32xi8>
  %w = memref.get_global @w : memref<4xf32>
  %v = memref.get_global @v : memref<4xf32>
  %y = memref.view %arena[%c0][] : memref<32xi8> to memref<4xf32>
  scf.for %i = %c0 to %c4 step %c1 {
    %a = memref.load %x[%i] : memref<4xf32>
    %b = memref.load %w[%i] : memref<4xf32>
    %s = arith.addf %a, %b : f32
    memref.store %s, %y[%i] : memref<4xf32>
  }
  %z = memref.view %arena[%c16][] : memref<32xi8> to memref<4xf32>
  scf.for %i = %c0 to %c4 step %c1 {
    %a = memref.load %x[%i] : memref<4xf32>
    %b = memref.load %v[%i] : memref<4xf32>
    %s = arith.addf %a, %b : f32
    memref.store %s, %z[%i] : memref<4xf32>
  }
  %t = memref.alloc() : memref<4xf32>
  scf.for %i = %c0 to %c4 step %c1 {
    %a = memref.load %y[%i] : memref<4xf32>
    %b = memref.load %v[%i] : memref<4xf32>
    %s = arith.mulf %a, %b : f32
    memref.store %s, %t[%i] : memref<4xf32>
  }
  %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%acc = %c0) -> index {
    %n = arith.addi %acc, %i : index
    scf.yield %n : index
  }
  %f = arith.index_cast %r : index to i32
  %g = arith.sitofp %f : i32 to f32
  memref.store %g, %t[%c0] : memref<4xf32>
  memref.copy %z, %out : memref<4xf32> to memref<4xf32>
  memref.dealloc %t : memref<4xf32>
  return
}
