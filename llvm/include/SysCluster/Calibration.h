//===- Calibration.h - what a multi-call gains on the host ----------------===//
//
// The part of libmulticall's calibration (mc-calibrate, written by
// `syscluster calibrate` as multicall-calibration.json) the pass needs to
// decide whether a region gains on the host it compiles for (issue 12,
// "never a slower program"): the cost of a program's first context, of the
// calls that classify a copy's descriptors, and the saving per block of the
// fused copy loop.  Found where libmulticall finds it, so that the pass and
// the rebuilt program read the same file.
//
//===----------------------------------------------------------------------===//
#ifndef SYSCLUSTER_CALIBRATION_H
#define SYSCLUSTER_CALIBRATION_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace syscluster {

struct Calibration {
  std::string Path;
  double FirstContextNs = 0; // costs_ns.first_context: an auto context, with the calibration read
  double FirstFusionNs = 0;  // costs_ns.first_fusion_context; 0 in a file from an older mc-calibrate
  double ProbeNs = 0;        // the gate's fstat+lseek, the library's statx x2, fstatfs, lseek, pread
  double CopyFixedNs = -1;   // costs_ns.fused_copy_fixed; -1 in a file from an older mc-calibrate
  double DirectNs = 0;       // copy-loop.file: a block copied by read+write, median of all batches
  double FusedNs = 0;        // the same block in the looped multi-call, median of the 3 longest batches
  double CrossingNs = 0;      // costs_ns.crossing
  /// copy-block.file (mc-calibrate writes it since 2026-11): a block of
  /// Bytes copied by read+write and by the fused loop, ns per block of a
  /// long copy, ascending by Bytes; empty in a file from an older
  /// mc-calibrate.
  struct BlockPoint {
    uint64_t Bytes;
    double DirectNs, FusedNs;
  };
  std::vector<BlockPoint> Blocks;
  /// decisions.min_run: the fewest calls from which a fusion rule pays on
  /// an unregistered descriptor of a class ("writev.file" -> 2).
  std::map<std::string, unsigned> MinRun;
  /// The fewest calls from which the fusion rule Rule ("writev") pays on
  /// some descriptor class, with that class; 0 when no class is measured.
  std::pair<unsigned, std::string> fewestCalls(llvm::StringRef Rule) const;
  /// What the fused loop saves per block, and which measurement says so.
  struct Saving {
    double Ns;                // direct - fused, per block
    double DirectNs, FusedNs; // the figures it comes from (for the remark)
    std::string How;          // "measured at 8192 B by copy-block.file", ...
  };
  /// The saving per block of Bytes: copy-block.file's figure at that size,
  /// interpolated between the two sizes measured around it; below the
  /// smallest size, its two crossings and the share of the rest its size
  /// has; above the largest (or in an older file, above copy-loop.file's
  /// 4096 B), only its two crossings -- no measurement, no credit.
  Saving savingPerBlock(uint64_t Bytes) const;
  /// A cost a priced copy loop pays once per call, in ns.
  struct Charge {
    double Ns;
    const char *What; // the figure charged, for the remark
  };
  /// The first context of a priced copy loop: the runtime gives it a
  /// fusion context (llvm/runtime/write_read_loop.c), so
  /// first_fusion_context; first_context where the calibration lacks it.
  Charge copyFirstContext() const;
  /// What a priced copy pays per call besides its first context and beyond
  /// its saving per block (the gate, the probes, the read taken back, the
  /// buffer refilled): costs_ns.fused_copy_fixed, measured; where the
  /// calibration lacks it, the probes' calls (ProbeNs).  What is the
  /// remark's name for it.
  Charge copyFixed() const;
  /// Blocks of Bytes a copy needs for the multi-call to pay for its first
  /// context (copyFirstContext) and fixed cost (copyFixed); 0 when no
  /// number of blocks does.
  unsigned long breakEvenBlocks(uint64_t Bytes) const;
};

/// The file libmulticall reads: $MULTICALL_CALIBRATION, else
/// $XDG_CACHE_HOME/syscluster/multicall-calibration.json, else
/// $HOME/.cache/syscluster/...; empty when none is named ("none").
std::string defaultCalibrationPath();

/// Reads Path; the error names the file and what is missing.
llvm::Expected<Calibration> loadCalibration(llvm::StringRef Path);

} // namespace syscluster

#endif
