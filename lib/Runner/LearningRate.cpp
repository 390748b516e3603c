//===- LearningRate.cpp - spmd-run's learning-rate schedules --------------===//

#include "spmdc/Runner/LearningRate.h"

#include <cmath>

namespace spmdc::runner {

double LrSchedule::at(int64_t step) const {
  // Written as nanoGPT's get_lr(it) computes it, operation for operation,
  // so that its Python gives the same doubles.
  int64_t it = step - 1;
  if (it < warmupSteps)
    return lr * static_cast<double>(it + 1) /
           static_cast<double>(warmupSteps + 1);
  if (kind == Kind::Constant)
    return lr;
  if (it >= totalSteps)
    return minLr;
  double ratio = static_cast<double>(it - warmupSteps) /
                 static_cast<double>(totalSteps - warmupSteps);
  double coeff =
      kind == Kind::Cosine ? 0.5 * (1.0 + std::cos(M_PI * ratio)) : 1.0 - ratio;
  return minLr + coeff * (lr - minLr);
}

const char *LrSchedule::name(Kind kind) {
  switch (kind) {
  case Kind::Constant:
    return "constant";
  case Kind::Cosine:
    return "cosine";
  case Kind::Linear:
    return "linear";
  }
  return "?";
}

std::optional<LrSchedule::Kind> LrSchedule::kindOf(const std::string &name) {
  for (Kind kind : {Kind::Constant, Kind::Cosine, Kind::Linear})
    if (name == LrSchedule::name(kind))
      return kind;
  return std::nullopt;
}

} // namespace spmdc::runner
