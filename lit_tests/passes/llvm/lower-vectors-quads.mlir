// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-lower-vectors)' | FileCheck %s

// The VNNI kernel's pure quads of byte products (codegen/int8_vnni.py): byte i of each dword
// of a (zero-extended) and of b (sign-extended) multiplied, the 4 products summed and added
// to the accumulator, become one vpdpbusd.

// CHECK-LABEL: func.func @test_quads
// CHECK:         %[[A:.*]] = vector.load %arg0
// CHECK:         %[[B:.*]] = vector.load %arg1
// CHECK:         %[[ACC:.*]] = vector.load %arg2
// CHECK:         llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"(%[[ACC]], %[[A]], %[[B]]) : (vector<16xi32>, vector<64xi8>, vector<64xi8>) -> vector<16xi32>
// CHECK-NOT:     arith.muli
func.func @test_quads(%x: memref<64xi8>, %y: memref<64xi8>, %out: memref<16xi32>) {
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0 : i8
  %pad32 = arith.constant 0 : i32
  %a = vector.transfer_read %x[%c0], %pad {in_bounds = [true]} : memref<64xi8>, vector<64xi8>
  %b = vector.transfer_read %y[%c0], %pad {in_bounds = [true]} : memref<64xi8>, vector<64xi8>
  %acc = vector.transfer_read %out[%c0], %pad32 {in_bounds = [true]} : memref<16xi32>, vector<16xi32>
  %qa0 = vector.shuffle %a, %a [0, 4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 48, 52, 56, 60] : vector<64xi8>, vector<64xi8>
  %qb0 = vector.shuffle %b, %b [0, 4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 48, 52, 56, 60] : vector<64xi8>, vector<64xi8>
  %ea0 = arith.extui %qa0 : vector<16xi8> to vector<16xi32>
  %eb0 = arith.extsi %qb0 : vector<16xi8> to vector<16xi32>
  %m0 = arith.muli %ea0, %eb0 : vector<16xi32>
  %qa1 = vector.shuffle %a, %a [1, 5, 9, 13, 17, 21, 25, 29, 33, 37, 41, 45, 49, 53, 57, 61] : vector<64xi8>, vector<64xi8>
  %qb1 = vector.shuffle %b, %b [1, 5, 9, 13, 17, 21, 25, 29, 33, 37, 41, 45, 49, 53, 57, 61] : vector<64xi8>, vector<64xi8>
  %ea1 = arith.extui %qa1 : vector<16xi8> to vector<16xi32>
  %eb1 = arith.extsi %qb1 : vector<16xi8> to vector<16xi32>
  %m1 = arith.muli %ea1, %eb1 : vector<16xi32>
  %qa2 = vector.shuffle %a, %a [2, 6, 10, 14, 18, 22, 26, 30, 34, 38, 42, 46, 50, 54, 58, 62] : vector<64xi8>, vector<64xi8>
  %qb2 = vector.shuffle %b, %b [2, 6, 10, 14, 18, 22, 26, 30, 34, 38, 42, 46, 50, 54, 58, 62] : vector<64xi8>, vector<64xi8>
  %ea2 = arith.extui %qa2 : vector<16xi8> to vector<16xi32>
  %eb2 = arith.extsi %qb2 : vector<16xi8> to vector<16xi32>
  %m2 = arith.muli %ea2, %eb2 : vector<16xi32>
  %qa3 = vector.shuffle %a, %a [3, 7, 11, 15, 19, 23, 27, 31, 35, 39, 43, 47, 51, 55, 59, 63] : vector<64xi8>, vector<64xi8>
  %qb3 = vector.shuffle %b, %b [3, 7, 11, 15, 19, 23, 27, 31, 35, 39, 43, 47, 51, 55, 59, 63] : vector<64xi8>, vector<64xi8>
  %ea3 = arith.extui %qa3 : vector<16xi8> to vector<16xi32>
  %eb3 = arith.extsi %qb3 : vector<16xi8> to vector<16xi32>
  %m3 = arith.muli %ea3, %eb3 : vector<16xi32>
  %h0 = arith.addi %m0, %m1 : vector<16xi32>
  %h1 = arith.addi %m2, %m3 : vector<16xi32>
  %h = arith.addi %h0, %h1 : vector<16xi32>
  %sum = arith.addi %acc, %h : vector<16xi32>
  vector.transfer_write %sum, %out[%c0] {in_bounds = [true]} : vector<16xi32>, memref<16xi32>
  return
}

