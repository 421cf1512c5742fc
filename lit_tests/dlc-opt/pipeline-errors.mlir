// An invalid pipeline is one clear line naming the problem, and exit status 1 (not a traceback).
// RUN: not dlc-opt %s -p 'builtin.module(dlc-canonicalize,dlc-nope)' 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not dlc-opt %s -p 'builtin.module(func.func(not-a-pass))' 2>&1 | FileCheck %s --check-prefix=NESTED
// RUN: not dlc-opt %s -p 'builtin.module(dlc-to-linalg{tile=4})' 2>&1 | FileCheck %s --check-prefix=DLC-OPTION
// RUN: not dlc-opt %s -p 'builtin.module(canonicalize{no-such-option=1})' 2>&1 | FileCheck %s --check-prefix=MLIR-OPTION
// RUN: not dlc-opt %s -p 'builtin.module(dlc-verify' 2>&1 | FileCheck %s --check-prefix=SYNTAX
// RUN: sh -c 'dlc-opt %s -p "builtin.module(dlc-nope)" 2>/dev/null; test $? -eq 1'

// UNKNOWN:     dlc-opt: error: unknown pass 'dlc-nope': neither a dlc pass ({{.*}}dlc-canonicalize, {{.*}}dlc-verify{{.*}}) nor a registered MLIR pass or pass pipeline
// UNKNOWN-NOT: Traceback
// NESTED:      dlc-opt: error: unknown pass 'not-a-pass'
// DLC-OPTION:  dlc-opt: error: pass 'dlc-to-linalg' has no option 'tile' (options: none)
// MLIR-OPTION: dlc-opt: error: invalid pipeline 'canonicalize{no-such-option=1}': {{.*}}no such option no-such-option
// SYNTAX:      dlc-opt: error: expected ',' or ')' at column 26 of pipeline 'builtin.module(dlc-verify'

func.func @test_unused(%a: tensor<4xf32>) -> tensor<4xf32> {
  return %a : tensor<4xf32>
}
