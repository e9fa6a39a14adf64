// The plugin's function_hash scan and make-plan.py's (which the lit tests
// hash plans with, and which syscluster's is compared with:
// crates/model/src/plan.rs) find the same function span on every line of
// 400 random texts of braces, quotes, comments, directives and continued
// lines (llvm/test/function-spans.py); and the same macro_hash on every
// line of 400 texts of functions and #defines.
// RUN: rm -rf %t && mkdir -p %t
// RUN: python3 %S/function-spans.py gen %t/texts 400 12
// RUN: %clangxx %llvm-cxxflags -I%S/../include %S/Inputs/function-span.cpp %plugin %llvm-libs -o %t/span
// RUN: cd %t && python3 %S/function-spans.py spans texts/*.c > py.txt
// RUN: cd %t && %t/span texts/*.c > cpp.txt
// RUN: diff %t/py.txt %t/cpp.txt
// RUN: grep -c ' [0-9]* [0-9]*$' %t/cpp.txt | FileCheck %s
// The macro_hash scan the same way, on 400 texts of functions and #defines.
// RUN: python3 %S/function-spans.py gen-macros %t/mtexts 400 7
// RUN: cd %t && python3 %S/function-spans.py macros mtexts/*.c > py-macros.txt
// RUN: cd %t && %t/span --macros mtexts/*.c > cpp-macros.txt
// RUN: diff %t/py-macros.txt %t/cpp-macros.txt
// RUN: grep -v ' -$' %t/cpp-macros.txt | grep -v ' cbf29ce484222325$' | wc -l | FileCheck %s --check-prefix=USED
// Some functions use macros (a hash other than the empty text's).
// USED: {{[1-9][0-9]+}}
// At least some lines are in a function (not every line -).
// CHECK: {{[1-9][0-9]+}}
int main(void) { return 0; }
