// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-lower-vectors)' | FileCheck %s

// The integer matmul kernel's pure pairs of products (codegen/int8_matmul.py): the even and
// the odd 16-bit lanes of a and b extended, multiplied and added, become one vpmaddwd.

// CHECK-LABEL: func.func @test_pairs
// CHECK:         %[[A:.*]] = vector.load %arg0
// CHECK:         %[[B:.*]] = vector.load %arg1
// CHECK:         llvm.call_intrinsic "llvm.x86.avx2.pmadd.wd"(%{{.*}}, %{{.*}}) : (vector<16xi16>, vector<16xi16>) -> vector<8xi32>
// CHECK-NOT:     arith.muli
func.func @test_pairs(%x: memref<16xi16>, %y: memref<16xi16>, %out: memref<8xi32>) {
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0 : i16
  %a = vector.transfer_read %x[%c0], %pad {in_bounds = [true]} : memref<16xi16>, vector<16xi16>
  %b = vector.transfer_read %y[%c0], %pad {in_bounds = [true]} : memref<16xi16>, vector<16xi16>
  %ae = vector.shuffle %a, %a [0, 2, 4, 6, 8, 10, 12, 14] : vector<16xi16>, vector<16xi16>
  %ao = vector.shuffle %a, %a [1, 3, 5, 7, 9, 11, 13, 15] : vector<16xi16>, vector<16xi16>
  %be = vector.shuffle %b, %b [0, 2, 4, 6, 8, 10, 12, 14] : vector<16xi16>, vector<16xi16>
  %bo = vector.shuffle %b, %b [1, 3, 5, 7, 9, 11, 13, 15] : vector<16xi16>, vector<16xi16>
  %aex = arith.extsi %ae : vector<8xi16> to vector<8xi32>
  %aox = arith.extsi %ao : vector<8xi16> to vector<8xi32>
  %bex = arith.extsi %be : vector<8xi16> to vector<8xi32>
  %box = arith.extsi %bo : vector<8xi16> to vector<8xi32>
  %me = arith.muli %aex, %bex : vector<8xi32>
  %mo = arith.muli %aox, %box : vector<8xi32>
  %sum = arith.addi %me, %mo : vector<8xi32>
  vector.transfer_write %sum, %out[%c0] {in_bounds = [true]} : vector<8xi32>, memref<8xi32>
  return
}

// -----

// Products of mismatched lanes (a's even by b's odd) are not a vpmaddwd: left as they are.

// CHECK-LABEL: func.func @test_mismatched_lanes
// CHECK-NOT:     llvm.call_intrinsic
// CHECK:         arith.muli
func.func @test_mismatched_lanes(%x: memref<16xi16>, %y: memref<16xi16>, %out: memref<8xi32>) {
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0 : i16
  %a = vector.transfer_read %x[%c0], %pad {in_bounds = [true]} : memref<16xi16>, vector<16xi16>
  %b = vector.transfer_read %y[%c0], %pad {in_bounds = [true]} : memref<16xi16>, vector<16xi16>
  %ae = vector.shuffle %a, %a [0, 2, 4, 6, 8, 10, 12, 14] : vector<16xi16>, vector<16xi16>
  %ao = vector.shuffle %a, %a [1, 3, 5, 7, 9, 11, 13, 15] : vector<16xi16>, vector<16xi16>
  %be = vector.shuffle %b, %b [0, 2, 4, 6, 8, 10, 12, 14] : vector<16xi16>, vector<16xi16>
  %bo = vector.shuffle %b, %b [1, 3, 5, 7, 9, 11, 13, 15] : vector<16xi16>, vector<16xi16>
  %aex = arith.extsi %ae : vector<8xi16> to vector<8xi32>
  %aox = arith.extsi %ao : vector<8xi16> to vector<8xi32>
  %bex = arith.extsi %be : vector<8xi16> to vector<8xi32>
  %box = arith.extsi %bo : vector<8xi16> to vector<8xi32>
  %me = arith.muli %aex, %box : vector<8xi32>
  %mo = arith.muli %aox, %bex : vector<8xi32>
  %sum = arith.addi %me, %mo : vector<8xi32>
  vector.transfer_write %sum, %out[%c0] {in_bounds = [true]} : vector<8xi32>, memref<8xi32>
  return
}
