//===- CheckedLoop.cpp - the copy loop that checks its writes ---------------===//
//
// `while ((n = read(in, buf, C)) > 0) if (write(out, buf, n) != n) err(...)`
// (or `< 0`, `== -1`, `< n`, to any handler that does not return): clang
// does not rotate it (the loop has two exits), so the read heads the loop
// and the write's check leaves it for the handler:
//
//   H: r = read(in, rbuf, C);  br r > 0, B, exit
//   B: w = write(out, wbuf, r);  br <w rejected>, handler, H
//
// The write's check and the loop's are mutually exclusive (§3.3.2), so the
// loop is the looped multi-call of §3.4 with its write checked (MC_CHECK,
// or MC_CHECK_FULL for `!= n`): __syscluster_write_read_loop_checked
// (llvm/runtime/write_read_loop.c) stops exactly where the program would
// call its handler, which then runs with what it would have seen.
//
//===----------------------------------------------------------------------===//
#include "ClusterPass.h"

#include "llvm/IR/Dominators.h"
#include "llvm/IR/IRBuilder.h"

#include <functional>

namespace syscluster {

namespace {
/// The loop as checkCheckedCopyLoop found it.
struct CheckedLoop {
  BasicBlock *Pre = nullptr, *H = nullptr, *B = nullptr, *Exit = nullptr, *Handler = nullptr;
  bool Full = false; // the program tests `!= n` (or `< n`): a short write calls the handler too
  uint64_t Count = 0;
  uint64_t Spec = 0; // §3.4: the count is a variable, specialized for the profiled value
};

/// Whether W's block, entered only from R's, goes back to it or elsewhere
/// (a test of the write): the shape of a copy loop not rotated, the read at
/// its head, that checks its writes.
bool checkedShape(const CallBase *W, const CallBase *R) {
  const BasicBlock *B = W->getParent(), *H = R->getParent();
  auto *Br = dyn_cast<BranchInst>(B->getTerminator());
  return B != H && B->getSinglePredecessor() == H && Br && Br->isConditional() &&
         is_contained(successors(B), H) && is_contained(successors(H), B);
}
} // namespace

/// Beyond the five conditions: what replacing the loop needs.  The
/// handler may read anything the program had at that point: `n` (the
/// runtime hands back the rejected write's count), the write's result,
/// `errno` (as that write left it), the buffer (libmulticall puts back what
/// the reads would have left in it, docs/MULTICALL.md) and the files'
/// offsets; so only where the values come from is checked here.
static std::optional<Refusal> checkCheckedCopyLoop(const Site &W, const Site &R, const PlanCluster &C, Module &M,
                                                   FunctionAnalysisManager &FAM, CheckedLoop &Out) {
  CallBase *CW = W.S.Call, *CR = R.S.Call;
  Function &F = *CW->getFunction();
  const DataLayout &DL = M.getDataLayout();
  AAResults &AA = FAM.getResult<AAManager>(F);
  DominatorTree &DT = FAM.getResult<DominatorTreeAnalysis>(F);
  BasicBlock *H = CR->getParent(), *B = CW->getParent();

  if (auto Why = copyCallsUnderstood(W, R))
    return Why;
  uint64_t Max, Spec;
  if (auto Why = loopReadCount(R, C, {H, B}, Max, Spec))
    return Why;

  // The loop: H tests the read > 0 towards B, B tests the write towards
  // the handler and goes back to H otherwise.
  auto *BrH = dyn_cast<BranchInst>(H->getTerminator());
  if (!BrH || !continuesWhilePositive(BrH, B, CR, Max))
    return Refusal{"loop", "the loop does not go on exactly while the read returns more than 0"};
  BasicBlock *Exit = BrH->getSuccessor(0) == B ? BrH->getSuccessor(1) : BrH->getSuccessor(0);
  auto *BrB = dyn_cast<BranchInst>(B->getTerminator());
  if (!BrB || !BrB->isConditional())
    return Refusal{"IR not understood", "the write's block does not end in a conditional branch"};
  BasicBlock *Handler = BrB->getSuccessor(0) == H ? BrB->getSuccessor(1) : BrB->getSuccessor(0);
  if (Exit == H || Exit == B || Handler == H || Handler == B || Handler == Exit)
    return Refusal{"loop", "the loop's exits are not one for the read's end and one for the write's check"};
  if (!doesNotReturn(Handler))
    return Refusal{"linearity", "the write's check leads to code that returns (" +
                                    describe(&*Handler->getFirstNonPHIOrDbg()) +
                                    "): the loop could go on after it, which a looped multi-call cannot "
                                    "leave and resume; only a handler that does not return (exit, err, abort, "
                                    "a noreturn function) is restructured (§3.3.2)"};
  // The write's count is the read's result, tested > 0: `< n` is `!= n`.
  bool Full, CountPositive = throughLossless(CW->getArgOperand(2), Max, true) == CR;
  if (isFailureExit(BrB, H, W.S))
    Full = false;
  else if (isShortExit(BrB, H, W.S, DL, CountPositive))
    Full = true;
  else
    return Refusal{"linearity", "the write's check (" + describe(BrB) +
                                    ") is neither \"the write failed\" (< 0, == -1) nor \"the write was "
                                    "short\" (!= n, < n)"};
  if (Handler->getSinglePredecessor() != B)
    return Refusal{"safety", "the handler is reached from elsewhere too"};
  BasicBlock *Pre;
  if (auto Why = loopEntry(H, B, Pre))
    return Why;

  // The body: the calls, pure code, and loads that neither call may write
  // (moved in front of the loop, §3.3.1); nothing carried around the loop.
  for (BasicBlock *BB : {H, B})
    for (Instruction &I : *BB) {
      if (&I == CW || &I == CR || I.isTerminator() || I.isDebugOrPseudoInst())
        continue;
      if (isa<PHINode>(I))
        return Refusal{"safety", "a value is carried around the loop (" + describe(&I) +
                                     "): the multi-call carries only the read's result"};
      if (auto Why = copyLoopInstruction(I, {H, B}, R, Pre, FAM))
        return Why;
    }

  // Argument safety: descriptors and buffers the same in every iteration,
  // the write's count exactly this iteration's read result.
  for (unsigned K : {0u, 1u})
    for (CallBase *CB : {CW, CR})
      if (auto *I = dyn_cast<Instruction>(CB->getArgOperand(K));
          I && (I->getParent() == H || I->getParent() == B) && !isa<LoadInst>(I))
        return Refusal{"argument safety",
                       "argument " + Twine(K + 1).str() + " of " + describe(CB) + " is computed in the loop"};
  if (throughLossless(CW->getArgOperand(2), Max, true) != CR)
    return Refusal{"argument safety", "the write's count is not the read's result"};

  // Same values in the same variables: after the loop only the read's
  // result (and what is computed from it) is used; in the handler, also the
  // write's result.  The multi-call gives back both.
  for (BasicBlock *BB : {H, B})
    for (Instruction &I : *BB)
      for (Use &U : I.uses()) {
        auto *UI = cast<Instruction>(U.getUser());
        BasicBlock *UB = UI->getParent();
        if (UB == H || UB == B || DT.dominates(Handler, UB))
          continue;
        // After the loop: the read's values only (a phi of the exit takes
        // them from H).
        auto *Phi = dyn_cast<PHINode>(UI);
        if (BB == H && (DT.dominates(Exit, UB) || (Phi && UB == Exit && Phi->getIncomingBlock(U) == H)))
          continue;
        return Refusal{"safety", describe(&I) + " computed in the loop is used after it (" + describe(UI) + ")"};
      }
  // Never a slower program: the gain is the copy fused into copy_file_range.
  if (CW->getArgOperand(1) != CR->getArgOperand(1) && !AA.isMustAlias(CW->getArgOperand(1), CR->getArgOperand(1)))
    return Refusal{"no gain", "the write and the read use different buffers: the multi-call could not "
                              "fuse them into a copy and would only add bookkeeping"};
  Out = CheckedLoop{Pre, H, B, Exit, Handler, Full, Max, Spec};
  return std::nullopt;
}

/// The replacement:
///   Pre: (the loop's loads, moved here)
///   H:   r = read(...);  br r > 0, N, X                       (the first read, as it was)
///   N:   k = __syscluster_write_read_loop_checked(out, wbuf, in, rbuf, C, r, min, full, &w)
///        br k > 0, F, X
///   F:   (the write's result, the body's values the handler uses, from k and w);  br handler
///   X:   phi [r, H], [k, N] (and what the code after the loop uses of them);  br exit
static Instruction *replaceCheckedCopyLoop(const Site &W, const Site &R, const CheckedLoop &L, Module &M,
                                           unsigned long MinBlocks) {
  CallBase *CW = W.S.Call, *CR = R.S.Call;
  Function &F = *L.H->getParent();
  LLVMContext &Ctx = M.getContext();
  Type *I32 = Type::getInt32Ty(Ctx), *I64 = Type::getInt64Ty(Ctx), *Ptr = PointerType::get(Ctx, 0);

  // Loads proved independent of both calls move in front of the loop.
  SmallVector<LoadInst *, 4> Loads;
  for (BasicBlock *BB : {L.H, L.B})
    for (Instruction &I : *BB)
      if (auto *LI = dyn_cast<LoadInst>(&I))
        Loads.push_back(LI);
  for (LoadInst *LI : Loads)
    LI->moveBefore(L.Pre->getTerminator());

  // Which uses lie where, decided before the blocks change: in the handler
  // (or code it dominates), or after the loop.
  SmallVector<Use *, 8> HandlerUses, ExitUses;
  {
    DominatorTree DT(F);
    for (BasicBlock *BB : {L.H, L.B})
      for (Instruction &I : *BB)
        for (Use &U : I.uses()) {
          BasicBlock *UB = cast<Instruction>(U.getUser())->getParent();
          if (UB == L.H || UB == L.B)
            continue;
          (DT.dominates(L.Handler, UB) ? HandlerUses : ExitUses).push_back(&U);
        }
  }

  BasicBlock *N = BasicBlock::Create(Ctx, "syscluster.copy", &F, L.B);
  BasicBlock *Fail = BasicBlock::Create(Ctx, "syscluster.copy.rejected", &F, L.B);
  BasicBlock *X = BasicBlock::Create(Ctx, "syscluster.copy.end", &F, L.B);
  IRBuilder<> EB(&F.getEntryBlock(), F.getEntryBlock().getFirstInsertionPt());
  AllocaInst *WRes = EB.CreateAlloca(I64, nullptr, "syscluster.wres");

  IRBuilder<> B(N);
  B.SetCurrentDebugLocation(CW->getDebugLoc());
  FunctionCallee Loop = M.getOrInsertFunction(
      "__syscluster_write_read_loop_checked",
      FunctionType::get(I64, {I32, Ptr, I32, Ptr, I64, I64, I64, I32, Ptr}, false));
  Value *Count = L.Spec ? ConstantInt::get(I64, L.Spec) : CR->getArgOperand(2);
  CallInst *K = B.CreateCall(Loop, {CW->getArgOperand(0), CW->getArgOperand(1), CR->getArgOperand(0),
                                    CR->getArgOperand(1), Count, CR, ConstantInt::get(I64, MinBlocks),
                                    ConstantInt::get(I32, L.Full), WRes});
  K->setDebugLoc(CR->getDebugLoc());
  B.CreateCondBr(B.CreateICmpSGT(K, ConstantInt::get(I64, 0), "syscluster.copy.rejected"), Fail, X);

  // The body's pure values, computed again from the multi-call's results
  // where the code after the loop or the handler uses them.
  auto cloneFrom = [&](IRBuilder<> &At, DenseMap<Value *, Value *> &Map) {
    std::function<Value *(Value *)> get = [&](Value *V) -> Value * {
      auto *I = dyn_cast<Instruction>(V);
      if (!I || (I->getParent() != L.H && I->getParent() != L.B))
        return V;
      if (auto It = Map.find(V); It != Map.end())
        return It->second;
      Instruction *C = I->clone();
      for (Use &Op : C->operands())
        Op.set(get(Op.get()));
      At.Insert(C);
      Map[V] = C;
      return C;
    };
    return get;
  };
  DenseMap<Value *, Value *> AtN{{CR, K}};
  IRBuilder<> NB(N->getTerminator());
  auto fromN = cloneFrom(NB, AtN);

  IRBuilder<> FB(Fail);
  FB.SetCurrentDebugLocation(CW->getDebugLoc());
  DenseMap<Value *, Value *> AtF{{CR, K}};
  AtF[CW] = FB.CreateLoad(I64, WRes, "syscluster.copy.write");
  auto fromF = cloneFrom(FB, AtF);
  if (!L.Spec) {
    for (Use *U : HandlerUses)
      U->set(fromF(U->get()));
    FB.CreateBr(L.Handler);
    for (PHINode &Phi : L.Handler->phis())
      Phi.replaceIncomingBlockWith(L.B, Fail);
  } else {
    // The loop stays for the other counts: the handler is entered from it
    // and from the multi-call, and takes the loop's values from either.
    SmallVector<PHINode *, 4> Phis;
    for (PHINode &Phi : L.Handler->phis())
      Phis.push_back(&Phi);
    for (PHINode *Phi : Phis)
      Phi->addIncoming(fromF(Phi->getIncomingValueForBlock(L.B)), Fail);
    DenseMap<Value *, PHINode *> Both;
    for (Use *U : HandlerUses) {
      if (auto *P = dyn_cast<PHINode>(U->getUser()); P && P->getParent() == L.Handler)
        continue;
      Value *V = U->get();
      if (!Both.count(V)) {
        PHINode *P = PHINode::Create(V->getType(), 2, V->getName() + ".syscluster", L.Handler->getFirstNonPHI());
        P->addIncoming(V, L.B);
        P->addIncoming(fromF(V), Fail);
        Both[V] = P;
      }
      U->set(Both[V]);
    }
    FB.CreateBr(L.Handler);
  }

  // After the loop: the first read's values from H, the last read's from N.
  IRBuilder<> XB(X);
  DenseMap<Value *, PHINode *> Joined;
  for (Use *U : ExitUses) {
    Value *V = U->get();
    if (!Joined.count(V)) {
      PHINode *P = PHINode::Create(V->getType(), 2, V->getName() + ".syscluster", X);
      P->addIncoming(V, L.H);
      P->addIncoming(fromN(V), N);
      Joined[V] = P;
    }
    U->set(Joined[V]);
  }
  XB.SetInsertPoint(X);
  XB.CreateBr(L.Exit);
  for (PHINode &Phi : L.Exit->phis())
    Phi.replaceIncomingBlockWith(L.H, X);
  L.H->getTerminator()->replaceSuccessorWith(L.Exit, X);
  if (L.Spec) {
    // §3.4: the guard sends the profiled count to the multi-call, every
    // other to the loop as written.
    BasicBlock *G = BasicBlock::Create(Ctx, "syscluster.spec", &F, N);
    IRBuilder<> GB(G);
    GB.SetCurrentDebugLocation(CR->getDebugLoc());
    GB.CreateCondBr(GB.CreateICmpEQ(CR->getArgOperand(2), Count, "syscluster.spec.count"), N, L.B);
    L.H->getTerminator()->replaceSuccessorWith(L.B, G);
    L.B->replacePhiUsesWith(L.H, G);
    return K;
  }
  L.H->getTerminator()->replaceSuccessorWith(L.B, N);
  L.B->dropAllReferences();
  L.B->eraseFromParent();
  return K;
}

bool ClusterPass::applyCheckedCopyLoop(const Site &W, const Site &R, const PlanCluster &C, const std::string &Name,
                                       uint64_t Blocks) {
  if (!checkedShape(W.S.Call, R.S.Call))
    return false;
  Function &F = *W.S.Call->getFunction();
  std::string What = "the loop of " + describe(R) + " -> " + describe(W) + " (its write checked)";
  CheckedLoop L;
  if (auto Why = checkCheckedCopyLoop(W, R, C, M, FAM, L)) {
    missed(W.S.Call, "NotReplaced", Name + ": " + What + " is left as it is: " + Why->Condition + ": " + Why->Detail);
    return true;
  }
  unsigned long MinBlocks = 0;
  std::string Estimate;
  if (auto Why = checkGain(R, L.Spec, Blocks, MinBlocks, Estimate)) {
    missed(W.S.Call, "NoGain", Name + ": " + What + " is left as it is: " + Why->Condition + ": " + Why->Detail);
    return true;
  }
  std::string Msg =
      Name + ": " + What +
      " became one looped multi-call (libmulticall mc_run_loop, auto backend: copy_file_range between regular "
      "files, the calls as they are elsewhere); the write's check (" +
      (L.Full ? "a short write or a failure: MC_CHECK_FULL" : "a failure: MC_CHECK") +
      ") and the loop's are mutually exclusive (§3.3.2): the multi-call stops at the write the program's check "
      "rejects and its handler runs with that write's count, result and errno; " +
      (L.Spec ? "specialized (§3.4) for the read's count " + std::to_string(L.Spec) +
                    ", the plan's value profile: a guard runs the loop as written for any other count; "
              : std::string()) +
      Estimate;
  const CallBase *At = W.S.Call;
  ore(F).emit([&] { return OptimizationRemark(PassName, "Clustered", At) << Msg; });
  Instruction *MC = replaceCheckedCopyLoop(W, R, L, M, MinBlocks);
  Replaced[W.S.Call] = {MC, C.Id};
  Replaced[R.S.Call] = {MC, C.Id};
  Changed.insert(&F);
  FAM.invalidate(F, PreservedAnalyses::none());
  return true;
}

} // namespace syscluster
