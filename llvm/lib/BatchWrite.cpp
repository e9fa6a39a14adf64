//===- BatchWrite.cpp - a loop of one write → writev batches ---------------===//
//
// `for (x = 0; x < k; x++) if (write(fd, buf, n) != n) die(...)` (or
// `< n`, `< 0`, `== -1`, to a handler that does not return, or no check):
// the same block written k times, one crossing each (dosfstools'
// mkfs.fat: 4 134 writes of 512 B for a 1 GiB FAT32 image).  The loop is
// kept; in front of it, __syscluster_batch_write (llvm/runtime/
// batch_write.c) writes its iterations with writev, up to IOV_MAX blocks per
// call, then the loop resumes at the first iteration not done:
//
//   Pre:    r = __syscluster_batch_write(fd, buf, n, trip, min, &done)
//           br done == trip, AllDone, Resume
//   Resume: (every induction variable at iteration done)   br H
//   H:      pend = phi [r, Resume], [-1, latch]
//           w = pend >= 0 ? pend : write(fd, buf, n)       ; the check as written
//   AllDone: br Exit                                       ; the exit values at the last iteration
//
// A block written in part is a short write of iteration done: its count
// is the result that iteration's check sees (and its handler, if it
// rejects it).  A failed batch, or one that stopped on a block boundary,
// leaves the real write of iteration done to the loop, with the real errno
// and handler.  What it proves on the IR: the loop is innermost, entered
// from one preheader, leaves it at its latch (a trip count scalar
// evolution computes) or at the write's check into a block that does not
// return; nothing in it has side effects but the write (no store: the
// buffer is not written in the loop; no other call); the descriptor,
// buffer and count are the same in every iteration (defined before the
// loop, or loaded from memory nothing in the loop writes); every phi of
// its header is an induction variable or one of those values.  And that
// it gains on the host (checkBatchGain: advise's batch-writes model).
//
//===----------------------------------------------------------------------===//
#include "ClusterPass.h"

#include "llvm/Analysis/Loads.h"
#include "llvm/Analysis/LoopInfo.h"
#include "llvm/Analysis/ScalarEvolution.h"
#include "llvm/Analysis/ScalarEvolutionExpressions.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Transforms/Utils/BasicBlockUtils.h"
#include "llvm/Transforms/Utils/ScalarEvolutionExpander.h"

