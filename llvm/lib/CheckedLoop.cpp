//===- CheckedLoop.cpp - the copy loop that checks its writes ---------------===//
//
// `while ((n = read(in, buf, C)) > 0) if (write(out, buf, n) != n) err(...)`
// (or `< 0`, `== -1`, `< n`): clang does not rotate it (the loop has two
// exits), so the read heads the loop and the write's check leaves it for
// the handler:
//
//   H: r = read(in, rbuf, C);  br r > 0, B, exit
//   B: w = write(out, wbuf, r);  br <w rejected>, handler, H
//
// The write's check and the loop's are mutually exclusive (§3.3.2), so the
// loop is the looped multi-call of §3.4 with its write checked (MC_CHECK,
// or MC_CHECK_FULL for `!= n`): __syscluster_write_read_loop_checked
// (llvm/runtime/write_read_loop.c) stops exactly where the program would
// call its handler, which then runs with what it would have seen.  The
// handler need not end the program: `return 1`, a `break` to the code
// after the loop, a `goto` out are as good, as long as no path from it
// comes back into the loop (the multi-call has stopped; the loop is never
// resumed) except through the loop's own entry, which starts it afresh.
//
//===----------------------------------------------------------------------===//
#include "ClusterPass.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/Analysis/CFG.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/Transforms/Utils/SSAUpdater.h"

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

/// Why a loop that the read heads and whose write writes what the read
/// returned (its count the read's result, not a carried phi: the loop is
/// not rotated) is not the shape above, or nothing when it is not such a
/// loop at all (then the other proofs explain the pair).
std::optional<std::string> notCheckedShape(const CallBase *W, const CallBase *R) {
  const BasicBlock *B = W->getParent(), *H = R->getParent();
  if (B == H || throughLossless(W->getArgOperand(2), uint64_t(INT32_MAX), true) != R ||
      !isPotentiallyReachable(B, H) || !isPotentiallyReachable(H, B))
    return std::nullopt;
  if (const BasicBlock *P = B->getSinglePredecessor(); P != H) {
    const Instruction *At = P ? P->getTerminator() : &*B->getFirstNonPHIOrDbg();
    return "the write's block is not entered straight from the read's test (" + describe(At) +
           (P ? ": another test in the loop between the read and the write" : ": the write is reached along more "
                                                                               "than one path") +
           "); the checked copy loop is `while ((n = read(...)) > 0) if (write(..., n) != n) handler`";
  }
  return "the write's block does not go back to the read after its check (" + describe(B->getTerminator()) +
         ": code after the write in the loop); the checked copy loop is `while ((n = read(...)) > 0) if "
         "(write(..., n) != n) handler`";
}