// -----

// Products of mismatched bytes (a's byte i by b's byte i + 1) are no vpdpbusd: left as they are.

// CHECK-LABEL: func.func @test_mismatched_bytes
// CHECK-NOT:     llvm.call_intrinsic
// CHECK:         arith.muli
func.func @test_mismatched_bytes(%x: memref<64xi8>, %y: memref<64xi8>, %out: memref<16xi32>) {
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0 : i8
  %pad32 = arith.constant 0 : i32
  %a = vector.transfer_read %x[%c0], %pad {in_bounds = [true]} : memref<64xi8>, vector<64xi8>
  %b = vector.transfer_read %y[%c0], %pad {in_bounds = [true]} : memref<64xi8>, vector<64xi8>
  %acc = vector.transfer_read %out[%c0], %pad32 {in_bounds = [true]} : memref<16xi32>, vector<16xi32>
  %qa0 = vector.shuffle %a, %a [0, 4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 48, 52, 56, 60] : vector<64xi8>, vector<64xi8>
  %qb0 = vector.shuffle %b, %b [1, 5, 9, 13, 17, 21, 25, 29, 33, 37, 41, 45, 49, 53, 57, 61] : vector<64xi8>, vector<64xi8>
  %ea0 = arith.extui %qa0 : vector<16xi8> to vector<16xi32>
  %eb0 = arith.extsi %qb0 : vector<16xi8> to vector<16xi32>
  %m0 = arith.muli %ea0, %eb0 : vector<16xi32>
  %qa1 = vector.shuffle %a, %a [1, 5, 9, 13, 17, 21, 25, 29, 33, 37, 41, 45, 49, 53, 57, 61] : vector<64xi8>, vector<64xi8>
  %qb1 = vector.shuffle %b, %b [2, 6, 10, 14, 18, 22, 26, 30, 34, 38, 42, 46, 50, 54, 58, 62] : vector<64xi8>, vector<64xi8>
  %ea1 = arith.extui %qa1 : vector<16xi8> to vector<16xi32>
  %eb1 = arith.extsi %qb1 : vector<16xi8> to vector<16xi32>
  %m1 = arith.muli %ea1, %eb1 : vector<16xi32>
  %qa2 = vector.shuffle %a, %a [2, 6, 10, 14, 18, 22, 26, 30, 34, 38, 42, 46, 50, 54, 58, 62] : vector<64xi8>, vector<64xi8>
  %qb2 = vector.shuffle %b, %b [3, 7, 11, 15, 19, 23, 27, 31, 35, 39, 43, 47, 51, 55, 59, 63] : vector<64xi8>, vector<64xi8>
  %ea2 = arith.extui %qa2 : vector<16xi8> to vector<16xi32>
  %eb2 = arith.extsi %qb2 : vector<16xi8> to vector<16xi32>
  %m2 = arith.muli %ea2, %eb2 : vector<16xi32>
  %qa3 = vector.shuffle %a, %a [3, 7, 11, 15, 19, 23, 27, 31, 35, 39, 43, 47, 51, 55, 59, 63] : vector<64xi8>, vector<64xi8>
  %qb3 = vector.shuffle %b, %b [0, 4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 48, 52, 56, 60] : vector<64xi8>, vector<64xi8>
  %ea3 = arith.extui %qa3 : vector<16xi8> to vector<16xi32>
  %eb3 = arith.extsi %qb3 : vector<16xi8> to vector<16xi32>
  %m3 = arith.muli %ea3, %eb3 : vector<16xi32>
  %h0 = arith.addi %m0, %m1 : vector<16xi32>
  %h1 = arith.addi %m2, %m3 : vector<16xi32>
  %h = arith.addi %h0, %h1 : vector<16xi32>
  %sum = arith.addi %acc, %h : vector<16xi32>
  vector.transfer_write %sum, %out[%c0] {in_bounds = [true]} : vector<16xi32>, memref<16xi32>
  return
}
