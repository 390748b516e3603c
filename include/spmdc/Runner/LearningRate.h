//===- LearningRate.h - spmd-run's learning-rate schedules ------*- C++ -*-===//
//
// The learning rate of each step (spmd-run --lr-schedule), fed to the
// step's `lr` input. A pure function of the step number, so that a run
// resumed from a checkpoint continues the same sequence. The formulas are
// nanoGPT's get_lr (train.py), with a linear decay beside its cosine one.
//
//===----------------------------------------------------------------------===//

#ifndef SPMDC_RUNNER_LEARNINGRATE_H
#define SPMDC_RUNNER_LEARNINGRATE_H

#include <cstdint>
#include <optional>
#include <string>

namespace spmdc::runner {

struct LrSchedule {
  enum class Kind { Constant, Cosine, Linear };
  Kind kind = Kind::Constant;
  /// The peak learning rate, reached when the warmup ends.
  double lr = 0;
  /// Where cosine and linear decay end, at `totalSteps`.
  double minLr = 0;
  int64_t warmupSteps = 0;
  int64_t totalSteps = 0;

  /// The learning rate of step `step` (1-based). With i = step - 1
  /// (nanoGPT's `it`): lr (i + 1) / (W + 1) while i < W; then constant lr,
  /// or a decay over i in [W, T) from lr towards minLr by r = (i - W) /
  /// (T - W): cosine minLr + 0.5 (1 + cos(pi r)) (lr - minLr), linear
  /// minLr + (1 - r) (lr - minLr); minLr from i = T on.
  double at(int64_t step) const;

  /// "cosine", ...; and back (nullopt for an unknown name).
  static const char *name(Kind kind);
  static std::optional<Kind> kindOf(const std::string &name);
};

} // namespace spmdc::runner

#endif // SPMDC_RUNNER_LEARNINGRATE_H
