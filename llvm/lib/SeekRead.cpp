//===- SeekRead.cpp - lseek + read as one pread, the position kept ---------===//
//
// A straight-line region `lseek(fd, pos, SEEK_SET)` → `read(fd, buf, n)`
// gains nothing from a multi-call on a host without the kernel module: no
// fusion rule merges one segment (libmulticall's seek_pread makes it a
// preadv and an lseek, two crossings).  Where the descriptor lives in a
// global of this translation unit only, the pair is one pread — the plan's
// own mechanism (advise's `pread` rule), one crossing instead of two, no
// context, nothing to pay first — and the position the pair would have
// left is kept pending: set with one lseek before anything else is given
// the descriptor (another read or write, an lseek, a close, a store of
// another descriptor into the global), before fork and at exit, only if
// one is pending.  Only where nothing else can see it: the global holds
// only descriptors this process opened, none of its values goes to other
// code, nothing in the module starts a program, and (at run time) the
// descriptor is close-on-exec.  fsck.fat's fs_read (docs/COMPILER.md).
//
//===----------------------------------------------------------------------===//
#include "ClusterPass.h"

#include "llvm/Analysis/ValueTracking.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/Support/KnownBits.h"

#include <fcntl.h>

namespace syscluster {

static constexpr const char *SeekReadFn = "__syscluster_seek_read";
static constexpr const char *SyncFn = "__syscluster_position_sync";

/// The global V is loaded from: a simple load of an integer global that
/// only this translation unit can name.
static GlobalVariable *descriptorGlobal(const Value *V) {
  auto *LI = dyn_cast<LoadInst>(V);
  if (!LI || !LI->isSimple())
    return nullptr;
  auto *G = dyn_cast<GlobalVariable>(const_cast<Value *>(LI->getPointerOperand()));
  if (!G || !G->hasLocalLinkage() || !G->getValueType()->isIntegerTy())
    return nullptr;
  return G;
}

static bool isSeekSet(const SyscallSite &S) {
  return S.Name == "lseek" && S.FirstArg == 0 && S.Call->arg_size() == 3 &&
         isa<ConstantInt>(S.Call->getArgOperand(2)) && cast<ConstantInt>(S.Call->getArgOperand(2))->isZero();
}

/// A call in the module that may start another program (it would inherit
/// the open file, position unset, unless close-on-exec) or share the open
/// file without fork's handlers: the exec family, posix_spawn (clone3),
/// clone, _Fork, vfork, syscall with a number not known here, and system
/// and popen (which spawn, and are not system-call wrappers).  fork runs
/// the runtime's pthread_atfork handler and is not one of them.  The runtime
/// also makes a pread only on a close-on-exec descriptor, for exec from
/// other code (seek_read.c).
static const CallBase *startsProgram(Module &M) {
  for (Function &F : M)
    for (Instruction &I : instructions(F)) {
      auto *CB = dyn_cast<CallBase>(&I);
      Function *Callee = CB ? CB->getCalledFunction() : nullptr;
      if (!Callee)
        continue;
      StringRef N = Callee->getName();
      if (N == "system" || N == "popen" || N == "clone" || N == "_Fork" || N == "vfork")
        return CB;
      if (N == "syscall" && !(CB->arg_size() && isa<ConstantInt>(CB->getArgOperand(0))))
        return CB;
      if (auto S = recognizeSyscall(*CB))
        if (S->Name == "execve" || S->Name == "execveat" || S->Name == "clone3")
          return CB;
    }
  return nullptr;
}

/// V, stored into the descriptor global, is a descriptor this process
/// opened (open, openat, creat and their other names) or a negative
/// constant ("closed").
static bool openedHere(const Value *V) {
  if (auto *C = dyn_cast<ConstantInt>(V))
    return C->isNegative();
  auto *CB = dyn_cast<CallBase>(const_cast<Value *>(V));
  auto S = CB ? recognizeSyscall(*CB) : std::nullopt;
  return S && (S->Name == "openat" || S->Name == "open" || S->Name == "creat");
}

/// Whether the open call V (a descriptor stored into the global) may give
/// a close-on-exec descriptor: its flags are not known to be without
/// O_CLOEXEC (creat's never have it).
static bool mayBeCloseOnExec(const Value *V) {
  auto *CB = dyn_cast<CallBase>(const_cast<Value *>(V));
  Function *F = CB ? CB->getCalledFunction() : nullptr;
  auto S = CB ? recognizeSyscall(*CB) : std::nullopt;
  if (!F || !S)
    return false; // a negative constant: "closed"
  if (S->Name == "creat")
    return false;
  unsigned Flags = S->FirstArg + (S->Name == "openat" ? 2 : 1);
  if (F->getName() != "syscall") // libc's names: open*, __open*_2 (path, flags); openat*, __openat*_2 (dirfd, path, flags)
    Flags = F->getName().contains("openat") ? 2 : 1;
  if (CB->arg_size() <= Flags)
    return true;
  // The flags' O_CLOEXEC bit known to be clear: a constant, or `rw ?
  // O_RDWR : O_RDONLY` (a select, or what clang makes of it).
  const Value *Fl = CB->getArgOperand(Flags);
  if (!Fl->getType()->isIntegerTy() || Fl->getType()->getIntegerBitWidth() > 64)
    return true;
  KnownBits K = computeKnownBits(Fl, CB->getModule()->getDataLayout());
  return !K.Zero[countr_zero(uint64_t(O_CLOEXEC))];
}

/// Whether the file position of the descriptor in G can be kept as the
/// program would see it: G is this translation unit's own (internal, its
/// address never taken: only plain loads and stores of it); every value
/// stored into it is a descriptor this process opened, or a negative
/// constant (the open file is this process's own: not inherited, not a
/// dup, not a number from elsewhere); every descriptor loaded from it goes
/// to a comparison or is an argument of a system call other than dup,
/// dup2, dup3 and fcntl (no other descriptor shares the open file through
/// this code, no other code is given it) — before each of which (but the
/// position-free ones: pread, pwrite, fsync, fdatasync, fstat, ftruncate)
/// trackPositions sets the pending position; and nothing in the module
/// starts another program (startsProgram).
std::optional<Refusal> ClusterPass::positionTrackable(GlobalVariable *G) {
  std::string Name = G->getName().str();
  const StoreInst *Opened = nullptr; // a store of an opened descriptor, and whether any may be close-on-exec
  bool MayCloexec = false;
  for (const User *U : G->users()) {
    auto What = [](const User *X) {
      return isa<Instruction>(X) ? describe(cast<Instruction>(X)) : std::string("a constant expression");
    };
    if (auto *SI = dyn_cast<StoreInst>(U)) {
      if (SI->getPointerOperand() != G || !SI->isSimple())
        return Refusal{"position", What(SI) + " stores " + Name + " itself somewhere, or is not a plain store"};
      if (!openedHere(SI->getValueOperand()))
        return Refusal{"position", What(SI) + " stores into " + Name +
                                       " a descriptor this process may not have opened (not the result of "
                                       "open, openat or creat, nor a negative constant): its open file may "
                                       "be shared"};
      if (!isa<ConstantInt>(SI->getValueOperand())) {
        Opened = SI;
        MayCloexec |= mayBeCloseOnExec(SI->getValueOperand());
      }
      continue;
    }
    auto *LI = dyn_cast<LoadInst>(U);
    if (!LI || !LI->isSimple() || LI->getPointerOperand() != G)
      return Refusal{"position", "the address of " + Name + " is taken (" + What(U) + ")"};
    for (const User *LU : LI->users()) {
      if (isa<ICmpInst>(LU))
        continue;
      // A system call, but none that makes another descriptor of the same
      // open file (whose uses would share the position unseen).
      auto *CB = dyn_cast<CallBase>(const_cast<User *>(LU));
      auto S = CB ? recognizeSyscall(*CB) : std::nullopt;
      if (!S)
        return Refusal{"position", "the descriptor in " + Name + " goes to " + What(LU) +
                                       ", which the pass does not follow"};
      if (S->Name == "dup" || S->Name == "dup2" || S->Name == "dup3" || S->Name == "fcntl")
        return Refusal{"position", describe(CB) + " may make another descriptor of the open file in " + Name +
                                       ", whose uses would share its position"};
    }
  }
  // The runtime makes a pread only on a close-on-exec descriptor: where
  // every open stored here is made without O_CLOEXEC it would check (one
  // fcntl) and run the pair as written every time, for nothing.
  if (Opened && !MayCloexec)
    return Refusal{"no gain", "every descriptor stored into " + Name + " is opened without O_CLOEXEC (" +
                                  describe(cast<Instruction>(Opened->getValueOperand())) +
                                  "): another program started by code the pass cannot see would inherit it, so "
                                  "the pair runs as written (open it with O_CLOEXEC where the program never "
                                  "hands it to another program)"};
  if (const CallBase *CB = startsProgram(M))
    return Refusal{"position", describe(CB) + " may start another program, which would inherit the open file in " +
                                   Name + " with its position not yet set"};
  return std::nullopt;
}

/// The region is lseek(G, pos, SEEK_SET), checked, → read(G, buf, n) on one
/// descriptor global G: returns G, else null (the region goes on to the
/// multi-call's own decision).
GlobalVariable *ClusterPass::seekReadGlobal(const RegionShape &Shape) {
  if (Shape.Calls.size() != 2 || !isSeekSet(Shape.Calls[0]) || Shape.Calls[1].Name != "read" ||
      Shape.Calls[1].FirstArg != 0 || !(Shape.Checked[0] || Shape.Full[0]))
    return nullptr;
  for (const auto &Args : Shape.Args)
    for (const RegionShape::Arg &A : Args)
      if (A.Ref >= 0)
        return nullptr;
  GlobalVariable *G = descriptorGlobal(Shape.Args[0][0].Literal);
  if (!G || descriptorGlobal(Shape.Args[1][0].Literal) != G)
    return nullptr;
  return G;
}

/// The pair becomes __syscluster_seek_read (llvm/runtime/seek_read.c): a
/// pread where the descriptor is a regular file or a block device and the
/// pread transfers its whole count (then the lseek would have returned pos
/// and the read the same bytes), the position it would have left pending;
/// else the lseek and the read as written.  G's two companions: the
/// descriptor's kind (asked once per store to G, "as written" after a
/// close and before the first store) and the pending position (-1: none).
Instruction *ClusterPass::replaceSeekRead(RegionShape &Shape, GlobalVariable *G) {
  LLVMContext &Ctx = M.getContext();
  CallBase *Seek = Shape.Calls[0].Call, *Read = Shape.Calls[1].Call;
  Function &F = *Seek->getFunction();
  Type *I32 = Type::getInt32Ty(Ctx), *I64 = Type::getInt64Ty(Ctx), *Ptr = PointerType::get(Ctx, 0);
  for (LoadInst *LI : Shape.Hoist)
    LI->moveBefore(Seek);
  for (Instruction *I : Shape.Moved)
    I->moveBefore(Seek);

  auto &State = Positions[G];
  if (!State.first) {
    // The initial descriptor, before any store, is not one this process
    // opened (0: standard input) unless it is "closed": as written (2).
    auto *Init = G->hasInitializer() ? dyn_cast<ConstantInt>(G->getInitializer()) : nullptr;
    State.first = new GlobalVariable(M, I32, false, GlobalValue::InternalLinkage,
                                     ConstantInt::get(I32, Init && Init->isNegative() ? 0 : 2),
                                     "syscluster.fdkind." + G->getName());
    State.second = new GlobalVariable(M, I64, false, GlobalValue::InternalLinkage, ConstantInt::getSigned(I64, -1),
                                      "syscluster.pending." + G->getName());
  }

  IRBuilder<> EB(&F.getEntryBlock(), F.getEntryBlock().getFirstInsertionPt());
  AllocaInst *SeekResult = EB.CreateAlloca(I64, nullptr, "syscluster.seek");
  IRBuilder<> B(Seek);
  B.SetCurrentDebugLocation(Seek->getDebugLoc());
  FunctionCallee Fn = M.getOrInsertFunction(
      SeekReadFn, FunctionType::get(I64, {I32, I64, Ptr, I64, I32, Ptr, Ptr, Ptr}, false));
  Value *Pos = Shape.Args[0][1].Literal, *Buf = Shape.Args[1][1].Literal;
  Pos = Pos->getType()->isPointerTy() ? B.CreatePtrToInt(Pos, I64) : B.CreateSExtOrTrunc(Pos, I64);
  if (!Buf->getType()->isPointerTy())
    Buf = B.CreateIntToPtr(Buf, Ptr);
  CallInst *Call = B.CreateCall(Fn, {B.CreateSExtOrTrunc(Shape.Args[1][0].Literal, I32), Pos, Buf,
                                     B.CreateZExtOrTrunc(Shape.Args[1][2].Literal, I64),
                                     B.getInt32(Shape.Full[0] ? 1 : 0), SeekResult, State.first, State.second});
  Seek->replaceAllUsesWith(B.CreateSExtOrTrunc(B.CreateLoad(I64, SeekResult), Seek->getType()));
  B.SetCurrentDebugLocation(Read->getDebugLoc());
  Read->replaceAllUsesWith(B.CreateSExtOrTrunc(Call, Read->getType()));
  Seek->eraseFromParent();
  Read->eraseFromParent();
  return Call;
}

/// After every cluster: before every other call given a descriptor loaded
/// from a replaced pair's G (but the position-free system calls), and
/// before every store into G, __syscluster_position_sync sets the position
/// a pair left pending (one lseek, only when one is; a close or a store
/// also forgets the descriptor's kind).
void ClusterPass::trackPositions() {
  LLVMContext &Ctx = M.getContext();
  Type *I32 = Type::getInt32Ty(Ctx), *Ptr = PointerType::get(Ctx, 0);
  FunctionCallee Sync =
      M.getOrInsertFunction(SyncFn, FunctionType::get(Type::getVoidTy(Ctx), {I32, I32, Ptr, Ptr}, false));
  for (auto &[G, State] : Positions) {
    SmallVector<std::pair<Instruction *, Value *>, 16> At; // before the instruction, the descriptor
    for (User *U : G->users()) {
      if (auto *SI = dyn_cast<StoreInst>(U)) {
        At.push_back({SI, nullptr});
        continue;
      }
      auto *LI = cast<LoadInst>(U);
      for (User *LU : LI->users()) {
        auto *CB = dyn_cast<CallBase>(LU);
        if (!CB)
          continue;
        if (Function *Callee = CB->getCalledFunction();
            Callee && (Callee->getName() == SeekReadFn || Callee->getName() == SyncFn))
          continue;
        if (auto S = recognizeSyscall(*CB)) {
          StringRef N = S->Name;
          if (N == "pread64" || N == "pwrite64" || N == "fsync" || N == "fdatasync" || N == "newfstatat" ||
              N == "ftruncate")
            continue;
        }
        if (!is_contained(At, std::pair<Instruction *, Value *>{CB, LI}))
          At.push_back({CB, LI});
      }
    }
    for (auto &[I, V] : At) {
      IRBuilder<> B(I);
      B.SetCurrentDebugLocation(I->getDebugLoc());
      // How the descriptor's kind changes (seek_read.c): 0 a use, 1 a
      // store (asked again), 2 a close (as written until the next store).
      unsigned How = V ? 0 : 1;
      if (auto *CB = dyn_cast<CallBase>(I))
        if (auto S = recognizeSyscall(*CB); S && S->Name == "close")
          How = 2;
      if (!V) // the descriptor G holds until this store
        V = B.CreateLoad(G->getValueType(), G);
      B.CreateCall(Sync, {B.CreateSExtOrTrunc(V, I32), B.getInt32(How), State.first, State.second});
      Changed.insert(I->getFunction());
    }
  }
}

} // namespace syscluster
