//===- Conditions.cpp - the five conditions of §3.2 -------------------------===//
//
// Dominance, safety, convexity, argument safety and linearity (seed 000
// §3.2) for two calls of a cluster, each refusal naming the condition and
// the code that made it fail.
//
//===----------------------------------------------------------------------===//
#include "ClusterPass.h"

#include "llvm/Analysis/AssumptionCache.h"
#include "llvm/Analysis/Loads.h"
#include "llvm/Analysis/ValueTracking.h"
#include "llvm/IR/Dominators.h"

namespace syscluster {

/// The five conditions of seed 000 §3.2 for Between(a, b).
std::optional<Refusal> ClusterPass::checkPair(const Site &A, const Site &B) {
  Function &F = *A.S.Call->getFunction();
  DominatorTree &DT = FAM.getResult<DominatorTreeAnalysis>(F);
  AAResults &AA = FAM.getResult<AAManager>(F);
  CallBase *IA = A.S.Call, *IB = B.S.Call;

  // 1. Dominance: a, the region's entry, dominates b.
  if (!DT.dominates(IA, IB)) {
    std::string Why;
    if (IA->getParent() == IB->getParent())
      Why = " (it comes after it in the block)";
    else if (DT.dominates(IB, IA) && F.hasOptNone())
      Why = " (" + B.S.Name + " comes first on every path: in a loop not rotated, the next " + B.S.Name +
            " is reached through the loop test; loop rotation (§3.3.3, clang -O1 and above) puts it after " +
            A.S.Name + ")";
    else if (DT.dominates(IB, IA))
      // Optimized code: LLVM rotated what it could (a call in the loop's
      // test, with nothing leaving the loop between the two calls).
      Why = " (" + B.S.Name + " comes first on every path, and the optimized loop does not end with " +
            A.S.Name + " followed by the next " + B.S.Name + ": loop rotation (§3.3.3) does that only for a " +
            B.S.Name + " in the loop's test with no other exit from the loop between them)";
    return Refusal{"dominance", describe(A) + " does not dominate " + describe(B) + Why};
  }

  // Between(a, b): every x with a dom x dom b — the instructions after a
  // and before b on the dominator-tree path from a's block to b's.
  SmallVector<BasicBlock *, 4> Chain; // a's block ... b's block
  for (DomTreeNode *N = DT.getNode(IB->getParent()); N; N = N->getIDom()) {
    Chain.push_back(N->getBlock());
    if (N->getBlock() == IA->getParent())
      break;
  }
  std::reverse(Chain.begin(), Chain.end());
  SmallVector<Instruction *, 16> Between;
  // The last system call before each chain block's end (a, or one between):
  // the call an error check there may test.
  SmallVector<SyscallSite, 4> LastAt;
  SyscallSite Last = A.S;
  for (BasicBlock *BB : Chain) {
    for (Instruction &I : *BB) {
      if (BB == IA->getParent() && !DT.dominates(IA, &I))
        continue;
      if (&I == IA || &I == IB)
        continue;
      if (BB == IB->getParent() && !I.comesBefore(IB))
        continue;
      if (isa<PHINode>(I) || I.isTerminator())
        continue;
      Between.push_back(&I);
      if (auto *CB = dyn_cast<CallBase>(&I))
        if (auto S = recognizeSyscall(*CB))
          Last = *S;
    }
    LastAt.push_back(Last);
  }

  // 5. Linearity: control flows from a to b without a choice.
  for (size_t I = 0; I + 1 < Chain.size(); ++I) {
    auto *Br = dyn_cast<BranchInst>(Chain[I]->getTerminator());
    if (Br && Br->isUnconditional() && Br->getSuccessor(0) == Chain[I + 1])
      continue;
    // §3.3.2: a check that leaves for a handler that does not return
    // exactly when the call before it failed is mutually exclusive with
    // the rest of the region: the call becomes a checked call.
    if (isFailureExit(Br, Chain[I + 1], LastAt[I]) ||
        isShortExit(Br, Chain[I + 1], LastAt[I], M.getDataLayout()))
      continue;
    std::string Extra;
    if (Br && Br->isConditional())
      for (BasicBlock *Succ : Br->successors())
        if (Succ != Chain[I + 1] && doesNotReturn(Succ))
          Extra = " (its other side does not return, but it is not taken exactly when " +
                  LastAt[I].Name + " at " + at(LastAt[I].Call) + " fails (result < 0) or falls short (result != its "
                  "count, or lseek's SEEK_SET offset): the §3.3.2 restructuring would run calls the program does not)";
    return Refusal{"linearity", "a branch (" + describe(Chain[I]->getTerminator()) +
                                    ") lies between the calls" + Extra};
  }

  // 2 and 3. Safety and convexity: what lies between the calls is either
  // part of the region (setting up arguments, retrieving results: code
  // without side effects) or can be moved out of the way (§3.3.1: no side
  // effects, guaranteed to terminate, independent of the calls).
  for (size_t BI = 0; BI < Between.size(); ++BI) {
    Instruction *I = Between[BI];
    if (I->isDebugOrPseudoInst() || I->isLifetimeStartOrEnd())
      continue;
    // §3.3.1: a store independent of the calls after it runs after them.
    if (auto *SI = dyn_cast<StoreInst>(I)) {
      SmallVector<SyscallSite, 4> Later;
      for (Instruction *J : ArrayRef<Instruction *>(Between).drop_front(BI + 1))
        if (auto *CB = dyn_cast<CallBase>(J))
          if (auto S = recognizeSyscall(*CB))
            Later.push_back(*S);
      Later.push_back(B.S);
      if (auto Why = storeMovesPast(SI, Later, AA))
        return Why;
      continue;
    }
    if (auto *CB = dyn_cast<CallBase>(I); CB && recognizeSyscall(*CB))
      continue; // a system call between: it joins the region
    if (!I->mayHaveSideEffects() && !I->mayReadFromMemory() && isSafeToSpeculativelyExecute(I))
      continue;
    if (auto *LI = dyn_cast<LoadInst>(I); LI && LI->isSimple()) {
      MemoryLocation Loc = MemoryLocation::get(LI);
      if (!mayWrite(A.S, Loc, AA))
        continue; // independent of a: it can move before it
      return Refusal{"convexity", describe(I) + " reads memory that " + describe(A) +
                                       " may write; it lies between the calls and cannot move out"};
    }
    if (isa<CallBase>(I))
      return Refusal{"safety", describe(I) + " lies between the calls: user code cannot run in a multi-call, "
                                              "and it has side effects, so it cannot move out of the region"};
    return Refusal{"convexity", describe(I) + " has side effects and lies between the calls: "
                                               "it cannot move out of the region"};
  }

  // 4. Argument safety: b's arguments are constants, values defined outside
  // the region, or a's result.
  SmallPtrSet<const Instruction *, 16> InRegion(Between.begin(), Between.end());
  InRegion.insert(IA);
  for (unsigned K = B.S.FirstArg; K < IB->arg_size(); ++K) {
    Value *V = IB->getArgOperand(K);
    if (isa<Constant>(V))
      continue;
    auto *I = dyn_cast<Instruction>(V);
    if (!I || !InRegion.count(I))
      continue;
    SmallVector<Instruction *, 4> Moved;
    if (I == IA || throughLossless(I, ~uint64_t(0) >> 1, true) == IA ||
        isa<LoadInst>(I) || // a load independent of a (checked above) moves before the region
        movesBefore(I, InRegion, Moved))
      continue;
    return Refusal{"argument safety", "argument " + Twine(K - B.S.FirstArg + 1).str() + " of " + describe(B) +
                                          " is an expression computed between the calls (" + describe(I) + ")"};
  }
  return std::nullopt;
}

} // namespace syscluster
