//===- Gain.cpp - never a slower program ------------------------------------===//
//
// Issue 12, Must 7: without the kernel module a multi-call crosses once
// per call unless a fusion rule merges its calls, and the program pays once
// for its first context.  From libmulticall's calibration of the target
// host and the plan's counts, each replacement is kept only where it gains
// (or everywhere with -syscluster-assume-gain, for hosts with the module).
//
//===----------------------------------------------------------------------===//
#include "ClusterPass.h"

#include "llvm/IR/Constants.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"

using namespace llvm;

static cl::opt<std::string> CalibrationPath(
    "syscluster-calibration",
    cl::desc("libmulticall's calibration of the target host (default: where libmulticall looks; "
             "'none': no calibration)"),
    cl::value_desc("file"), cl::init(""));

static cl::opt<bool> AssumeGain(
    "syscluster-assume-gain",
    cl::desc("replace regions the calibration shows no gain for (hosts with the kernel module)"),
    cl::init(false));

namespace syscluster {

const Calibration *ClusterPass::calibration() {
  if (!CalibrationRead) {
    CalibrationRead = true;
    std::string Path = CalibrationPath.empty() ? defaultCalibrationPath() : CalibrationPath.getValue();
    if (Path.empty() || Path == "none") {
      CalibrationError = "no calibration file is named (MULTICALL_CALIBRATION=none or no $HOME)";
    } else if (auto C = loadCalibration(Path)) {
      Cal = *C;
    } else {
      CalibrationError = toString(C.takeError());
      if (CalibrationError.find("No such file") != std::string::npos)
        CalibrationError += " (run `syscluster calibrate` on the host the program is for)";
    }
  }
  return Cal ? &*Cal : nullptr;
}

/// Nanoseconds as the remarks show them ("2.5 us").
std::string us(double Ns) {
  std::string S;
  raw_string_ostream(S) << format("%.1f", Ns / 1000) << " us";
  return S;
}

/// Where every gain decision starts: with -syscluster-assume-gain, no
/// calibration (C stays null) and Estimate says why; else the host's
/// calibration, or a refusal when it cannot be read.
std::optional<Refusal> ClusterPass::gainCalibration(StringRef Unit, const Calibration *&C, std::string &Estimate) {
  if (AssumeGain) {
    Estimate = ("compiled without a gain estimate (-syscluster-assume-gain: a host with the kernel module, where "
                "the " + Unit + " is one crossing)").str();
    return std::nullopt;
  }
  C = calibration();
  if (!C)
    return Refusal{"no gain known", "this host's calibration cannot be read (" + CalibrationError +
                                        "), so whether the multi-call is faster is unknown"};
  return std::nullopt;
}

/// Never a slower program (issue 12, Must 7): the looped multi-call pays
/// once for the program's first context and the probes of the copy's
/// descriptors, and gains a little per block.  The first context of a
/// priced loop is a fusion context (first_fusion_context): the runtime
/// makes one only where its gate found a regular file at both ends, and
/// runs the loop as written everywhere else (a pipe or socket at either
/// end: without the kernel module no fusion applies there, so no context
/// would pay), which is what the saving per block -- copy-block.file, a
/// copy between two files -- is measured for.  Besides, every call of the
/// fused copy pays a fixed cost its blocks do not save (fused_copy_fixed:
/// the gate, the probes, the read taken back, the buffer refilled; the
/// probes' calls only in an older calibration).  The calibration gives them;
/// the profile gives the blocks a run copies at this read.  Fills MinBlocks
/// (the blocks left below which the replacement runs the loop as written)
/// and a sentence on the estimate.
std::optional<Refusal> ClusterPass::checkGain(const Site &R, uint64_t Spec, uint64_t Blocks, unsigned long &MinBlocks,
                                              std::string &Estimate) {
  MinBlocks = 0;
  const Calibration *C = nullptr;
  if (auto Why = gainCalibration("loop", C, Estimate))
    return Why;
  if (!C)
    return std::nullopt;
  // checkWriteReadLoop: a constant, or the specialized one.
  uint64_t Block = Spec ? Spec : cast<ConstantInt>(R.S.Call->getArgOperand(2))->getZExtValue();
  // Priced at the loop's block size, by the measurement the remark names.
  Calibration::Saving Priced = C->savingPerBlock(Block);
  Calibration::Charge First = C->copyFirstContext(), Once = C->copyFixed();
  double Save = Priced.Ns, Fixed = First.Ns + Once.Ns;
  if (!(Save > 0))
    return Refusal{"no gain", "on this host the looped multi-call copies a block no faster than read+write (" +
                                  us(Priced.FusedNs) + " against " + us(Priced.DirectNs) + ", " + Priced.How +
                                  ", " + C->Path + ")"};
  MinBlocks = C->breakEvenBlocks(Block);
  std::string Basis = Twine(Blocks).str() + " reads at " + at(R.S.Call) + " in the profile x " + us(Save) +
                      " saved per block of " + Twine(Block).str() + " B - " + us(First.Ns) + " first context (" +
                      First.What + ") - " + us(Once.Ns) + " " + Once.What + " (saving " + Priced.How + ", " + C->Path +
                      ")";
  if (Blocks < MinBlocks)
    return Refusal{"no gain", "estimated " + us(Blocks * Save - Fixed) + " per run: " + Basis +
                                  "; it pays from " + Twine(MinBlocks).str() + " blocks"};
  Estimate = "estimated saving " + us(Blocks * Save - Fixed) + " per run like the recorded one: " + Basis +
             "; a run with fewer than " + Twine(MinBlocks).str() +
             " blocks left to copy (or not between two regular files) runs the loop as written";
  return std::nullopt;
}

/// Never a slower program: without the kernel module a multi-call crosses
/// once per call unless a fusion rule merges its calls; then it saves at
/// most a crossing per call merged, and the program pays once for its
/// first context.
std::optional<Refusal> ClusterPass::checkRegionGain(const RegionShape &Shape, uint64_t Runs,
                                                    unsigned long &MinRuns, std::string &Estimate) {
  MinRuns = 0;
  const Calibration *C = nullptr;
  if (auto Why = gainCalibration("region", C, Estimate))
    return Why;
  if (!C)
    return std::nullopt;
  std::string Calls;
  for (const SyscallSite &S : Shape.Calls)
    Calls += (Calls.empty() ? "" : ", ") + S.Name;
  unsigned N = Shape.Calls.size();
  auto Fewest = Shape.Rule.empty() ? std::pair<unsigned, std::string>{0, ""} : C->fewestCalls(Shape.Rule);
  if (Shape.Rule.empty())
    return Refusal{"no gain", "no fusion rule merges " + Calls +
                                  (Shape.NoRuleWhy.empty() ? "" : " (" + Shape.NoRuleWhy + ")") +
                                  ": without the kernel module each call still crosses once and the multi-call only "
                                  "adds bookkeeping (-syscluster-assume-gain compiles it for a host with the module)"};
  if (!Fewest.first || Fewest.first > N)
    return Refusal{"no gain", "the fusion rule for " + Calls + " (" + Shape.Rule + ") pays " +
                                  (Fewest.first ? "from " + Twine(Fewest.first).str() + " calls"
                                                : std::string("on no descriptor")) +
                                  " on this host (" + C->Path + "); the region has " + Twine(N).str()};
  double Save = (N - 1) * C->CrossingNs;
  MinRuns = (unsigned long)std::ceil(C->FirstContextNs / Save);
  std::string Basis = Twine(Runs).str() + " runs in the profile x at most " + us(Save) + " saved (" +
                      Twine(N - 1).str() + " crossings merged by " + Shape.Rule + " on " + Fewest.second +
                      " descriptors) - " + us(C->FirstContextNs) + " first context (" + C->Path + ")";
  if (Runs < MinRuns)
    return Refusal{"no gain", "estimated " + us(Runs * Save - C->FirstContextNs) + " per run: " + Basis +
                                  "; it pays from " + Twine(MinRuns).str() + " runs"};
  Estimate = "estimated saving at most " + us(Runs * Save - C->FirstContextNs) + " per run like the recorded one: " +
             Basis + "; the first " + Twine(MinRuns).str() + " runs of the region run the calls as written";
  return std::nullopt;
}

} // namespace syscluster
