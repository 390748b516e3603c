//===- ScatterGather.h - ranks' blocks and logical tensors ------*- C++ -*-===//
//
// Scatter: each rank of this process gets its block of each argument (per
// the argument's sharding on the mesh). Gather: a logical tensor assembled
// from every rank's blocks, under mpirun through an all-gather of the
// runtime's collectives.
//
//===----------------------------------------------------------------------===//

#ifndef SPMDC_RUNNER_SCATTERGATHER_H
#define SPMDC_RUNNER_SCATTERGATHER_H

#include "spmdc/Interpreter/Kernels.h"

#include "llvm/ADT/ArrayRef.h"

#include <string>
#include <vector>

namespace spmdc::dist {
struct Mesh;
} // namespace spmdc::dist

namespace spmdc::runner {

class CompiledStep;
class InputBuilder;
struct Sharded;
struct StepSignature;

/// Each rank's values, one list per rank this process runs.
using RankValues = std::vector<std::vector<interp::Tensor>>;

/// Builds each of `localRanks`' block of each argument of `signature` into
/// `args`, rounded to the argument's element type unless `f64`. With
/// `compiled`, each block goes into the step's buffer instead (and `args`
/// keeps empty tensors). False with `error` set.
bool scatterArguments(const StepSignature &signature,
                      llvm::ArrayRef<int64_t> localRanks, InputBuilder &inputs,
                      bool f64, CompiledStep *compiled, RankValues &args,
                      std::string &error);

/// Builds again each of `localRanks`' block of the arguments at `indices`
/// into `args` (or the step's buffers), as scatterArguments does: the data
/// inputs of a new batch (--dataset). False with `error` set.
bool rescatterArguments(const StepSignature &signature,
                        llvm::ArrayRef<size_t> indices,
                        llvm::ArrayRef<int64_t> localRanks,
                        InputBuilder &inputs, bool f64, CompiledStep *compiled,
                        RankValues &args, std::string &error);

/// Assembles logical tensors from the values of the ranks of this process:
/// every rank of the mesh (the interpreter), or its own under mpirun, the
/// others' gathered.
class Gatherer {
public:
  /// `f64`: values keep their digits (--f64), partial sums included.
  Gatherer(const dist::Mesh &mesh, bool underMpi, bool f64)
      : mesh(mesh), underMpi(underMpi), f64(f64) {}

  /// The logical tensor of value `index` of `local` (sharded as `sharded`):
  /// each block from the first rank holding it, summed over the partial
  /// axes. Warns, naming `label`, if a replica differs. Under mpirun every
  /// rank must call it, in the same order.
  interp::Tensor logical(const RankValues &local, size_t index,
                         const Sharded &sharded,
                         const std::string &label) const;

private:
  const dist::Mesh &mesh;
  bool underMpi, f64;
};

} // namespace spmdc::runner

#endif // SPMDC_RUNNER_SCATTERGATHER_H