/// Where the handler, entered at T, can come back into the loop {H, B}
/// other than through Pre (the loop's one entry, from which the loop
/// starts afresh with its first read as written): the branch that does, or
/// null when none can — the handler leaves the loop for good (returns,
/// breaks to after it, jumps out, ends the program).
const Instruction *resumesLoop(BasicBlock *T, BasicBlock *H, BasicBlock *B, BasicBlock *Pre) {
  SmallVector<BasicBlock *, 16> Work{T};
  SmallPtrSet<BasicBlock *, 16> Seen{T};
  while (!Work.empty()) {
    BasicBlock *BB = Work.pop_back_val();
    for (BasicBlock *S : successors(BB)) {
      if (S == H || S == B)
        return BB->getTerminator();
      if (S != Pre && Seen.insert(S).second)
        Work.push_back(S);
    }
  }
  return nullptr;
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
  if (Exit == H || Exit == B || Handler == H || Handler == B)
    return Refusal{"loop", "the loop's exits are not one for the read's end and one for the write's check"};
  BasicBlock *Pre;
  auto NoEntry = loopEntry(H, B, Pre);
  // The multi-call stops where the handler runs and is never resumed: the
  // handler may end the program or leave the loop, not go on with it.
  if (const Instruction *Back = resumesLoop(Handler, H, B, NoEntry ? nullptr : Pre))
    return Refusal{"linearity", "the write's check leads to code that goes back into the loop (" +
                                    describe(Back) +
                                    "): the loop would go on after the handler, which a looped multi-call cannot "
                                    "leave and resume; only a handler that leaves the loop for good (return, break, "
                                    "goto out, exit, a noreturn function) is restructured (§3.3.2)"};
  if (NoEntry)
    return NoEntry;
  // The write's count is the read's result, tested > 0: `< n` is `!= n`.
  bool Full, CountPositive = throughLossless(CW->getArgOperand(2), Max, true) == CR;
  if (isFailureExit(BrB, H, W.S, /*AnyHandler=*/true))
    Full = false;
  else if (isShortExit(BrB, H, W.S, DL, CountPositive, /*AnyHandler=*/true))
    Full = true;
  else
    return Refusal{"linearity", "the write's check (" + describe(BrB) +
                                    ") is neither \"the write failed\" (< 0, == -1) nor \"the write was "
                                    "short\" (!= n, < n)"};

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

  // Same values in the same variables: the code after the loop and the
  // handler may use any value of the loop; the multi-call gives back the
  // last read's result and the rejected write's count and result, from
  // which the replacement computes the rest again (pure code).
  // Never a slower program: the gain is the copy fused into copy_file_range.
  if (CW->getArgOperand(1) != CR->getArgOperand(1) && !AA.isMustAlias(CW->getArgOperand(1), CR->getArgOperand(1)))
    return Refusal{"no gain", "the write and the read use different buffers: the multi-call could not "
                              "fuse them into a copy and would only add bookkeeping"};
  Out = CheckedLoop{Pre, H, B, Exit, Handler, Full, Max, Spec};
  return std::nullopt;
}

/// V, a value of the loop, computed again at the end of At from the values
/// Map already gives there (the multi-call's results): pure code cloned.
static Value *recompute(Value *V, BasicBlock *At, DenseMap<Value *, Value *> &Map,
                        function_ref<bool(const Value *)> InLoop) {
  if (!InLoop(V))
    return V;
  if (auto It = Map.find(V); It != Map.end())
    return It->second;
  Instruction *C = cast<Instruction>(V)->clone();
  for (Use &Op : C->operands())
    Op.set(recompute(Op.get(), At, Map, InLoop));
  C->insertBefore(At->getTerminator());
  Map[V] = C;
  return C;
}

