//===- Regions.cpp - straight-line regions as one mc_run --------------------===//
//
// Fig. 6: the clusterable edges, heaviest first, grow straight-line
// regions; error checks to handlers that do not return make checked calls
// (§3.3.2); pure code moves in front (§3.3.1); fig. 7: each region proved
// and gaining becomes one mc_run with result references.
//
//===----------------------------------------------------------------------===//
#include "ClusterPass.h"

#include "llvm/Analysis/AssumptionCache.h"
#include "llvm/Analysis/Loads.h"
#include "llvm/Analysis/MemorySSA.h"
#include "llvm/Analysis/ValueTracking.h"
#include "llvm/IR/Dominators.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/Support/Format.h"

namespace syscluster {

/// Fig. 6: the clusterable edges, heaviest first, grow regions — an edge
/// starts one, extends one at either end, or joins two — and each region is
/// replaced by one multi-call where the replacement is proved and gains.
void ClusterPass::applyRegions(const PlanCluster &C, const std::string &Name,
                               std::vector<std::tuple<const Site *, const Site *, uint64_t>> &Edges,
                               const DenseMap<const Site *, uint64_t> &Recorded) {
  // Heaviest first; equal weights in the order the edges were found.
  std::vector<size_t> Order(Edges.size());
  for (size_t I = 0; I < Order.size(); ++I)
    Order[I] = I;
  std::sort(Order.begin(), Order.end(), [&](size_t X, size_t Y) {
    return std::get<2>(Edges[X]) != std::get<2>(Edges[Y]) ? std::get<2>(Edges[X]) > std::get<2>(Edges[Y]) : X < Y;
  });
  std::vector<std::vector<const Site *>> Regions;
  DenseMap<const Site *, unsigned> In;
  for (size_t E : Order) {
    const Site *A = std::get<0>(Edges[E]), *B = std::get<1>(Edges[E]);
    auto IA = In.find(A), IB = In.find(B);
    if (IA == In.end() && IB == In.end()) {
      In[A] = In[B] = Regions.size();
      Regions.push_back({A, B});
    } else if (IA != In.end() && IB == In.end() && Regions[IA->second].back() == A) {
      Regions[IA->second].push_back(B);
      In[B] = IA->second;
    } else if (IB != In.end() && IA == In.end() && Regions[IB->second].front() == B) {
      auto &R = Regions[IB->second];
      R.insert(R.begin(), A);
      In[A] = IB->second;
    } else if (IA != In.end() && IB != In.end() && IA->second != IB->second &&
               Regions[IA->second].back() == A && Regions[IB->second].front() == B) {
      unsigned From = IB->second, To = IA->second;
      for (const Site *S : Regions[From]) {
        Regions[To].push_back(S);
        In[S] = To;
      }
      Regions[From].clear();
    }
  }
  for (auto &R : Regions) {
    if (R.size() < 2)
      continue;
    Function *F = R.front()->S.Call->getFunction();
    std::string What = "the region " + describe(*R.front()) + " -> " + describe(*R.back());
    if (R.size() > 2)
      What += " (" + Twine(R.size()).str() + " calls of the plan)";
    RegionShape Shape;
    // The remark, at the region's first call, then the replacement (made
    // by Replace, the calls erased) recorded.
    auto clustered = [&](const std::string &Msg, function_ref<Instruction *()> Replace) {
      const CallBase *At = R.front()->S.Call;
      ore(*F).emit([&] { return OptimizationRemark(PassName, "Clustered", At) << Msg; });
      Instruction *MC = Replace();
      for (const SyscallSite &S : Shape.Calls)
        Replaced[S.Call] = {MC, C.Id};
      Changed.insert(F);
      FAM.invalidate(*F, PreservedAnalyses::none());
    };
    if (auto Why = checkRegion(R, Shape)) {
      missed(R.front()->S.Call, "NotReplaced",
             Name + ": " + What + " is left as it is: " + Why->Condition + ": " + Why->Detail);
      continue;
    }
    // lseek + read on a descriptor global of this translation unit: one
    // pread, one crossing fewer per run and no context (SeekRead.cpp).
    if (GlobalVariable *G = seekReadGlobal(Shape)) {
      if (auto Why = positionTrackable(G)) {
        analysis(R.front()->S.Call, "NotPread",
                 Name + ": " + What + " is not one pread: " + Why->Condition + ": " + Why->Detail);
      } else {
        std::string Msg = Name + ": " + What + " became one pread (the plan's mechanism; " +
                          "__syscluster_seek_read): one crossing instead of two on a close-on-exec regular file or block device, "
                          "the position the pair leaves kept pending for " + G->getName().str() +
                          "'s other uses, the two calls as written elsewhere";
        clustered(Msg, [&] { return replaceSeekRead(Shape, G); });
        continue;
      }
    }
    // §3.4: descriptors the code does not prove one, which the value
    // profile shows are (Specialize.cpp).
    std::string Spec = Shape.Rule.empty() ? specializeDescriptors(C, Shape) : "";
    std::string Own = ownDescriptors(Shape);
    uint64_t Runs = ~uint64_t(0);
    for (const Site *S : R)
      Runs = std::min(Runs, Recorded.lookup(S));
    unsigned long MinRuns = 0;
    std::string Estimate;
    if (auto Why = checkRegionGain(Shape, Runs, MinRuns, Estimate)) {
      missed(R.front()->S.Call, "NoGain",
             Name + ": " + What + " is left as it is: " + Why->Condition + ": " + Why->Detail);
      continue;
    }
    std::string Checked;
    for (size_t I = 0; I < Shape.Calls.size(); ++I)
      if (Shape.Checked[I] || Shape.Full[I])
        Checked += (Checked.empty() ? "" : ", ") + Shape.Calls[I].Name + " at " + at(Shape.Calls[I].Call) +
                   (!Shape.Full[I] ? "" : isTransfer(Shape.Calls[I]) ? " (short transfer)" : " (result != offset)");
    std::string Sunk;
    for (const StoreInst *SI : Shape.Sunk)
      Sunk += (Sunk.empty() ? "" : ", ") + storedName(SI) + " at " + at(SI);
    if (!Sunk.empty())
      Sunk = "; moved the stores to " + Sunk + " after the region's calls (§3.3.1): independent of the calls "
             "after them, still before those calls' error checks";
    std::string Msg = Name + ": " + What + " became one multi-call of " + Twine(Shape.Calls.size()).str() +
                      " calls (libmulticall mc_run, auto backend" +
                      (Checked.empty() ? std::string("") : "; checked, its error handler kept (§3.3.2): " + Checked) +
                      Sunk + "); " + (Spec.empty() ? "" : Spec + "; ") + (Own.empty() ? "" : Own + "; ") +
                      Estimate;
    clustered(Msg, [&] { return replaceRegion(Shape, MinRuns); });
  }
}

/// Beyond the five conditions: what replacing a straight-line region by
/// mc_run needs.  Walks the region from its first call to its last along
/// the dominator tree; every system call met is one of the multi-call's.
std::optional<Refusal> ClusterPass::checkRegion(ArrayRef<const Site *> R, RegionShape &Shape) {
  CallBase *First = R.front()->S.Call, *LastCall = R.back()->S.Call;
  Function &F = *First->getFunction();
  const DataLayout &DL = M.getDataLayout();
  DominatorTree &DT = FAM.getResult<DominatorTreeAnalysis>(F);
  AAResults &AA = FAM.getResult<AAManager>(F);
  AssumptionCache &AC = FAM.getResult<AssumptionAnalysis>(F);
  if (LastCall->getFunction() != &F || !DT.dominates(First, LastCall))
    return Refusal{"dominance", "the first call does not dominate the last"};
  SmallVector<BasicBlock *, 4> Chain;
  for (DomTreeNode *N = DT.getNode(LastCall->getParent()); N; N = N->getIDom()) {
    Chain.push_back(N->getBlock());
    if (N->getBlock() == First->getParent())
      break;
  }
  std::reverse(Chain.begin(), Chain.end());

  SmallPtrSet<const Instruction *, 16> Pure;   // computed between the calls, stays where it is
  SmallPtrSet<const Instruction *, 4> Hoisted; // loads moved in front of the region
  // §3.3.1: stores that stay where they are, after the later calls, and
  // the loads after them that read what they may write (they stay too),
  // each with the number of calls before it.
  SmallVector<std::pair<StoreInst *, unsigned>, 2> Stores;
  SmallVector<std::pair<LoadInst *, unsigned>, 2> Kept;
  SmallPtrSet<const Instruction *, 4> KeptSet;
  DenseMap<const CallBase *, unsigned> Index;
  auto addCall = [&](const SyscallSite &S) -> std::optional<Refusal> {
    CallBase *CB = S.Call;
    if (!S.Direct)
      return Refusal{"IR not understood",
                     describe(CB) + " is not a libc wrapper that issues " + S.Name +
                         " with the same arguments (data/syscall_properties.tsv, libc column): it is not run "
                         "as that system call"};
    Type *RT = CB->getType();
    if (!(RT->isVoidTy() || (RT->isIntegerTy() && RT->getIntegerBitWidth() <= 64)) || CB->arg_size() > 6 ||
        CB->hasOperandBundles())
      return Refusal{"IR not understood", describe(CB) + " does not have a system call's signature"};
    SmallVector<RegionShape::Arg, 6> Args;
    for (unsigned K = 0; K < CB->arg_size(); ++K) {
      Value *V = CB->getArgOperand(K);
      Type *T = V->getType();
      if (!T->isPointerTy() && !(T->isIntegerTy() && T->getIntegerBitWidth() <= 64))
        return Refusal{"IR not understood", "argument " + Twine(K + 1).str() + " of " + describe(CB) +
                                                " is neither an integer nor a pointer"};
      RegionShape::Arg A;
      auto *I = dyn_cast<Instruction>(V);
      // A result of an earlier call of the region, through casts that keep it.
      int Ref = -1;
      for (auto &[Call, Idx] : Index)
        if (throughLossless(V, maxResult(Shape.Calls[Idx]), true) == Call)
          Ref = Idx;
      if (Ref >= 0) {
        // The reference passes the raw result; the consumer runs only when
        // the producer did not fail (MC_CHECK), or was whole
        // (MC_CHECK_FULL) with a count that a failure's -1 cannot equal.
        if (!Shape.Checked[Ref] && !(Shape.Full[Ref] && countNonNegative(countOf(Shape.Calls[Ref]), DL)))
          return Refusal{"argument safety",
                         "argument " + Twine(K + 1).str() + " of " + describe(CB) + " is the result of " +
                             describe(Shape.Calls[Ref].Call) +
                             ", which is not checked: after a failure the program passes libc's -1, a "
                             "multi-call's reference would pass -errno"};
        A.Ref = Ref;
      } else if (I && Pure.count(I)) {
        // Pure code on values from before the region moves in front of it.
        SmallPtrSet<const Instruction *, 16> InRegion(Pure.begin(), Pure.end());
        InRegion.insert(Hoisted.begin(), Hoisted.end());
        InRegion.insert(KeptSet.begin(), KeptSet.end());
        for (auto &[Call, Idx] : Index)
          InRegion.insert(Call);
        if (!movesBefore(I, InRegion, Shape.Moved))
          return Refusal{"argument safety", "argument " + Twine(K + 1).str() + " of " + describe(CB) +
                                                " is an expression computed between the calls (" + describe(I) +
                                                ") on values of the region"};
        A.Literal = V;
      } else if (I && KeptSet.count(I)) {
        return Refusal{"argument safety", "argument " + Twine(K + 1).str() + " of " + describe(CB) +
                                              " is loaded (" + describe(I) + ") after a store between the calls "
                                              "that may write it: it is not known before the region"};
      } else {
        A.Literal = V; // a constant, an argument, defined before the region, or a load moved before it
      }
      Args.push_back(A);
    }
    Index[CB] = Shape.Calls.size();
    Shape.Calls.push_back(S);
    Shape.Checked.push_back(false);
    Shape.Full.push_back(false);
    Shape.Args.push_back(std::move(Args));
    return std::nullopt;
  };

  for (size_t BI = 0; BI < Chain.size(); ++BI) {
    BasicBlock *BB = Chain[BI];
    if (BI > 0 && BB->getSinglePredecessor() != Chain[BI - 1])
      return Refusal{"linearity", "the block of " + describe(&*BB->getFirstNonPHIOrDbg()) +
                                      " is entered from elsewhere too (a loop or a join inside the region)"};
    BasicBlock::iterator It = BI == 0 ? First->getIterator() : BB->begin();
    for (; It != BB->end(); ++It) {
      Instruction &I = *It;
      if (I.isTerminator()) {
        auto *Br = dyn_cast<BranchInst>(&I);
        if (BI + 1 == Chain.size())
          break;
        if (Br && Br->isUnconditional() && Br->getSuccessor(0) == Chain[BI + 1])
          continue;
        const SyscallSite &Last = Shape.Calls.back();
        if (isFailureExit(Br, Chain[BI + 1], Last) && !Shape.Checked.back()) {
          Shape.Checked.back() = true;
          continue;
        }
        if (isShortExit(Br, Chain[BI + 1], Last, DL) && !Shape.Full.back()) {
          Shape.Full.back() = true;
          continue;
        }
        return Refusal{"linearity", "a branch (" + describe(&I) + ") lies between the calls and is not a check "
                                    "of " + describe(Last.Call) + " that leaves for a handler that does not return"};
      }
      if (auto *CB = dyn_cast<CallBase>(&I)) {
        if (auto S = recognizeSyscall(*CB)) {
          if (auto Why = addCall(*S))
            return Why;
          if (CB == LastCall)
            break;
          continue;
        }
      }
      if (I.isDebugOrPseudoInst())
        continue;
      if (isa<PHINode>(I)) { // a later block's (single-entry) phi: stays, as pure code
        Pure.insert(&I);
        continue;
      }
      if (I.isLifetimeStartOrEnd())
        return Refusal{"safety", "a buffer's lifetime starts or ends between the calls (" + describe(&I) + ")"};
      if (auto *LI = dyn_cast<LoadInst>(&I); LI && LI->isSimple()) {
        MemoryLocation Loc = MemoryLocation::get(LI);
        if (isErrno(LI->getPointerOperand()))
          return Refusal{"convexity", describe(LI) + " reads errno between the calls: the calls set it"};
        auto *Ptr = dyn_cast<Instruction>(LI->getPointerOperand());
        if ((Ptr && (Pure.count(Ptr) || Hoisted.count(Ptr) || Index.count(dyn_cast<CallBase>(Ptr)))) ||
            !isDereferenceableAndAlignedPointer(LI->getPointerOperand(), LI->getType(), LI->getAlign(), DL, First,
                                                &AC, &DT))
          return Refusal{"safety", describe(LI) + " cannot be proved safe to load before the region"};
        // After a store of the region that may write what it reads: it
        // stays after the store (checked against the later calls below).
        if (any_of(Stores, [&](auto &St) {
              MemoryLocation Stored = MemoryLocation::get(St.first);
              return !AA.isNoAlias(Stored, Loc) && !provedApart(LI->getPointerOperand(), Stored);
            })) {
          Kept.emplace_back(LI, Shape.Calls.size());
          KeptSet.insert(LI);
          continue;
        }
        for (const SyscallSite &S : Shape.Calls)
          if (mayWrite(S, Loc, AA))
            return Refusal{"convexity", describe(LI) + " reads memory that " + describe(S.Call) +
                                            " may write; it lies between the calls and cannot move out"};
        Hoisted.insert(LI);
        Shape.Hoist.push_back(LI);
        continue;
      }
      if (!I.mayHaveSideEffects() && !I.mayReadOrWriteMemory() && isSafeToSpeculativelyExecute(&I)) {
        Pure.insert(&I);
        continue;
      }
      // §3.3.1: a store stays where it is, so it runs after the later calls
      // (and before their checks); proved independent of them below.
      if (auto *SI = dyn_cast<StoreInst>(&I)) {
        Stores.emplace_back(SI, Shape.Calls.size());
        continue;
      }
      if (isa<CallBase>(I))
        return Refusal{"safety", describe(&I) + " lies between the calls: user code cannot run in a multi-call"};
      return Refusal{"convexity", describe(&I) + " has side effects and lies between the calls"};
    }
  }
  if (Shape.Calls.size() < 2 || Shape.Calls.back().Call != LastCall)
    return Refusal{"IR not understood", "the walk from the first call did not end at the last"};
  // What stays in place now runs after the calls that followed it.
  for (auto &[SI, Before] : Stores) {
    if (auto Why = storeMovesPast(SI, ArrayRef<SyscallSite>(Shape.Calls).drop_front(Before), AA))
      return Why;
    Shape.Sunk.push_back(SI);
  }
  for (auto &[LI, Before] : Kept)
    for (const SyscallSite &S : ArrayRef<SyscallSite>(Shape.Calls).drop_front(Before))
      if (mayWrite(S, MemoryLocation::get(LI), AA))
        return Refusal{"convexity", describe(LI) + " reads memory that a store between the calls and " +
                                        describe(S.Call) + " after it may both write: it cannot move"};
  // The fusion rule that may merge the calls (libmulticall's rules, named as
  // its calibration names them).
  // One descriptor: the same value, or loads of one variable (a global
  // descriptor clang loads again after each call) proved equal.
  const SyscallSite &S0 = Shape.Calls.front();
  MemorySSA &MSSA = FAM.getResult<MemorySSAAnalysis>(F).getMSSA();
  bool SameFd = all_of(Shape.Calls, [&](const SyscallSite &S) {
    return S.Call->arg_size() && sameValue(S0.Call->getArgOperand(0), S.Call->getArgOperand(0), DT, MSSA, AA);
  });
  if (!SameFd && all_of(Shape.Calls, [&](const SyscallSite &S) {
        auto *L0 = dyn_cast<LoadInst>(S0.Call->getArgOperand(0));
        auto *L = S.Call->arg_size() ? dyn_cast<LoadInst>(S.Call->getArgOperand(0)) : nullptr;
        return L0 && L && L0->getPointerOperand() == L->getPointerOperand();
      }))
    Shape.NoRuleWhy = "the descriptor is loaded again from one variable, which something between the loads may "
                      "write (" + describe(cast<Instruction>(S0.Call->getArgOperand(0))) + " and later)";
  if (SameFd)
    Shape.Rule = fusionRule(Shape);
  return std::nullopt;
}

/// The fusion rule that merges the region's calls when they are on one
/// descriptor (libmulticall's rules, named as its calibration names them),
/// or empty.
std::string fusionRule(const RegionShape &Shape) {
  const SyscallSite &S0 = Shape.Calls.front();
  auto AllNamed = [&](size_t From, StringRef N) {
    return all_of(ArrayRef<SyscallSite>(Shape.Calls).drop_front(From),
                  [&](const SyscallSite &S) { return S.Name == N; });
  };
  if (AllNamed(0, "write"))
    return "writev";
  if (AllNamed(0, "read"))
    return "readv";
  if (AllNamed(0, "pread64"))
    return "preadv";
  if (AllNamed(0, "pwrite64"))
    return "pwritev";
  if (S0.Name == "lseek" && AllNamed(1, "read") && S0.Call->arg_size() == 3 &&
      isa<ConstantInt>(S0.Call->getArgOperand(2)) && cast<ConstantInt>(S0.Call->getArgOperand(2))->isZero())
    return "seek_pread"; // SEEK_SET
  return "";
}

/// Fig. 7: the calls become one array of struct mc_call (libmulticall's
/// binary interface), run by __syscluster_run (llvm/runtime/region.c); each
/// call's value is its result, -1 where it failed (errno is set by the
/// runtime), and the program's checks stay where they were.
Instruction *ClusterPass::replaceRegion(RegionShape &Shape, unsigned long MinRuns) {
  LLVMContext &Ctx = M.getContext();
  CallBase *First = Shape.Calls.front().Call;
  Function &F = *First->getFunction();
  Type *I8 = Type::getInt8Ty(Ctx), *I32 = Type::getInt32Ty(Ctx), *I64 = Type::getInt64Ty(Ctx);
  Type *Ptr = PointerType::get(Ctx, 0);
  // struct mc_call { long nr; long args[6]; long result; unsigned flags; unsigned char ref[6]; }
  StructType *CallTy = StructType::get(Ctx, {I64, ArrayType::get(I64, 6), I64, I32, ArrayType::get(I8, 6)});
  const unsigned McCheck = 1, McCheckFull = 4; // MC_CHECK, MC_CHECK_FULL (multicall.h)
  unsigned N = Shape.Calls.size();

  releaseOwnDescriptors(Shape);
  for (LoadInst *LI : Shape.Hoist)
    LI->moveBefore(First);
  for (Instruction *I : Shape.Moved)
    I->moveBefore(First);
  IRBuilder<> EB(&F.getEntryBlock(), F.getEntryBlock().getFirstInsertionPt());
  ArrayType *ArrTy = ArrayType::get(CallTy, N);
  AllocaInst *Arr = EB.CreateAlloca(ArrTy, nullptr, "syscluster.calls");
  Arr->setAlignment(Align(8));

  IRBuilder<> B(First);
  B.SetCurrentDebugLocation(First->getDebugLoc());
  auto field = [&](unsigned I, unsigned Fld, int J = -1) {
    SmallVector<Value *, 4> Idx{B.getInt32(0), B.getInt32(I), B.getInt32(Fld)};
    if (J >= 0)
      Idx.push_back(B.getInt32(J));
    return B.CreateInBoundsGEP(ArrTy, Arr, Idx);
  };
  for (unsigned I = 0; I < N; ++I) {
    const SyscallSite &S = Shape.Calls[I];
    B.CreateStore(ConstantInt::get(I64, S.Nr), field(I, 0));
    for (unsigned J = 0; J < 6; ++J) {
      Value *V = ConstantInt::get(I64, 0);
      unsigned Ref = 0;
      if (J < Shape.Args[I].size()) {
        const RegionShape::Arg &A = Shape.Args[I][J];
        if (A.Ref >= 0)
          Ref = A.Ref + 1;
        else if (A.Literal->getType()->isPointerTy())
          V = B.CreatePtrToInt(A.Literal, I64);
        else
          V = B.CreateSExtOrTrunc(A.Literal, I64); // as glibc's (long) casts pass an int
      }
      B.CreateStore(V, field(I, 1, J));
      B.CreateStore(ConstantInt::get(I8, Ref), field(I, 4, J));
    }
    B.CreateStore(ConstantInt::get(I64, 0), field(I, 2));
    unsigned Flags = (Shape.Checked[I] ? McCheck : 0) | (Shape.Full[I] ? McCheckFull : 0);
    B.CreateStore(ConstantInt::get(I32, Flags), field(I, 3));
  }
  auto *Runs = new GlobalVariable(M, I64, false, GlobalValue::InternalLinkage, ConstantInt::get(I64, 0),
                                  "syscluster.region.runs");
  // Specialized for one descriptor: the runtime's guard runs the calls as
  // written when their descriptors differ.  Descriptors of the function's
  // own: registered at the first multi-call (Specialize.cpp).
  CallInst *MC;
  if (Shape.OwnFds) {
    FunctionCallee Run =
        M.getOrInsertFunction(Shape.OneFdGuard ? "__syscluster_run_one_fd_own" : "__syscluster_run_own",
                              FunctionType::get(I64, {Ptr, I32, I64, Ptr, I64}, false));
    MC = B.CreateCall(Run, {Arr, B.getInt32(N), ConstantInt::get(I64, MinRuns), Runs,
                            ConstantInt::get(I64, Shape.OwnFds)});
  } else {
    FunctionCallee Run = M.getOrInsertFunction(Shape.OneFdGuard ? "__syscluster_run_one_fd" : "__syscluster_run",
                                               FunctionType::get(I64, {Ptr, I32, I64, Ptr}, false));
    MC = B.CreateCall(Run, {Arr, B.getInt32(N), ConstantInt::get(I64, MinRuns), Runs});
  }
  for (unsigned I = 0; I < N; ++I) {
    CallBase *CB = Shape.Calls[I].Call;
    B.SetCurrentDebugLocation(CB->getDebugLoc());
    if (!CB->getType()->isVoidTy()) {
      Value *R = B.CreateLoad(I64, field(I, 2));
      // libc's value: -1 on failure (errno set by the runtime), else the result.
      Value *V = B.CreateSelect(B.CreateICmpSLT(R, ConstantInt::get(I64, 0)), ConstantInt::getSigned(I64, -1), R);
      V = B.CreateSExtOrTrunc(V, CB->getType());
      CB->replaceAllUsesWith(V);
    }
  }
  for (const SyscallSite &S : Shape.Calls)
    S.Call->eraseFromParent();
  return MC;
}

} // namespace syscluster
