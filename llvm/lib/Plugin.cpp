//===- Plugin.cpp - registration with the new pass manager ----------------===//
//
// Runs at OptimizerLastEP, after clang's -O2 pipeline has rotated loops
// (the §3.3.3 transformation: a copy loop's write and next read end up in
// one block); `opt -passes=syscluster` runs it alone.
//
//===----------------------------------------------------------------------===//
#include "SysCluster/SysCluster.h"

#include "llvm/Passes/PassBuilder.h"
#include "llvm/Passes/PassPlugin.h"

using namespace llvm;

extern "C" LLVM_ATTRIBUTE_WEAK PassPluginLibraryInfo llvmGetPassPluginInfo() {
  return {LLVM_PLUGIN_API_VERSION, "syscluster", "0.1", [](PassBuilder &PB) {
            PB.registerOptimizerLastEPCallback([](ModulePassManager &MPM, OptimizationLevel) {
              MPM.addPass(syscluster::SysClusterPass());
            });
            PB.registerPipelineParsingCallback(
                [](StringRef Name, ModulePassManager &MPM, ArrayRef<PassBuilder::PipelineElement>) {
                  if (Name != "syscluster")
                    return false;
                  MPM.addPass(syscluster::SysClusterPass());
                  return true;
                });
          }};
}
