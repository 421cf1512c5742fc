// dlc-plan-buffers: the static buffers a function allocates and frees in its top-level block
// become views of one static arena (an uninitialized memref.global) at offsets planned on
// their live ranges, from the alloc to the last use of the buffer or of a view of it (the
// deallocation pipeline frees them all at the end). %a is last read (through a subview)
// before %c is allocated: they share offset 0; %b, live beside both, follows them, aligned to
// 64 bytes. The buffers of a top-level loop's body are planned on their live ranges in the
// body (%t is dead when %u is allocated: both at offset 0), the body's plan one buffer live at
// the loop (after %c: offset 0 again). Left to malloc: a buffer never freed in its block
// (escaping), one with a dynamic size, one passed to a loop as an iteration argument.
// RUN: dlc-opt %s -p 'builtin.module(dlc-plan-buffers)' --split-input-file | FileCheck %s

// CHECK:       memref.global "private" @__dlc_arena_0_test_plan : memref<4160xi8> = uninitialized {alignment = 64 : i64}
// CHECK-LABEL: func.func @test_plan
// CHECK:         %[[ARENA:.*]] = memref.get_global @__dlc_arena_0_test_plan : memref<4160xi8>
// CHECK:         %[[A:.*]] = memref.view %[[ARENA]][%c0{{.*}}][] : memref<4160xi8> to memref<32x32xf32>
// CHECK:         %[[B:.*]] = memref.view %[[ARENA]][%c4096{{.*}}][] : memref<4160xi8> to memref<10xf32>
// CHECK:         %[[C:.*]] = memref.view %[[ARENA]][%c0{{.*}}][] : memref<4160xi8> to memref<16x16xf32>
// CHECK:         scf.for
// CHECK:           memref.view %[[ARENA]][%c0{{.*}}][] : memref<4160xi8> to memref<8xf32>
// CHECK:           memref.view %[[ARENA]][%c0{{.*}}][] : memref<4160xi8> to memref<8xf32>
// CHECK-NOT:       memref.dealloc
// CHECK:         }
// CHECK:         memref.alloc() : memref<4xf32>
// CHECK:         memref.alloc(%{{.*}}) : memref<?xf32>
// CHECK:         %[[D:.*]] = memref.alloc() : memref<2xf32>
// CHECK:         scf.for {{.*}} iter_args(%{{.*}} = %[[D]])
// CHECK-NOT:     memref.alloc()
// CHECK-NOT:     memref.dealloc %[[A]]
// CHECK-NOT:     memref.dealloc %[[C]]
// CHECK:         memref.dealloc %[[D]]
func.func @test_plan(%x: memref<32x32xf32>, %y: memref<16x16xf32>, %n: index) -> memref<4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %a = memref.alloc() {alignment = 64 : i64} : memref<32x32xf32>
  memref.copy %x, %a : memref<32x32xf32> to memref<32x32xf32>
  %b = memref.alloc() : memref<10xf32>
  %row = memref.subview %a[1, 0] [1, 32] [1, 1] : memref<32x32xf32> to memref<32xf32, strided<[1], offset: 32>>
  %v = memref.load %row[%c0] : memref<32xf32, strided<[1], offset: 32>>
  memref.store %v, %b[%c0] : memref<10xf32>
  %c = memref.alloc() {alignment = 64 : i64} : memref<16x16xf32>
  %w = memref.load %b[%c0] : memref<10xf32>
  memref.store %w, %c[%c0, %c0] : memref<16x16xf32>
  memref.copy %c, %y : memref<16x16xf32> to memref<16x16xf32>
  scf.for %i = %c0 to %c3 step %c1 {
    %t = memref.alloc() : memref<8xf32>
    memref.store %w, %t[%c0] : memref<8xf32>
    %u = memref.alloc() : memref<8xf32>
    memref.store %w, %u[%c0] : memref<8xf32>
    memref.dealloc %u : memref<8xf32>
    memref.dealloc %t : memref<8xf32>
  }
  %kept = memref.alloc() : memref<4xf32>
  %dyn = memref.alloc(%n) : memref<?xf32>
  memref.dealloc %dyn : memref<?xf32>
  %d = memref.alloc() : memref<2xf32>
  %r = scf.for %i = %c0 to %c3 step %c1 iter_args(%m = %d) -> (memref<2xf32>) {
    scf.yield %m : memref<2xf32>
  }
  memref.dealloc %d : memref<2xf32>
  memref.dealloc %c : memref<16x16xf32>
  memref.dealloc %b : memref<10xf32>
  memref.dealloc %a : memref<32x32xf32>
  return %kept : memref<4xf32>
}

