// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-gpu-device-buffers)' | FileCheck %s

// Arguments get device twins: the read one is copied in, the written one (out-parameter)
// copied out; a host alloc becomes gpu.alloc freed at the end of its block; a memref.copy
// becomes linalg.copy (a kernel later); a global is copied to the device at entry.

// CHECK-LABEL: func.func @test_buffers
// CHECK-SAME:    (%[[IN:.*]]: memref<4xf32>, %[[OUT:.*]]: memref<4xf32>)
// CHECK:         %[[DIN:.*]] = gpu.alloc () : memref<4xf32>
// CHECK:         gpu.memcpy %[[DIN]], %[[IN]]
// CHECK:         %[[DOUT:.*]] = gpu.alloc () : memref<4xf32>
// CHECK-NOT:     gpu.memcpy %[[DOUT]]
// CHECK:         %[[G:.*]] = memref.get_global @weights
// CHECK:         %[[DG:.*]] = gpu.alloc () : memref<4xf32>
// CHECK:         gpu.memcpy %[[DG]], %[[G]]
// CHECK:         %[[TMP:.*]] = gpu.alloc () : memref<4xf32>
// CHECK:         linalg.copy {{.*}}ins(%[[DIN]] : memref<4xf32>) outs(%[[TMP]] : memref<4xf32>)
// CHECK:         linalg.add ins(%[[TMP]], %[[DG]] : {{.*}}) outs(%[[DOUT]] : memref<4xf32>)
// CHECK-DAG:     gpu.dealloc %[[TMP]]
// CHECK-DAG:     gpu.dealloc %[[DG]]
// CHECK-DAG:     gpu.dealloc %[[DIN]]
// CHECK:         gpu.memcpy %[[OUT]], %[[DOUT]]
// CHECK:         gpu.dealloc %[[DOUT]]
// CHECK-NEXT:    return
memref.global "private" constant @weights : memref<4xf32> = dense<1.0>
func.func @test_buffers(%in: memref<4xf32>, %out: memref<4xf32>) {
  %w = memref.get_global @weights : memref<4xf32>
  %tmp = memref.alloc() : memref<4xf32>
  memref.copy %in, %tmp : memref<4xf32> to memref<4xf32>
  linalg.add ins(%tmp, %w : memref<4xf32>, memref<4xf32>) outs(%out : memref<4xf32>)
  return
}