/// The replacement:
///   Pre: (the loop's loads, moved here)
///   H:   r = read(...);  br r > 0, N, exit                    (the first read, as it was)
///   N:   k = __syscluster_write_read_loop_checked(out, wbuf, in, rbuf, C, r, min, full, &w)
///        br k > 0, F, exit
///   F:   w' = load w;  br handler                             (the write its check rejects)
/// Every use of a loop value outside the loop (the code after it, the
/// handler, the phis of either — the handler may be the loop's exit, a
/// `break`) gets it again where it is now defined: from H's first read,
/// from N (k as the last read), from F (k as the rejected write's count,
/// w' as its result), through phis where these meet (SSAUpdater); pure
/// code of the loop is computed again from them.  Specialized (§3.4), the
/// loop stays beside the multi-call for the other counts, and its own
/// values join those.
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

  // The uses of the loop's values outside it, found before the blocks change.
  auto inLoop = [&](const Value *V) {
    auto *I = dyn_cast<Instruction>(V);
    return I && (I->getParent() == L.H || I->getParent() == L.B);
  };
  MapVector<Instruction *, SmallVector<Use *, 4>> Outside;
  for (BasicBlock *BB : {L.H, L.B})
    for (Instruction &I : *BB)
      for (Use &U : I.uses())
        if (!inLoop(U.getUser()))
          Outside[&I].push_back(&U);

  BasicBlock *N = BasicBlock::Create(Ctx, "syscluster.copy", &F, L.B);
  BasicBlock *Fail = BasicBlock::Create(Ctx, "syscluster.copy.rejected", &F, L.B);
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
  B.CreateCondBr(B.CreateICmpSGT(K, ConstantInt::get(I64, 0), "syscluster.copy.rejected"), Fail, L.Exit);
  IRBuilder<> FB(Fail);
  FB.SetCurrentDebugLocation(CW->getDebugLoc());
  LoadInst *WV = FB.CreateLoad(I64, WRes, "syscluster.copy.write");
  FB.CreateBr(L.Handler);

  // The edges into the exit and the handler: N's into the exit as H's
  // (the read that ends the loop), F's into the handler as B's.
  auto addEdge = [&](BasicBlock *To, BasicBlock *As, BasicBlock *From, bool Replace) {
    for (PHINode &Phi : To->phis()) {
      if (Replace) {
        Phi.replaceIncomingBlockWith(As, From);
        continue;
      }
      Phi.addIncoming(Phi.getIncomingValueForBlock(As), From);
      Use &U = Phi.getOperandUse(Phi.getNumIncomingValues() - 1);
      if (inLoop(U.get()))
        Outside[cast<Instruction>(U.get())].push_back(&U);
    }
  };
  addEdge(L.Exit, L.H, N, false);
  addEdge(L.Handler, L.B, Fail, !L.Spec);
  if (L.Spec) {
    // §3.4: the guard sends the profiled count to the multi-call, every
    // other to the loop as written.
    BasicBlock *G = BasicBlock::Create(Ctx, "syscluster.spec", &F, N);
    IRBuilder<> GB(G);
    GB.SetCurrentDebugLocation(CR->getDebugLoc());
    GB.CreateCondBr(GB.CreateICmpEQ(CR->getArgOperand(2), Count, "syscluster.spec.count"), N, L.B);
    L.H->getTerminator()->replaceSuccessorWith(L.B, G);
  } else {
    // B leaves the CFG; its values keep their uses until they are rewritten.
    L.H->getTerminator()->replaceSuccessorWith(L.B, N);
    L.B->getTerminator()->eraseFromParent();
    IRBuilder<>(L.B).CreateUnreachable();
  }

  // The loop's pure values, computed again from the multi-call's results.
  DenseMap<Value *, Value *> AtN{{CR, K}}, AtF{{CR, K}, {CW, WV}};
  auto fromN = [&](Value *V) { return recompute(V, N, AtN, inLoop); };
  auto fromF = [&](Value *V) { return recompute(V, Fail, AtF, inLoop); };
  for (auto &[V, Uses] : Outside) {
    SSAUpdater SSA;
    SSA.Initialize(V->getType(), V->getName());
    if (V->getParent() == L.H) {
      SSA.AddAvailableValue(L.H, V);
      SSA.AddAvailableValue(N, fromN(V));
    } else if (L.Spec) {
      SSA.AddAvailableValue(L.B, V);
    }
    SSA.AddAvailableValue(Fail, fromF(V));
    for (Use *U : Uses)
      SSA.RewriteUse(*U);
  }
  // Clones nothing came to use.
  for (BasicBlock *BB : {N, Fail})
    for (Instruction &I : make_early_inc_range(reverse(*BB)))
      if (&I != K && &I != WV && !I.isTerminator() && I.use_empty() && !I.mayHaveSideEffects())
        I.eraseFromParent();
  if (!L.Spec) {
    L.B->dropAllReferences();
    L.B->eraseFromParent();
  }
  return K;
}

bool ClusterPass::applyCheckedCopyLoop(const Site &W, const Site &R, const PlanCluster &C, const std::string &Name,
                                       uint64_t Blocks) {
  std::string What = "the loop of " + describe(R) + " -> " + describe(W) + " (its write checked)";
  if (!checkedShape(W.S.Call, R.S.Call)) {
    // Not this shape: the pair's own proofs follow; say first why the
    // loop is not the checked copy loop, where it nearly is.
    if (auto Why = notCheckedShape(W.S.Call, R.S.Call))
      missed(W.S.Call, "NotReplaced", Name + ": " + What + " is left as it is: loop: " + *Why);
    return false;
  }
  Function &F = *W.S.Call->getFunction();
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
