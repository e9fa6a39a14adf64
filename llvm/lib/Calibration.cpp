//===- Calibration.cpp - reading libmulticall's calibration ---------------===//
#include "SysCluster/Calibration.h"
#include "SysCluster/Plan.h"

#include "llvm/Support/JSON.h"
#include <algorithm>
#include <cmath>
#include <vector>
#include <cstdlib>

using namespace llvm;

namespace syscluster {

static Error bad(StringRef Path, const Twine &What) {
  return createStringError(inconvertibleErrorCode(), "calibration " + Path + ": " + What);
}

std::string defaultCalibrationPath() {
  // The same order as libmulticall's calib_path().
  if (const char *E = std::getenv("MULTICALL_CALIBRATION"))
    return StringRef(E) == "none" ? std::string() : std::string(E);
  if (const char *X = std::getenv("XDG_CACHE_HOME"); X && *X)
    return std::string(X) + "/syscluster/multicall-calibration.json";
  if (const char *H = std::getenv("HOME"); H && *H)
    return std::string(H) + "/.cache/syscluster/multicall-calibration.json";
  return {};
}

// The block mc-calibrate's copy-loop.file copies (measure_loop in
// libmulticall/tools/mc-calibrate.c).
static constexpr double CalibratedBlock = 4096;

double Calibration::savingPerBlock(uint64_t Bytes) const {
  double S = DirectNs - FusedNs;
  if (Bytes >= CalibratedBlock || !(S > 2 * CrossingNs))
    return S;
  return 2 * CrossingNs + (S - 2 * CrossingNs) * (double)Bytes / CalibratedBlock;
}

unsigned long Calibration::breakEvenBlocks(uint64_t Bytes) const {
  double S = savingPerBlock(Bytes);
  if (!(S > 0))
    return 0;
  return (unsigned long)std::ceil((FirstContextNs + ProbeNs) / S);
}

Expected<Calibration> loadCalibration(StringRef Path) {
  auto Parsed = readJsonObject("calibration", Path);
  if (!Parsed)
    return Parsed.takeError();
  const json::Object *Top = Parsed->getAsObject();
  const json::Object *Costs = Top->getObject("costs_ns");
  const json::Array *Meas = Top->getArray("measurements");
  if (!Costs || !Meas)
    return bad(Path, "no costs_ns or measurements (not written by mc-calibrate)");
  Calibration C;
  C.Path = Path.str();
  auto Num = [&](StringRef Key) { return Costs->getNumber(Key); };
  auto First = Num("first_context");
  if (!First)
    return bad(Path, "no costs_ns.first_context (made by an older mc-calibrate): run "
                     "`syscluster calibrate --recalibrate` again");
  auto Crossing = Num("crossing"), Statx = Num("statx"), Fstatfs = Num("fstatfs");
  if (!Crossing || !Statx || !Fstatfs)
    return bad(Path, "costs_ns lacks crossing, statx or fstatfs");
  C.FirstContextNs = *First;
  C.CrossingNs = *Crossing;
  // The gate: fstat + lseek; libmulticall's probe: statx of both ends,
  // fstatfs, an lseek back, a pread restoring the buffer at the end.
  C.ProbeNs = 3 * *Statx + *Fstatfs + 3 * *Crossing;
  for (const json::Value &V : *Meas) {
    const json::Object *M = V.getAsObject();
    if (!M || M->getString("kind") != "copy-loop.file")
      continue;
    const json::Array *D = M->getArray("direct_ns"), *F = M->getArray("fusion_ns");
    if (!D || !F || D->empty() || D->size() != F->size())
      return bad(Path, "copy-loop.file has no direct_ns/fusion_ns pair");
    // A direct block costs the same at any length: the median over all
    // (as mc-calibrate decides; one figure disturbed by load does not
    // count); the fused one at the longest batch, what each further block
    // of a long copy costs.
    std::vector<double> Direct;
    for (const json::Value &X : *D)
      if (auto N = X.getAsNumber())
        Direct.push_back(*N);
    auto Fn = F->back().getAsNumber();
    if (Direct.empty() || !Fn)
      return bad(Path, "copy-loop.file was not measured (null)");
    std::sort(Direct.begin(), Direct.end());
    size_t H = Direct.size() / 2;
    C.DirectNs = Direct.size() % 2 ? Direct[H] : (Direct[H - 1] + Direct[H]) / 2;
    C.FusedNs = *Fn;
    return C;
  }
  return bad(Path, "no copy-loop.file measurement");
}

} // namespace syscluster
