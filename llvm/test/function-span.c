// The plugin's function_hash scan and make-plan.py's (which the lit tests
// hash plans with, and which syscluster's is compared with:
// crates/model/src/plan.rs) find the same function span on every line of
// 400 random texts of braces, quotes, comments, directives and continued
// lines (llvm/test/function-spans.py).
// RUN: rm -rf %t && mkdir -p %t
// RUN: python3 %S/function-spans.py gen %t/texts 400 12
// RUN: %clangxx %llvm-cxxflags -I%S/../include %S/Inputs/function-span.cpp %plugin %llvm-libs -o %t/span
// RUN: cd %t && python3 %S/function-spans.py spans texts/*.c > py.txt
// RUN: cd %t && %t/span texts/*.c > cpp.txt
// RUN: diff %t/py.txt %t/cpp.txt
// RUN: grep -c ' [0-9]* [0-9]*$' %t/cpp.txt | FileCheck %s
// At least some lines are in a function (not every line -).
// CHECK: {{[1-9][0-9]+}}
int main(void) { return 0; }