namespace syscluster {

static constexpr const char *BatchWriteFn = "__syscluster_batch_write";

namespace {
struct BatchLoop {
  Loop *L = nullptr;
  // Entry: the block outside the loop that enters it; Pre: where the batch
  // is made (Entry, or a block on the edge from Entry to H when Entry
  // branches elsewhere too: clang's guard of a rotated loop).
  BasicBlock *Entry = nullptr, *Pre = nullptr, *H = nullptr, *Latch = nullptr, *Exit = nullptr;
  BasicBlock *Handler = nullptr;   // where the write's check leaves the loop, if it is checked
  const SCEV *Backedges = nullptr; // times the latch goes back: the trip count less one
  std::string Check;               // how the write is checked, in words
  std::string Bound;               // the bound read once in front of the loop, in words, if one was
  LoadInst *Hoisted = nullptr;     // that load, moved from before HoistedFrom
  Instruction *HoistedFrom = nullptr;
};

/// The load of the loop's bound in its latch's test (`x < reserved_sectors`,
/// a global read in every iteration), where it can be read once before
/// the loop instead: memory nothing in the loop writes (the loop has no
/// store, the write writes no user memory), at an address from before the
/// loop that may be read there (dereferenceable).
LoadInst *hoistableBound(const BatchLoop &B, const SyscallSite &W, AAResults &AA, DominatorTree &DT) {
  auto *Br = dyn_cast<BranchInst>(B.Latch->getTerminator());
  auto *Cmp = Br && Br->isConditional() ? dyn_cast<ICmpInst>(Br->getCondition()) : nullptr;
  if (!Cmp)
    return nullptr;
  for (Value *Op : Cmp->operands()) {
    auto *LI = dyn_cast<LoadInst>(Op);
    auto *Ptr = LI ? dyn_cast<Instruction>(LI->getPointerOperand()) : nullptr;
    if (!LI || !B.L->contains(LI) || !LI->isSimple() || isErrno(LI->getPointerOperand()) ||
        (Ptr && B.L->contains(Ptr)) || mayWrite(W, MemoryLocation::get(LI), AA) ||
        !isDereferenceableAndAlignedPointer(LI->getPointerOperand(), LI->getType(), LI->getAlign(),
                                            LI->getDataLayout(), B.Entry->getTerminator(), nullptr, &DT))
      continue;
    return LI;
  }
  return nullptr;
}

/// Whether the value V of the loop is the same in every iteration, and how
/// to have it at the end of Pre: a value from before the loop, a cast of
/// one, a load of memory nothing in the loop writes (made again at Pre's
/// end), or a header phi of such a load and of the same load made in Pre
/// (what clang's partial redundancy elimination leaves of a global read in
/// every iteration).  Materializes it at Pre's end (At) when At is given.
Value *sameEveryIteration(Value *V, const BatchLoop &B, const SyscallSite &W, AAResults &AA, IRBuilder<> *At,
                          unsigned Depth = 0) {
  auto *I = dyn_cast<Instruction>(V);
  if (!I || !B.L->contains(I))
    return V;
  if (Depth > 4)
    return nullptr;
  if (auto *C = dyn_cast<CastInst>(I)) {
    Value *Op = sameEveryIteration(C->getOperand(0), B, W, AA, At, Depth + 1);
    if (!Op)
      return nullptr;
    return At ? At->CreateCast(C->getOpcode(), Op, C->getType()) : V;
  }
  if (auto *LI = dyn_cast<LoadInst>(I)) {
    if (!LI->isSimple() || isErrno(LI->getPointerOperand()) || LI->getParent() != B.H)
      return nullptr;
    Value *Ptr = sameEveryIteration(LI->getPointerOperand(), B, W, AA, nullptr, Depth + 1);
    if (Ptr != LI->getPointerOperand() || mayWrite(W, MemoryLocation::get(LI), AA))
      return nullptr;
    return At ? At->CreateAlignedLoad(LI->getType(), Ptr, LI->getAlign()) : V;
  }
  if (auto *P = dyn_cast<PHINode>(I); P && P->getParent() == B.H && P->getNumIncomingValues() == 2) {
    auto *Before = dyn_cast<LoadInst>(P->getIncomingValueForBlock(B.Pre));
    auto *Again = dyn_cast<LoadInst>(P->getIncomingValueForBlock(B.Latch));
    if (!Before || !Again || Before->getParent() != B.Entry || !Before->isSimple() || !Again->isSimple() ||
        Before->getPointerOperand() != Again->getPointerOperand() || Before->getType() != Again->getType() ||
        B.L->contains(dyn_cast<Instruction>(Before->getPointerOperand())) ||
        mayWrite(W, MemoryLocation::get(Again), AA))
      return nullptr;
    // Nothing between the load in Pre and the loop writes memory.
    for (auto It = std::next(Before->getIterator()); It != B.Entry->end(); ++It)
      if (It->mayWriteToMemory())
        return nullptr;
    return Before;
  }
  return nullptr;
}

/// How the write's block leaves the loop: nowhere (unchecked), or a check
/// that a full write passes into a handler that does not return.
std::optional<Refusal> writeCheck(const SyscallSite &W, BatchLoop &B, const DataLayout &DL) {
  BasicBlock *WB = W.Call->getParent();
  // A test of the write's result that leaves the loop for code that goes on.
  if (auto *Br = dyn_cast<BranchInst>(WB->getTerminator()); Br && Br->isConditional())
    if (auto *Cmp = dyn_cast<ICmpInst>(Br->getCondition()); Cmp && is_contained(Cmp->operands(), W.Call))
      for (BasicBlock *Out : successors(WB))
        if (!B.L->contains(Out) && !doesNotReturn(Out))
          return Refusal{"safety", "the write's check leads to code that returns (" + at(Out->getFirstNonPHI()) +
                                       "): a handler that does not return is needed (exit, abort, err, a noreturn "
                                       "function)"};
  SmallVector<BasicBlock *, 4> Exiting;
  B.L->getExitingBlocks(Exiting);
  for (BasicBlock *E : Exiting) {
    if (E == B.Latch)
      continue;
    if (E != WB)
      return Refusal{"safety", "the loop has another exit than its latch and the write's check (" +
                                   at(E->getTerminator()) + ")"};
    auto *Br = dyn_cast<BranchInst>(E->getTerminator());
    BasicBlock *Next = nullptr, *Out = nullptr;
    if (Br && Br->isConditional()) {
      bool In0 = B.L->contains(Br->getSuccessor(0));
      Next = Br->getSuccessor(In0 ? 0 : 1);
      Out = Br->getSuccessor(In0 ? 1 : 0);
    }
    if (!Next || B.L->contains(Out))
      return Refusal{"safety", "the write's block leaves the loop in a way not understood"};
    if (!doesNotReturn(Out))
      return Refusal{"safety", "the write's check leads to code that returns (" + at(Out->getFirstNonPHI()) +
                                   "): a handler that does not return is needed (exit, abort, err, a noreturn "
                                   "function)"};
    B.Handler = Out;
    if (isShortExit(Br, Next, W, DL))
      B.Check = "checked: a short write or a failure calls its handler";
    else if (isFailureExit(Br, Next, W))
      B.Check = "checked: a failure calls its handler";
    else
      return Refusal{"safety", "the write's check is not one a full write passes (`!= n`, `< n`, `< 0`, `== -1`)"};
  }
  if (B.Check.empty())
    B.Check = "unchecked";
  return std::nullopt;
}

std::optional<Refusal> checkBatchLoop(const Site &S, FunctionAnalysisManager &FAM, BatchLoop &B) {
  CallBase *CW = S.S.Call;
  Function &F = *CW->getFunction();
  const DataLayout &DL = F.getParent()->getDataLayout();
  if (!S.S.Direct || S.S.FirstArg != 0 || CW->arg_size() != 3 || !CW->getType()->isIntegerTy(64) ||
      !CW->getArgOperand(0)->getType()->isIntegerTy(32) || !CW->getArgOperand(2)->getType()->isIntegerTy(64))
    return Refusal{"safety", "the call is not libc's write(int, const void *, size_t) returning ssize_t"};
  LoopInfo &LI = FAM.getResult<LoopAnalysis>(F);
  B.L = LI.getLoopFor(CW->getParent());
  if (!B.L)
    return Refusal{"linearity", "the write is not in a loop"};
  if (!B.L->isInnermost())
    return Refusal{"linearity", "the write's loop holds another loop"};
  B.H = B.L->getHeader();
  B.Pre = B.Entry = B.L->getLoopPredecessor();
  B.Latch = B.L->getLoopLatch();
  B.Exit = B.Latch ? B.Latch->getTerminator()->getSuccessor(0) : nullptr;
  if (B.Exit && B.L->contains(B.Exit))
    B.Exit = B.Latch->getTerminator()->getNumSuccessors() == 2 ? B.Latch->getTerminator()->getSuccessor(1) : nullptr;
  if (!B.Pre || !B.Latch || !B.Exit || !isa<BranchInst>(B.Pre->getTerminator()) || !B.L->isLoopExiting(B.Latch))
    return Refusal{"dominance", "the loop has no single entry, or does not end at its latch (not rotated)"};
  DominatorTree &DT = FAM.getResult<DominatorTreeAnalysis>(F);
  if (!DT.dominates(CW->getParent(), B.Latch))
    return Refusal{"linearity", "the write is not made in every iteration"};
  AAResults &AA = FAM.getResult<AAManager>(F);
  // Nothing else with side effects: no store (the buffer and the
  // arguments stay), no other call.
  for (BasicBlock *BB : B.L->blocks())
    for (Instruction &I : *BB) {
      if (&I == CW || isa<DbgInfoIntrinsic>(&I))
        continue;
      if (auto *St = dyn_cast<StoreInst>(&I))
        return Refusal{"safety", "the loop writes memory (" + storedName(St) + " at " + at(St) +
                                     "): the buffer or the write's arguments may change between the writes"};
      if (isa<CallBase>(&I))
        return Refusal{"safety", "the loop makes another call (" + describe(&I) + ")"};
      if (I.mayHaveSideEffects())
        return Refusal{"safety", describe(&I) + " has side effects"};
    }
  if (auto Why = writeCheck(S.S, B, DL))
    return Why;
  static const char *const What[] = {"descriptor", "buffer", "count"};
  for (unsigned I = 0; I < 3; ++I)
    if (!sameEveryIteration(CW->getArgOperand(I), B, S.S, AA, nullptr))
      return Refusal{"argument safety", std::string("the write's ") + What[I] +
                                            " is not the same in every iteration (or comes from memory the "
                                            "loop may write)"};
  ScalarEvolution &SE = FAM.getResult<ScalarEvolutionAnalysis>(F);
  for (PHINode &P : B.H->phis()) {
    auto *AR = dyn_cast<SCEVAddRecExpr>(SE.getSCEV(&P));
    if (AR && AR->getLoop() == B.L && AR->isAffine() && P.getType()->isIntegerTy())
      continue;
    if (sameEveryIteration(&P, B, S.S, AA, nullptr))
      continue;
    return Refusal{"linearity", "a value carried from one iteration to the next (" + describe(&P) +
                                    ") is neither an induction variable nor the same in every iteration"};
  }
  // The loop's values reach the code after it only through the phis of
  // its exit (computed below for a loop the batches did whole), or on the
  // handler's way, which goes through the loop as before.
  for (BasicBlock *BB : B.L->blocks())
    for (Instruction &I : *BB)
      for (const Use &U : I.uses()) {
        auto *UI = cast<Instruction>(U.getUser());
        auto *PN = dyn_cast<PHINode>(UI);
        BasicBlock *UB = PN ? PN->getIncomingBlock(U) : UI->getParent();
        if (B.L->contains(UB) || (PN && PN->getParent() == B.Exit && UB == B.Latch) ||
            (B.Handler && DT.dominates(B.Handler, UB)))
          continue;
        return Refusal{"linearity", "a value of the loop (" + describe(&I) + ") is used after it by " +
                                        describe(UI) + ", not through the loop's exit"};
      }
  for (PHINode &P : B.Exit->phis()) {
    Value *V = P.getIncomingValueForBlock(B.Latch);
    auto *I = dyn_cast<Instruction>(V);
    if (!I || !B.L->contains(I))
      continue;
    auto *AR = dyn_cast<SCEVAddRecExpr>(SE.getSCEV(V));
    if (!AR || AR->getLoop() != B.L || !AR->isAffine() || !V->getType()->isIntegerTy())
      return Refusal{"linearity", "the loop leaves a value (" + describe(I) +
                                      ") that is not an induction variable to the code after it"};
  }
  // The trip count, last: a bound the loop reads in every iteration from
  // memory it does not write is read once in front of it (LICM), and put
  // back if scalar evolution still cannot count the iterations.
  auto Count = [&]() -> const SCEV * {
    const SCEV *C = FAM.getResult<ScalarEvolutionAnalysis>(F).getExitCount(B.L, B.Latch);
    return isa<SCEVCouldNotCompute>(C) || !C->getType()->isIntegerTy() || C->getType()->getIntegerBitWidth() > 64
               ? nullptr
               : C;
  };
  auto ForgetCounts = [&] {
    PreservedAnalyses PA = PreservedAnalyses::all();
    PA.abandon<ScalarEvolutionAnalysis>();
    FAM.invalidate(F, PA);
  };
  B.Backedges = Count();
  if (LoadInst *Bound = B.Backedges ? nullptr : hoistableBound(B, S.S, AA, DT)) {
    Instruction *Next = Bound->getNextNode();
    Bound->moveBefore(B.Entry->getTerminator());
    ForgetCounts();
    B.Backedges = Count();
    if (B.Backedges) {
      B.Bound = describe(Bound);
      B.Hoisted = Bound;
      B.HoistedFrom = Next;
    } else {
      Bound->moveBefore(Next);
      ForgetCounts();
    }
  }
  if (!B.Backedges)
    return Refusal{"linearity", "the loop's trip count is not known when it starts (scalar evolution)"};
  return std::nullopt;
}
} // namespace

/// The blocks one writev carries (IOV_MAX, as batch_write.c and advise's
/// BATCH_BLOCKS).
static constexpr uint64_t BatchBlocks = 1024;

namespace {
/// What advise's batch-writes rule prices the loop with, from the
/// calibration `syscluster calibrate` writes beside libmulticall's
/// (calibration.json in the same directory): the crossing, a write's
/// fixed work on a regular file (its calibrated line, for blocks of about
/// the line's smaller size or more; else the crossing), glibc's fstat
/// (newfstatat on a descriptor; else the crossing).  Without that file,
/// the crossing of libmulticall's calibration for all three, as advise
/// without a calibration.
struct BatchCosts {
  double CrossingNs = 0, WriteNs = 0, FstatNs = 0;
  std::string From; // where the figures come from, in words
};
} // namespace

static BatchCosts batchCosts(const Calibration &MC, std::optional<uint64_t> Bytes) {
  BatchCosts K;
  K.CrossingNs = K.WriteNs = K.FstatNs = MC.CrossingNs;
  K.From = "the crossing of " + MC.Path + " for each: no syscall costs beside it";
  SmallString<256> Path(sys::path::parent_path(MC.Path));
  sys::path::append(Path, "calibration.json");
  if (Path == MC.Path)
    return K;
  auto Parsed = readJsonObject("calibration", Path);
  if (!Parsed) {
    consumeError(Parsed.takeError());
    return K;
  }
  const json::Object *Top = Parsed->getAsObject();
  const json::Object *Crossing = Top->getObject("crossing");
  auto Syscall = Crossing ? Crossing->getNumber("syscall_ns") : std::nullopt;
  if (!Top->getInteger("calibration_version") || !Syscall)
    return K;
  K.CrossingNs = K.WriteNs = K.FstatNs = *Syscall;
  std::string Write = "crossing", Fstat = "crossing";
  if (const json::Array *Kernel = Top->getArray("kernel"))
    for (const json::Value &V : *Kernel) {
      const json::Object *L = V.getAsObject();
      if (!L || L->getString("syscall") != "write" || L->getString("on") != "file")
        continue;
      auto Small = L->getNumber("small_bytes"), Fixed = L->getNumber("fixed_ns");
      if (Small && Fixed && Bytes && (double)*Bytes >= *Small - std::floor(*Small / 8)) {
        K.WriteNs = std::max(*Fixed, K.CrossingNs);
        Write = "write.file fixed";
      }
    }
  // The point of fewest bytes, as advise's cost() for bytes 0.
  std::optional<double> AtBytes;
  if (const json::Array *Costs = Top->getArray("costs"))
    for (const json::Value &V : *Costs) {
      const json::Object *C = V.getAsObject();
      if (!C || C->getString("syscall") != "newfstatat" || C->getString("on") != "fd")
        continue;
      auto B = C->getNumber("bytes"), Ns = C->getNumber("ns");
      if (Ns && (!AtBytes || B.value_or(0) < *AtBytes)) {
        AtBytes = B.value_or(0);
        K.FstatNs = *Ns;
        Fstat = "newfstatat.fd";
      }
    }
  K.From = ("write: " + Write + ", fstat: " + Fstat + " (" + Path + ")").str();
  return K;
}

/// Never a slower program (issue 12, Must 7), as advise's batch-writes
/// rule prices it: a run of the loop of n writes keeps the blocks' own
/// work; its n - 1 writes after the first each save a write's fixed work,
/// and the run pays ceil((n - 1) / 1024) + 1 writevs (a last, partial one
/// counted as advise does) and one fstat.  n: the constant trip count, or
/// the writes the profile recorded at the site as one run.  Fills
/// MinIterations: below it a run of the loop does not gain, and the
/// runtime runs it as written (0: not priced).
std::optional<Refusal> ClusterPass::checkBatchGain(const Site &S, const PlanCluster &PC, const SCEV *Backedges,
                                                   uint64_t Recorded, uint64_t &MinIterations,
                                                   std::string &Estimate) {
  MinIterations = 0;
  const Calibration *C = nullptr;
  if (auto Why = gainCalibration("loop", C, Estimate))
    return Why;
  if (!C)
    return std::nullopt;
  // The block: a constant count, else the value profile's.
  std::optional<uint64_t> Bytes;
  if (auto *N = dyn_cast<ConstantInt>(S.S.Call->getArgOperand(2)))
    Bytes = N->getZExtValue();
  for (const PlanCall &Call : PC.Calls)
    for (const auto &[Arg, V] : Call.Args)
      if (!Bytes && Call.Syscall == "write" && Arg == "count" && V > 0)
        Bytes = (uint64_t)V;
  BatchCosts K = batchCosts(*C, Bytes);
  uint64_t N = Recorded;
  std::string Runs = Twine(Recorded).str() + " writes recorded at " + at(S.S.Call) + " in the profile, as one run";
  if (auto *Trip = dyn_cast<SCEVConstant>(Backedges); Trip && Trip->getAPInt().getActiveBits() < 63) {
    N = Trip->getValue()->getZExtValue() + 1;
    Runs = Twine(N).str() + " iterations (a constant trip count)";
  }
  auto Writevs = [](uint64_t W) { return (W + BatchBlocks - 1) / BatchBlocks + 1; };
  auto Saving = [&](uint64_t It) {
    uint64_t W = It ? It - 1 : 0;
    return ((double)W - (double)Writevs(W)) * K.WriteNs - K.FstatNs;
  };
  uint64_t W = N ? N - 1 : 0;
  std::string Basis = Runs + ": " + Twine(W).str() + " writes x " + us(K.WriteNs) + " fixed work saved - " +
                      Twine(Writevs(W)).str() + " writevs x " + us(K.WriteNs) + " - " + us(K.FstatNs) +
                      " fstat (" + K.From + ")";
  if (!(K.WriteNs > 0))
    return Refusal{"no gain", "a write's fixed work is not known to be above 0: " + Basis};
  // The fewest iterations that gain (the saving grows with them: at
  // least 1023 of every 1024 writes saved).
  uint64_t Min = 3;
  while (!(Saving(Min) > 0))
    Min += Min < 4096 ? 1 : Min / 64;
  MinIterations = Min;
  if (!(Saving(N) > 0))
    return Refusal{"no gain", "estimated " + us(Saving(N)) + " per run of the loop: " + Basis + "; it pays from " +
                                  Twine(Min).str() + " iterations"};
  Estimate = "estimated saving " + us(Saving(N)) + " per run of the loop like the recorded one: " + Basis +
             "; it pays from " + Twine(Min).str() + " iterations: a run of fewer runs the loop as written";
  return std::nullopt;
}

bool ClusterPass::applyBatchWrite(const Site &S, const PlanCluster &PC, const std::string &Name, uint64_t Recorded) {
  BatchLoop B;
  std::string Estimate;
  uint64_t MinIterations = 0;
  std::optional<Refusal> Why = checkBatchLoop(S, FAM, B);
  if (!Why)
    Why = checkBatchGain(S, PC, B.Backedges, Recorded, MinIterations, Estimate);
  if (Why) {
    // A loop that does not gain stays exactly as it was: its bound goes back.
    if (B.Hoisted) {
      B.Hoisted->moveBefore(B.HoistedFrom);
      PreservedAnalyses PA = PreservedAnalyses::all();
      PA.abandon<ScalarEvolutionAnalysis>();
      FAM.invalidate(*S.S.Call->getFunction(), PA);
    }
    missed(S.S.Call, Why->Condition == "no gain" || Why->Condition == "no gain known" ? "NoGain" : "NotReplaced",
           Name + ": the loop of " + describe(S) + " is left as it is: " + Why->Condition + ": " + Why->Detail);
    return false;
  }
  CallBase *CW = S.S.Call;
  Function &F = *CW->getFunction();
  const DataLayout &DL = M.getDataLayout();
  AAResults &AA = FAM.getResult<AAManager>(F);
  ScalarEvolution &SE = FAM.getResult<ScalarEvolutionAnalysis>(F);
  if (B.Entry->getTerminator()->getNumSuccessors() != 1)
    B.Pre = SplitEdge(B.Entry, B.H, &FAM.getResult<DominatorTreeAnalysis>(F), &FAM.getResult<LoopAnalysis>(F));
  std::string Msg = Name + ": the loop of " + describe(S) + " (" + B.Check +
                    (B.Bound.empty() ? std::string()
                                     : "; its bound, " + B.Bound + ", read once in front of it: the loop "
                                       "does not write it") +
                    ") is written in batches: __syscluster_batch_write writes its iterations with writev, up to "
                    "1024 blocks per call, into a regular file (anything else: the loop as written); a batch cut "
                    "short gives the loop back at the first iteration not done, a block written in part as "
                    "that iteration's short write; " + Estimate;
  ore(F).emit([&] { return OptimizationRemark(PassName, "Clustered", CW) << Msg; });

  LLVMContext &Ctx = F.getContext();
  Type *I64 = Type::getInt64Ty(Ctx), *I32 = Type::getInt32Ty(Ctx), *Ptr = PointerType::get(Ctx, 0);
  FunctionCallee Fn =
      M.getOrInsertFunction(BatchWriteFn, FunctionType::get(I64, {I32, Ptr, I64, I64, I64, Ptr}, false));
  // Everything SCEV expands is expanded before the loop changes.
  SCEVExpander Exp(SE, DL, "sc.batch");
  IRBuilder<> At(B.Pre->getTerminator());
  At.SetCurrentDebugLocation(CW->getDebugLoc());
  Value *Args[3];
  for (unsigned I = 0; I < 3; ++I)
    Args[I] = sameEveryIteration(CW->getArgOperand(I), B, S.S, AA, &At);
  Value *Backedges = Exp.expandCodeFor(B.Backedges, B.Backedges->getType(), B.Pre->getTerminator());
  At.SetInsertPoint(B.Pre->getTerminator());
  Value *Trip = At.CreateAdd(At.CreateZExt(Backedges, I64), ConstantInt::get(I64, 1), "sc.trip");
  AllocaInst *DoneAddr;
  {
    IRBuilder<> Entry(&*F.getEntryBlock().getFirstInsertionPt());
    DoneAddr = Entry.CreateAlloca(I64, nullptr, "sc.done");
  }
  Value *R =
      At.CreateCall(Fn, {Args[0], Args[1], Args[2], Trip, ConstantInt::get(I64, MinIterations), DoneAddr}, "sc.batch");
  Value *Done = At.CreateLoad(I64, DoneAddr, "sc.done.n");
  const SCEV *DoneS = SE.getSCEV(Done);
  const SCEV *LastS = SE.getMinusSCEV(SE.getSCEV(Trip), SE.getOne(I64));

  // The header's induction variables at iteration done, and the values
  // the loop leaves at its last iteration, computed in Pre (pure
  // arithmetic: the blocks below only pick them).
  auto AtIteration = [&](const SCEV *V, const SCEV *It) {
    auto *AR = cast<SCEVAddRecExpr>(V);
    return Exp.expandCodeFor(AR->evaluateAtIteration(SE.getTruncateOrZeroExtend(It, AR->getType()), SE),
                             AR->getType(), B.Pre->getTerminator());
  };
  SmallVector<std::pair<PHINode *, Value *>, 4> Starts;
  for (PHINode &P : B.H->phis()) {
    auto *AR = dyn_cast<SCEVAddRecExpr>(SE.getSCEV(&P));
    if (AR && AR->getLoop() == B.L && AR->isAffine() && P.getType()->isIntegerTy())
      Starts.emplace_back(&P, AtIteration(AR, DoneS));
  }
  SmallVector<std::pair<PHINode *, Value *>, 4> Lasts;
  for (PHINode &P : B.Exit->phis()) {
    Value *V = P.getIncomingValueForBlock(B.Latch);
    auto *I = dyn_cast<Instruction>(V);
    Lasts.emplace_back(&P, !I || !B.L->contains(I) ? V : AtIteration(SE.getSCEV(V), LastS));
  }
  Exp.clear();
  BasicBlock *Resume = BasicBlock::Create(Ctx, "sc.batch.resume", &F, B.H);
  BasicBlock *AllDone = BasicBlock::Create(Ctx, "sc.batch.done", &F, B.H);
  BranchInst::Create(B.H, Resume);
  BranchInst::Create(B.Exit, AllDone);

  // Pre: all done, or resume.
  Instruction *OldTerm = B.Pre->getTerminator();
  IRBuilder<> PB(OldTerm);
  PB.SetCurrentDebugLocation(CW->getDebugLoc());
  PB.CreateCondBr(PB.CreateICmpEQ(Done, Trip), AllDone, Resume);
  OldTerm->eraseFromParent();
  for (PHINode &P : B.H->phis())
    P.replaceIncomingBlockWith(B.Pre, Resume);
  for (auto &[P, V] : Starts)
    P->setIncomingValueForBlock(Resume, V);
  for (auto &[P, V] : Lasts)
    P->addIncoming(V, AllDone);

  // The header: the result the batch left for iteration done, then the
  // write as written.
  PHINode *Pend = PHINode::Create(I64, 2, "sc.pending", B.H->getFirstNonPHI());
  Pend->addIncoming(R, Resume);
  Pend->addIncoming(ConstantInt::get(I64, -1), B.Latch);
  IRBuilder<> WB(CW);
  Value *Real = WB.CreateICmpSLT(Pend, ConstantInt::get(I64, 0));
  Instruction *ThenTerm = SplitBlockAndInsertIfThen(Real, CW, false);
  BasicBlock *Then = ThenTerm->getParent(), *Tail = CW->getParent();
  CW->moveBefore(ThenTerm);
  PHINode *W = PHINode::Create(I64, 2, "sc.write", &*Tail->begin());
  CW->replaceAllUsesWith(W);
  W->addIncoming(Pend, Then->getSinglePredecessor());
  W->addIncoming(CW, Then);
  return true;
}

} // namespace syscluster
