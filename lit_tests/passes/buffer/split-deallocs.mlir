// dlc-split-deallocs: a bufferization.dealloc of distinct memref.alloc buffers, nothing
// retained, becomes one dealloc per buffer, same order and conditions (upstream's
// simplification would ask alias analysis about every pair first: N^2). A dealloc with a
// view (it may alias) or with retained values is left to upstream.
// RUN: dlc-opt %s -p 'builtin.module(dlc-split-deallocs)' | FileCheck %s

// CHECK-LABEL: func.func @split
// CHECK:         %[[A:.*]] = memref.alloc()
// CHECK-NEXT:    %[[B:.*]] = memref.alloc()
// CHECK-NEXT:    bufferization.dealloc (%[[A]] : memref<4xf32>) if (%true)
// CHECK-NEXT:    bufferization.dealloc (%[[B]] : memref<4xf32>) if (%true)
// CHECK-NEXT:    return
// CHECK-LABEL: func.func @kept
// CHECK:         bufferization.dealloc (%{{.*}}, %{{.*}} : memref<4xf32>, memref<2xf32, strided<[1]>>) if (%true, %arg1)
// CHECK-NEXT:    bufferization.dealloc (%{{.*}} : memref<4xf32>) if (%true) retain (%arg0 : memref<4xf32>)
func.func @split(%x: memref<4xf32>) {
  %true = arith.constant true
  %a = memref.alloc() : memref<4xf32>
  %b = memref.alloc() : memref<4xf32>
  bufferization.dealloc (%a, %b : memref<4xf32>, memref<4xf32>) if (%true, %true)
  return
}
func.func @kept(%x: memref<4xf32>, %c: i1) -> i1 {
  %true = arith.constant true
  %a = memref.alloc() : memref<4xf32>
  %v = memref.subview %a[0] [2] [1] : memref<4xf32> to memref<2xf32, strided<[1]>>
  bufferization.dealloc (%a, %v : memref<4xf32>, memref<2xf32, strided<[1]>>) if (%true, %c)
  %r = bufferization.dealloc (%a : memref<4xf32>) if (%true) retain (%x : memref<4xf32>)
  return %r : i1
}