// -----

// A function without such buffers is left as it is: no arena.
// CHECK-NOT:   memref.global
// CHECK-LABEL: func.func @test_nothing
// CHECK:         memref.alloc() : memref<4xf32>
func.func @test_nothing() -> memref<4xf32> {
  %kept = memref.alloc() : memref<4xf32>
  return %kept : memref<4xf32>
}

// -----

// A buffer of a dynamic size (no arena: malloc) is freed just after its last use, or the
// last use of a view of it, not at the end of the function; one passed to a call (it may
// escape) keeps its dealloc where it was.
// CHECK-LABEL: func.func @test_dynamic_freed_after_last_use
// CHECK:         %[[A:.*]] = memref.alloc(%arg1) : memref<?xf32>
// CHECK:         linalg.fill ins(%{{.*}} : f32) outs(%[[A]] : memref<?xf32>)
// CHECK:         %[[V:.*]] = memref.expand_shape %[[A]]
// CHECK:         linalg.copy ins(%[[V]] : memref<1x?xf32>) outs(%arg0 : memref<1x?xf32>)
// CHECK-NEXT:    memref.dealloc %[[A]] : memref<?xf32>
// CHECK:         %[[B:.*]] = memref.alloc(%arg1) : memref<?xf32>
// CHECK:         call @keep(%[[B]])
// CHECK:         linalg.fill
// CHECK-NEXT:    memref.dealloc %[[B]] : memref<?xf32>
// CHECK-NEXT:    return
func.func private @keep(memref<?xf32>)
func.func @test_dynamic_freed_after_last_use(%out: memref<1x?xf32>, %n: index) {
  %c0 = arith.constant 0.0 : f32
  %a = memref.alloc(%n) : memref<?xf32>
  linalg.fill ins(%c0 : f32) outs(%a : memref<?xf32>)
  %v = memref.expand_shape %a [[0, 1]] output_shape [1, %n] : memref<?xf32> into memref<1x?xf32>
  linalg.copy ins(%v : memref<1x?xf32>) outs(%out : memref<1x?xf32>)
  %b = memref.alloc(%n) : memref<?xf32>
  call @keep(%b) : (memref<?xf32>) -> ()
  linalg.fill ins(%c0 : f32) outs(%out : memref<1x?xf32>)
  memref.dealloc %a : memref<?xf32>
  memref.dealloc %b : memref<?xf32>
  return
}

// -----

// A buffer copied by a call of dlc-lower-copies' row-copy functions (a dynamic copy's
// rows: the call keeps no pointer) is planned as one a memref.copy reads; a call of any other
// function lets it escape (malloc).
// CHECK-LABEL: func.func @test_row_copy_call
// CHECK:         %[[A:.*]] = memref.view %{{.*}}[%c0{{.*}}][] : memref<{{.*}}xi8> to memref<8x16xf32>
// CHECK:         call @dlc_copy_rows_f32_2d_16(%{{.*}}, %{{.*}})
// CHECK:         %[[B:.*]] = memref.alloc() : memref<8x16xf32>
// CHECK:         call @other(%[[B]])
func.func private @dlc_copy_rows_f32_2d_16(memref<?x?xf32, strided<[?, 1], offset: ?>>, memref<?x?xf32, strided<[?, 1], offset: ?>>)
func.func private @other(memref<8x16xf32>)
func.func @test_row_copy_call(%x: memref<?x?xf32, strided<[?, 1], offset: ?>>) {
  %a = memref.alloc() : memref<8x16xf32>
  %cast = memref.cast %a : memref<8x16xf32> to memref<?x?xf32, strided<[?, 1], offset: ?>>
  call @dlc_copy_rows_f32_2d_16(%x, %cast) : (memref<?x?xf32, strided<[?, 1], offset: ?>>, memref<?x?xf32, strided<[?, 1], offset: ?>>) -> ()
  %b = memref.alloc() : memref<8x16xf32>
  call @other(%b) : (memref<8x16xf32>) -> ()
  memref.dealloc %a : memref<8x16xf32>
  memref.dealloc %b : memref<8x16xf32>
  return
}
