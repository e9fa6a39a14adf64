//===- SysCluster.h - the syscluster pass ---------------------------------===//
//
// Applies the clusters of a plan (`syscluster advise --plan-out`) to the
// module: finds each cluster's call sites through debug locations, decides
// the five conditions of seed 000 §3.2 on the IR, and replaces a region
// only when it proves the replacement keeps everything the program can
// observe.  Every cluster matched, made or refused gets a remark
// (-Rpass=syscluster, -Rpass-missed=syscluster, -Rpass-analysis=syscluster).
//
//===----------------------------------------------------------------------===//
#ifndef SYSCLUSTER_SYSCLUSTER_H
#define SYSCLUSTER_SYSCLUSTER_H

#include "llvm/IR/PassManager.h"

namespace syscluster {

struct SysClusterPass : llvm::PassInfoMixin<SysClusterPass> {
  llvm::PreservedAnalyses run(llvm::Module &M, llvm::ModuleAnalysisManager &MAM);
  static bool isRequired() { return true; }
};

} // namespace syscluster

#endif
