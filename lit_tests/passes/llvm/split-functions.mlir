// dlc-split-functions: a function of more than max-ops ops (nested ones included) becomes
// calls, in order, to private noinline parts of at most max-ops ops: values from before a
// part are its arguments, values used after it its results; constants and globals are cloned
// into the parts that use them; a dealloc moves right after the buffer's last use first (%a:
// into part1, not left at the end); a stack buffer (alloca) never outlives its part (part1
// grows past the bound to keep its uses). A function within the bound is left as it is.
// RUN: dlc-opt %s -p 'builtin.module(dlc-split-functions{max-ops=4 min-ops=0})' | FileCheck %s

// CHECK-LABEL: func.func @main(%arg0: memref<4xf32>, %arg1: memref<4xf32>) {
// CHECK-NEXT:    %[[P0:.*]]:2 = call @main__part0(%arg0) : (memref<4xf32>) -> (memref<4xf32>, memref<4xf32>)
// CHECK-NEXT:    %[[P1:.*]] = call @main__part1(%[[P0]]#0) : (memref<4xf32>) -> f32
// CHECK-NEXT:    call @main__part2(%[[P1]], %[[P0]]#1, %arg1) : (f32, memref<4xf32>, memref<4xf32>) -> ()
// CHECK-NEXT:    call @main__part3(%[[P0]]#1) : (memref<4xf32>) -> ()
// CHECK-NEXT:    return
// CHECK-LABEL: func.func @small(%arg0: memref<4xf32>) {
// CHECK-NEXT:    return
// CHECK-LABEL: func.func private @main__part0(%arg0: memref<4xf32>) -> (memref<4xf32>, memref<4xf32>) attributes {llvm.linkage = #llvm.linkage<internal>, passthrough = ["noinline"]} {
// CHECK-NEXT:    %[[C0:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[A:.*]] = memref.alloc() : memref<4xf32>
// CHECK-NEXT:    %[[V:.*]] = memref.load %arg0[%[[C0]]]
// CHECK-NEXT:    memref.store %[[V]], %[[A]][%[[C0]]]
// CHECK-NEXT:    %[[B:.*]] = memref.alloc() : memref<4xf32>
// CHECK-NEXT:    return %[[A]], %[[B]]
// CHECK-LABEL: func.func private @main__part1(%arg0: memref<4xf32>) -> f32
// CHECK:         memref.load %arg0
// CHECK-NEXT:    memref.dealloc %arg0
// CHECK-NEXT:    memref.alloca()
// CHECK-NEXT:    memref.store
// CHECK-NEXT:    %[[T:.*]] = memref.load
// CHECK-NEXT:    return %[[T]] : f32
// CHECK-LABEL: func.func private @main__part2(%arg0: f32, %arg1: memref<4xf32>, %arg2: memref<4xf32>)
// CHECK:         memref.get_global @w
// CHECK:         memref.copy %arg1, %arg2
// CHECK-NEXT:    return
// CHECK-LABEL: func.func private @main__part3(%arg0: memref<4xf32>)
// CHECK-NEXT:    memref.dealloc %arg0
// CHECK-NEXT:    return
memref.global "private" constant @w : memref<4xf32> = dense<1.0>
func.func @main(%x: memref<4xf32>, %y: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %w = memref.get_global @w : memref<4xf32>
  %a = memref.alloc() : memref<4xf32>
  %v = memref.load %x[%c0] : memref<4xf32>
  memref.store %v, %a[%c0] : memref<4xf32>
  %b = memref.alloc() : memref<4xf32>
  %u = memref.load %a[%c0] : memref<4xf32>
  %s = memref.alloca() : memref<4xf32>
  memref.store %u, %s[%c0] : memref<4xf32>
  %t = memref.load %s[%c0] : memref<4xf32>
  memref.store %t, %b[%c0] : memref<4xf32>
  %q = memref.load %w[%c0] : memref<4xf32>
  memref.store %q, %y[%c0] : memref<4xf32>
  memref.copy %b, %y : memref<4xf32> to memref<4xf32>
  memref.dealloc %a : memref<4xf32>
  memref.dealloc %b : memref<4xf32>
  return
}
func.func @small(%x: memref<4xf32>) {
  return
}
