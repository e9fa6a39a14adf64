//===- CopyLoop.cpp - the copy loop as a looped multi-call ------------------===//
//
// The rotated copy loop (§3.3.3: a write followed by a read in one block,
// looping while the read returns > 0) becomes __syscluster_write_read_loop
// (llvm/runtime/write_read_loop.c, a looped multi-call, §3.4), behind a
// guard on the block size where the value profile gives one (§3.4), when
// the pass proves nothing observable changes.
//
//===----------------------------------------------------------------------===//
#include "ClusterPass.h"

#include "llvm/Analysis/AssumptionCache.h"
#include "llvm/Analysis/Loads.h"
#include "llvm/Analysis/ValueTracking.h"
#include "llvm/IR/Dominators.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/Support/Format.h"

namespace syscluster {

/// What both copy loops (this one and CheckedLoop.cpp's) need of their
/// calls: libc's read and write wrappers as libc declares them,
/// (int, ptr, size_t) -> ssize_t.
std::optional<Refusal> copyCallsUnderstood(const Site &W, const Site &R) {
  if (W.S.FirstArg || R.S.FirstArg || W.S.Fortified)
    return Refusal{"IR not understood", "only the libc wrappers read/write (and __read_chk) are replaced"};
  for (CallBase *CB : {W.S.Call, R.S.Call}) {
    Type *I64 = Type::getInt64Ty(CB->getContext());
    if (CB->getType() != I64 || CB->arg_size() < 3 || !CB->getArgOperand(0)->getType()->isIntegerTy(32) ||
        !CB->getArgOperand(1)->getType()->isPointerTy() || CB->getArgOperand(2)->getType() != I64)
      return Refusal{"IR not understood", describe(CB) + " does not have libc's signature"};
  }
  return std::nullopt;
}

/// The copy loop's read count (Max): a constant from 1 to 2^31-1, or —
/// §3.4, value specialization — a variable computed before the loop (Body:
/// its blocks), for which the plan's value profile gives one such value in
/// most calls (`calls[].args.count`), then Spec; a guard sends it to the
/// multi-call and any other to the loop.  A fortified read (__read_chk) of
/// at most Max bytes must pass its check.
std::optional<Refusal> loopReadCount(const Site &R, const PlanCluster &C, ArrayRef<const BasicBlock *> Body,
                                     uint64_t &Max, uint64_t &Spec) {
  CallBase *CR = R.S.Call;
  auto *Count = dyn_cast<ConstantInt>(CR->getArgOperand(2));
  auto *CountI = dyn_cast<Instruction>(CR->getArgOperand(2));
  Spec = 0;
  if (!Count && !(CountI && is_contained(Body, CountI->getParent()))) {
    std::optional<int64_t> K;
    for (const PlanCall &PC : C.Calls)
      if (PC.Syscall == "read")
        for (const auto &[Name, V] : PC.Args)
          if (Name == "count")
            K = V;
    if (K && *K > 0 && *K < (int64_t(1) << 31))
      Spec = uint64_t(*K);
  }
  if (!Spec && !Count && CountI && is_contained(Body, CountI->getParent()))
    return Refusal{"argument safety", "the read's count is not a constant between 1 and 2^31-1 (nor one the plan's "
                                      "value profile gives, computed before the loop): it is computed in the loop"};
  if (!Spec && !Count)
    // A count computed before the loop: the runtime takes any, but the
    // proofs here (the write's count through clang's conversions, the
    // gain per block) are made for one known count.
    return Refusal{"argument safety",
                   "the read's count is not a constant between 1 and 2^31-1 (nor one the plan's value profile "
                   "gives, computed before the loop): a count computed before the loop is replaced only for the "
                   "value the profile gives (§3.4, behind a guard), since the pass proves the write's count and "
                   "prices the multi-call (its saving per block) for one known count; the runtime itself takes "
                   "any count"};
  if (!Spec && (Count->isZero() || Count->getZExtValue() >= (uint64_t(1) << 31)))
    return Refusal{"argument safety", "the read's count is not a constant between 1 and 2^31-1, so the write's "
                                      "count cannot be proved to be the read's result"};
  Max = Spec ? Spec : Count->getZExtValue();
  auto *Len = R.S.Fortified && CR->arg_size() > 3 ? dyn_cast<ConstantInt>(CR->getArgOperand(3)) : nullptr;
  if (R.S.Fortified && (!Len || Len->getZExtValue() < Max))
    return Refusal{"safety", "the fortified read's check (__read_chk) is not proved to pass"};
  return std::nullopt;
}

/// The one block outside the loop that enters it at Head (Latch: the
/// block that loops back), ending in an ordinary branch.
std::optional<Refusal> loopEntry(BasicBlock *Head, BasicBlock *Latch, BasicBlock *&Pre) {
  Pre = nullptr;
  for (BasicBlock *P : predecessors(Head)) {
    if (P == Latch)
      continue;
    if (Pre && Pre != P)
      return Refusal{"dominance", "the loop is entered from more than one place"};
    Pre = P;
  }
  if (!Pre || !isa<BranchInst>(Pre->getTerminator()))
    return Refusal{"dominance", "the loop has no single ordinary entry"};
  return std::nullopt;
}

/// Safety of an instruction of a copy loop's body (Body: its blocks) other
/// than the calls, phis and branches: pure code, or a load the loop's read
/// cannot write that is safe to load at Pre's end, where it moves (§3.3.1).
std::optional<Refusal> copyLoopInstruction(Instruction &I, ArrayRef<const BasicBlock *> Body, const Site &R,
                                           BasicBlock *Pre, FunctionAnalysisManager &FAM) {
  Function &F = *I.getFunction();
  if (auto *LI = dyn_cast<LoadInst>(&I)) {
    if (!LI->isSimple() || isErrno(LI->getPointerOperand()))
      return Refusal{"safety", describe(LI) + " is volatile, atomic or of errno"};
    auto *Ptr = dyn_cast<Instruction>(LI->getPointerOperand());
    if (Ptr && is_contained(Body, Ptr->getParent()))
      return Refusal{"argument safety", "the address of " + describe(LI) + " is computed in the loop"};
    if (mayWrite(R.S, MemoryLocation::get(LI), FAM.getResult<AAManager>(F)))
      return Refusal{"argument safety", describe(LI) + " reads memory the loop's read may write "
                                                       "(alias analysis cannot separate it from the buffer)"};
    if (!isDereferenceableAndAlignedPointer(LI->getPointerOperand(), LI->getType(), LI->getAlign(),
                                            F.getParent()->getDataLayout(), Pre->getTerminator(),
                                            &FAM.getResult<AssumptionAnalysis>(F),
                                            &FAM.getResult<DominatorTreeAnalysis>(F)))
      return Refusal{"safety", describe(LI) + " is not known to be safe to load before the loop"};
    return std::nullopt;
  }
  if (I.isLifetimeStartOrEnd())
    return Refusal{"safety", "the buffer's lifetime starts or ends inside the loop"};
  if (I.mayHaveSideEffects() || I.mayReadOrWriteMemory() || !isSafeToSpeculativelyExecute(&I))
    return Refusal{"safety", describe(&I) + " is user code in the loop body: it cannot run inside a multi-call"};
  return std::nullopt; // pure code: its uses are checked by the caller
}

/// Beyond the five conditions: what replacing the rotated copy loop
///   L: p = phi [init, pre], [r, L];  write(out, wbuf, p);  r = read(in, rbuf, C);  br r > 0, L, exit
/// by __syscluster_write_read_loop(out, wbuf, in, rbuf, C, init) needs.
std::optional<Refusal> ClusterPass::checkWriteReadLoop(const Site &W, const Site &R, const PlanCluster &C,
                                                       uint64_t &Spec) {
  Spec = 0;
  CallBase *CW = W.S.Call, *CR = R.S.Call;
  BasicBlock *L = CW->getParent();
  Function &F = *L->getParent();
  AAResults &AA = FAM.getResult<AAManager>(F);

  if (CR->getParent() != L)
    return Refusal{"linearity", "the write and the read are not in one block"};
  if (auto Why = copyCallsUnderstood(W, R))
    return Why;
  Value *CountV = CR->getArgOperand(2);
  uint64_t Max;
  if (auto Why = loopReadCount(R, C, {L}, Max, Spec))
    return Why;

  // §3.4: the region must be the whole loop body — one block that loops to
  // itself while the read returns more than 0, and leaves to one exit.
  auto *Br = dyn_cast<BranchInst>(L->getTerminator());
  if (!Br || !Br->isConditional() || (Br->getSuccessor(0) != L && Br->getSuccessor(1) != L))
    return Refusal{"loop", "the block holding the calls is not a whole loop body (§3.4)"};
  BasicBlock *Exit = Br->getSuccessor(0) == L ? Br->getSuccessor(1) : Br->getSuccessor(0);
  if (Exit == L || !continuesWhilePositive(Br, L, CR, Max))
    return Refusal{"loop", "the loop does not go on exactly while the read returns more than 0"};
  BasicBlock *Pre;
  if (auto Why = loopEntry(L, L, Pre))
    return Why;

  // Safety: the body holds only the calls, the carried read result, the
  // arguments' setup and the loop test; loads that no call of the loop may
  // write are moved in front of it (§3.3.1).
  PHINode *Carried = nullptr;
  for (Instruction &I : *L) {
    if (&I == CW || &I == CR || &I == Br || I.isDebugOrPseudoInst())
      continue;
    if (auto *Phi = dyn_cast<PHINode>(&I)) {
      if (Carried)
        return Refusal{"safety", "a value other than the read's result is carried around the loop (" +
                                     describe(Phi) + ")"};
      if (Phi->getIncomingValueForBlock(L) != CR)
        return Refusal{"safety", "the value carried around the loop is not the read's result"};
      Carried = Phi;
      continue;
    }
    if (auto Why = copyLoopInstruction(I, {L}, R, Pre, FAM))
      return Why;
  }
  if (!Carried)
    return Refusal{"loop", "the write's count is not carried from the previous read"};
  for (User *U : Carried->users())
    if (auto *I = dyn_cast<Instruction>(U); !I || I->getParent() != L)
      return Refusal{"safety", "the previous read's result is used after the loop"};

  // Argument safety: fds and buffers are the same in every iteration, the
  // write's count is exactly the previous read's result.
  for (unsigned K : {0u, 1u})
    for (CallBase *CB : {CW, CR}) {
      Value *V = CB->getArgOperand(K);
      if (auto *I = dyn_cast<Instruction>(V); I && I->getParent() == L && !isa<LoadInst>(I))
        return Refusal{"argument safety", "argument " + Twine(K + 1).str() + " of " + describe(CB) +
                                              " is computed in the loop"};
    }
  if (throughLossless(CW->getArgOperand(2), Max, true) != Carried)
    return Refusal{"argument safety", "the write's count is not the previous read's result"};

  // The first iteration's count: a read of at most Max bytes whose result
  // was tested > 0 on the way in, as the loop's own reads are.
  Value *Init = Carried->getIncomingValueForBlock(Pre);
  auto *InitCall = dyn_cast<CallBase>(Init);
  auto InitS = InitCall ? recognizeSyscall(*InitCall) : std::nullopt;
  Value *InitCountV = InitS && InitS->Name == "read" && !InitS->FirstArg ? InitCall->getArgOperand(2) : nullptr;
  auto *InitCount = dyn_cast_or_null<ConstantInt>(InitCountV);
  // Specialized: the guard read's count is the loop's (the guard tests it).
  bool InitOk = Spec ? InitCountV == CountV : InitCount && InitCount->getZExtValue() <= Max;
  if (!InitOk ||
      !continuesWhilePositive(dyn_cast<BranchInst>(Pre->getTerminator()), L, InitCall, Max))
    return Refusal{"argument safety", "the loop's first write count is not a read's result tested > 0 "
                                      "before the loop"};

  // Same values in the same variables: the write's result is not used
  // (the program ignores it, so the loop goes on after a failing write, as
  // the replacement does), and after the loop only the last read's result is.
  if (!CW->use_empty())
    return Refusal{"safety", "the write's result is used in the loop (a check to a handler that leaves the loop "
                              "is replaced when the read heads the loop: CheckedLoop.cpp)"};
  for (Instruction &I : *L)
    for (User *U : I.users()) {
      auto *UI = dyn_cast<Instruction>(U);
      if (!UI || UI->getParent() == L)
        continue;
      if (&I == CR || (isa<CastInst>(I) && I.getOperand(0) == CR)) {
        // Specialized, the loop stays beside the multi-call: its values
        // reach the code after it only through the exit's phis, which
        // then get the multi-call's too.
        if (Spec && !(isa<PHINode>(UI) && is_contained(successors(L), UI->getParent())))
          return Refusal{"safety", describe(&I) + " is used after the loop other than by a phi of its exit: "
                                                  "the specialized loop (§3.4) cannot keep the original beside it"};
        continue;
      }
      return Refusal{"safety", describe(&I) + " computed in the loop is used after it"};
    }

  // Never a slower program: the gain is the copy fused into copy_file_range,
  // which needs one buffer.
  if (CW->getArgOperand(1) != CR->getArgOperand(1) &&
      !AA.isMustAlias(CW->getArgOperand(1), CR->getArgOperand(1)))
    return Refusal{"no gain", "the write and the read use different buffers: the multi-call could not "
                              "fuse them into a copy and would only add bookkeeping"};
  return std::nullopt;
}

Instruction *ClusterPass::replaceWriteReadLoop(const Site &W, const Site &R, unsigned long MinBlocks,
                                               uint64_t Spec) {
  CallBase *CW = W.S.Call, *CR = R.S.Call;
  BasicBlock *L = CW->getParent();
  Function &F = *L->getParent();
  LLVMContext &Ctx = M.getContext();
  auto *Br = cast<BranchInst>(L->getTerminator());
  BasicBlock *Exit = Br->getSuccessor(0) == L ? Br->getSuccessor(1) : Br->getSuccessor(0);
  BasicBlock *Pre = nullptr;
  PHINode *Carried = nullptr;
  for (BasicBlock *P : predecessors(L))
    if (P != L)
      Pre = P;
  for (PHINode &Phi : L->phis())
    Carried = &Phi;

  BasicBlock *N = BasicBlock::Create(Ctx, "syscluster.copy", &F, L);
  IRBuilder<> B(N);
  B.SetCurrentDebugLocation(CW->getDebugLoc());
  // Loads proved independent of the loop's calls move in front of it.
  DenseMap<Value *, Value *> Hoisted;
  auto arg = [&](Value *V) -> Value * {
    auto *LI = dyn_cast<LoadInst>(V);
    if (!LI || LI->getParent() != L)
      return V;
    if (!Hoisted.count(LI)) {
      Instruction *C = LI->clone();
      B.Insert(C);
      Hoisted[LI] = C;
    }
    return Hoisted[LI];
  };
  Type *I32 = Type::getInt32Ty(Ctx), *I64 = Type::getInt64Ty(Ctx), *Ptr = PointerType::get(Ctx, 0);
  FunctionCallee Loop = M.getOrInsertFunction(
      "__syscluster_write_read_loop", FunctionType::get(I64, {I32, Ptr, I32, Ptr, I64, I64, I64}, false));
  Value *Args[] = {arg(CW->getArgOperand(0)), arg(CW->getArgOperand(1)), arg(CR->getArgOperand(0)),
                   arg(CR->getArgOperand(1)), Spec ? ConstantInt::get(I64, Spec) : CR->getArgOperand(2),
                   Carried->getIncomingValueForBlock(Pre),
                   ConstantInt::get(I64, MinBlocks)};
  CallInst *Last = B.CreateCall(Loop, Args);
  Last->setDebugLoc(CR->getDebugLoc());
  // The values the loop leaves: its last read's result, and casts of it.
  DenseMap<Value *, Value *> After;
  After[CR] = Last;
  for (Instruction &I : *L)
    if (auto *C = dyn_cast<CastInst>(&I); C && C->getOperand(0) == CR &&
                                          any_of(C->users(), [&](User *U) {
                                            return cast<Instruction>(U)->getParent() != L;
                                          }))
      After[C] = B.CreateCast(C->getOpcode(), Last, C->getType());
  B.CreateBr(Exit);

  if (Spec) {
    // §3.4: the guard sends the profiled count to the multi-call and every
    // other to the loop as written, which stays.
    BasicBlock *G = BasicBlock::Create(Ctx, "syscluster.spec", &F, N);
    IRBuilder<> GB(G);
    GB.SetCurrentDebugLocation(CR->getDebugLoc());
    GB.CreateCondBr(GB.CreateICmpEQ(CR->getArgOperand(2), ConstantInt::get(I64, Spec), "syscluster.spec.count"),
                    N, L);
    Pre->getTerminator()->replaceSuccessorWith(L, G);
    L->replacePhiUsesWith(Pre, G);
    for (PHINode &Phi : Exit->phis()) {
      int Idx = Phi.getBasicBlockIndex(L);
      if (Idx < 0)
        continue;
      Value *V = Phi.getIncomingValue(Idx);
      Phi.addIncoming(After.count(V) ? After[V] : V, N);
    }
    return Last;
  }
  Pre->getTerminator()->replaceSuccessorWith(L, N);
  for (PHINode &Phi : Exit->phis()) {
    int Idx = Phi.getBasicBlockIndex(L);
    if (Idx < 0)
      continue;
    Value *V = Phi.getIncomingValue(Idx);
    if (After.count(V))
      V = After[V];
    Phi.setIncomingValue(Idx, V);
    Phi.setIncomingBlock(Idx, N);
  }
  for (auto &[From, To] : After)
    const_cast<Value *>(From)->replaceUsesWithIf(To, [&](Use &U) {
      return cast<Instruction>(U.getUser())->getParent() != L;
    });
  L->dropAllReferences();
  L->eraseFromParent();
  return Last;
}

} // namespace syscluster
