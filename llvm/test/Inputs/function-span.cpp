// The plugin's function_hash scan (syscluster::functionSpan, lib/Plan.cpp)
// on files, printed as function-spans.py prints make-plan.py's: FILE LINE
// START END, or FILE LINE - (lit function-span.c compares the two).  With
// --macros first: FILE LINE MACRO_HASH (syscluster::macroHashOfText), or -.
#include "SysCluster/Plan.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

int main(int argc, char **argv) {
  bool Macros = argc > 1 && llvm::StringRef(argv[1]) == "--macros";
  for (int I = Macros ? 2 : 1; I < argc; ++I) {
    auto Buf = llvm::MemoryBuffer::getFile(argv[I]);
    if (!Buf) {
      llvm::errs() << argv[I] << ": cannot read\n";
      return 1;
    }
    llvm::StringRef Text = (*Buf)->getBuffer();
    for (unsigned Line = 0; Line < Text.count('\n') + 3; ++Line) {
      llvm::outs() << argv[I] << " " << Line;
      if (Macros) {
        auto H = syscluster::macroHashOfText(Text, Line);
        llvm::outs() << " " << (H ? *H : "-") << "\n";
      } else if (auto S = syscluster::functionSpan(Text, Line))
        llvm::outs() << " " << S->first << " " << S->second << "\n";
      else
        llvm::outs() << " -\n";
    }
  }
  return 0;
}
