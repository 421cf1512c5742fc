// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-gpu-device-buffers)' | FileCheck %s
// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-gpu-device-buffers{resident-constants=false})' \
// RUN:   | FileCheck %s --check-prefix=COPIED

// Arguments get device twins: the read one is copied in, the written one (out-parameter)
// copied out; a host alloc becomes gpu.alloc freed at the end of its block; a memref.copy
// becomes linalg.copy (a kernel later). A constant global the function only reads becomes a
// trailing argument marked {dlc.resident = @global}: a device buffer the runtime uploads once,
// with no copy per call. With resident-constants=false it is copied to the device at entry.

// CHECK-LABEL: func.func @test_buffers
// CHECK-SAME:    (%[[IN:.*]]: memref<4xf32>, %[[OUT:.*]]: memref<4xf32>, %[[W:.*]]: memref<4xf32> {dlc.resident = @weights})
// CHECK:         %[[DIN:.*]] = gpu.alloc () : memref<4xf32>
// CHECK:         gpu.memcpy %[[DIN]], %[[IN]]
// CHECK:         %[[DOUT:.*]] = gpu.alloc () : memref<4xf32>
// CHECK-NOT:     gpu.memcpy %[[DOUT]]
// CHECK-NOT:     memref.get_global
// CHECK:         %[[TMP:.*]] = gpu.alloc () : memref<4xf32>
// CHECK:         linalg.copy {{.*}}ins(%[[DIN]] : memref<4xf32>) outs(%[[TMP]] : memref<4xf32>)
// CHECK:         linalg.add ins(%[[TMP]], %[[W]] : {{.*}}) outs(%[[DOUT]] : memref<4xf32>)
// CHECK-DAG:     gpu.dealloc %[[TMP]]
// CHECK-DAG:     gpu.dealloc %[[DIN]]
// CHECK:         gpu.memcpy %[[OUT]], %[[DOUT]]
// CHECK:         gpu.dealloc %[[DOUT]]
// CHECK-NEXT:    return

// COPIED-LABEL: func.func @test_buffers
// COPIED-SAME:    (%{{.*}}: memref<4xf32>, %{{.*}}: memref<4xf32>)
// COPIED:         %[[G:.*]] = memref.get_global @weights
// COPIED:         %[[DG:.*]] = gpu.alloc () : memref<4xf32>
// COPIED:         gpu.memcpy %[[DG]], %[[G]]
// COPIED:         linalg.add ins(%{{.*}}, %[[DG]] : {{.*}})
// COPIED:         gpu.dealloc %[[DG]]
memref.global "private" constant @weights : memref<4xf32> = dense<1.0>
func.func @test_buffers(%in: memref<4xf32>, %out: memref<4xf32>) {
  %w = memref.get_global @weights : memref<4xf32>
  %tmp = memref.alloc() : memref<4xf32>
  memref.copy %in, %tmp : memref<4xf32> to memref<4xf32>
  linalg.add ins(%tmp, %w : memref<4xf32>, memref<4xf32>) outs(%out : memref<4xf32>)
  return
}

// -----

// A global the function writes (the status of the index checks) stays a host global, copied
// to the device at entry and back before each return; a bf16 constant (the runtime cannot
// read bf16 into numpy) stays a per-call copy.

// CHECK-LABEL: func.func @test_written_global
// CHECK-SAME:    (%{{.*}}: memref<2xi64>)
// CHECK-NOT:     dlc.resident
// CHECK-DAG:     %[[H:.*]] = memref.get_global @half
// CHECK-DAG:     gpu.memcpy %{{.*}}, %[[H]]
// CHECK-DAG:     %[[S:.*]] = memref.get_global @status
// CHECK-DAG:     gpu.memcpy %[[DS:.*]], %[[S]]
// CHECK:         memref.store %{{.*}}, %[[DS]]
// CHECK:         gpu.memcpy %[[S]], %[[DS]]
memref.global "private" @status : memref<2xi64> = dense<0>
memref.global "private" constant @half : memref<2xbf16> = dense<1.0>
func.func @test_written_global(%out: memref<2xi64>) {
  %s = memref.get_global @status : memref<2xi64>
  %h = memref.get_global @half : memref<2xbf16>
  %c = arith.constant 1 : i64
  %i = arith.constant 0 : index
  memref.store %c, %s[%i] : memref<2xi64>
  %v = memref.load %h[%i] : memref<2xbf16>
  memref.copy %s, %out : memref<2xi64> to memref<2xi64>
  return
}
