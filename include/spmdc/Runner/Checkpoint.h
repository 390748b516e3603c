//===- Checkpoint.h - sharded checkpoints, resume, export -------*- C++ -*-===//
//
// spmd-run --checkpoint-dir D --checkpoint-every N writes, every N steps,
// each rank's blocks of the parameters and optimizer state (every argument
// a result feeds back) to D/step-NNNNNN/rank-R.safetensors (a tensor with a
// dim in parts, several blocks a rank: one per piece), then one index.json
// that says which file holds which block of each logical tensor (byte
// ranges included), the step, the dataset position and the seed, and
// last points D/latest at the folder. Every file is written whole or not at
// all, and a folder gets its final name only once its index is complete, so
// a crash mid-write leaves the last good checkpoint as it was.
//
// --resume D reads the last good checkpoint: each rank reads, straight from
// the shard files (pread of byte ranges), only the parts of the stored
// blocks that overlap its own block of each tensor, so a checkpoint saved
// on one mesh resumes on another. --export-params assembles the logical
// parameters from the blocks without running anything. docs/tools.md
// describes the layout and the index.
//
//===----------------------------------------------------------------------===//

#ifndef SPMDC_RUNNER_CHECKPOINT_H
#define SPMDC_RUNNER_CHECKPOINT_H

#include "spmdc/Runner/ScatterGather.h"
#include "spmdc/Runtime/SafeTensors.h"

#include "llvm/ADT/ArrayRef.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace spmdc::tg {
struct GraphValueInfo;
} // namespace spmdc::tg

namespace spmdc::runner {

struct StepSignature;

/// What a checkpoint records besides the tensors: where the run stands.
struct CheckpointProgress {
  /// Steps done; a resumed run starts at step + 1.
  int64_t step = 0;
  /// The dataset batch the next step draws (batches are a pure function of
  /// the file, --shuffle, the seed and this number: Dataset.h).
  int64_t nextBatch = 0;
  /// The seed of the deterministic initialisation and of --shuffle; the
  /// runner keeps no other random state.
  uint64_t seed = 0;
  /// The --dataset file and --shuffle, to warn when a resume differs.
  std::string dataset;
  bool shuffle = false;
};

/// The arguments a checkpoint holds: parameters and state that a result of
/// the same role and name feeds back, in argument order.
std::vector<size_t> checkpointedArguments(const StepSignature &signature);

/// The module's identity: a hash of its arguments' names, roles, dtypes and
/// logical shapes, and of its mesh (16 hex digits).
std::string moduleIdentity(const StepSignature &signature);

/// Writes checkpoints of one run into a directory.
class CheckpointWriter {
public:
  /// `underMpi`: this process is one rank of several, which must all call
  /// write() at the same step. `f64`: float values keep their digits
  /// (--f64), as --save-params does.
  CheckpointWriter(std::string directory, const StepSignature &signature,
                   bool underMpi, bool f64)
      : directory(std::move(directory)), signature(signature),
        underMpi(underMpi), f64(f64) {}

  /// Writes the checkpoint of `progress.step`: `values` holds, for each of
  /// `localRanks`, its current value of every argument (only those of
  /// checkpointedArguments are read); `buffers`, which the first local
  /// rank 0 adds to its file, are the persistent buffers the step only
  /// reads, for --export-params. Collective under mpirun: false with
  /// `error` set on every rank when any rank failed, and the previous
  /// checkpoint stays the last good one.
  bool write(const CheckpointProgress &progress,
             llvm::ArrayRef<int64_t> localRanks, const RankValues &values,
             const std::vector<rt::NamedTensor> &buffers, std::string &error);

private:
  std::string directory;
  const StepSignature &signature;
  bool underMpi, f64;
};

/// The last good checkpoint of a directory, open for reading.
class Checkpoint {
public:
  /// Finds and opens the last good checkpoint in `directory` (D/latest's
  /// folder, or else the newest step folder with an index) and checks that
  /// every shard file is there, whole; null with `error` naming the
  /// directory or file and what is wrong.
  static std::unique_ptr<Checkpoint> open(const std::string &directory,
                                          std::string &error);
  ~Checkpoint();

  const CheckpointProgress &progress() const { return state; }
  /// The step folder and its index, for messages.
  const std::string &folder() const { return folderPath; }
  std::string indexPath() const;

  /// Checks that the checkpoint holds every checkpointed argument of
  /// `signature` with its logical shape and dtype, and nothing else: a
  /// parameter set that differs is another model, state that differs an
  /// incompatible module. False with `error` set.
  bool checkCompatible(const StepSignature &signature,
                       std::string &error) const;
  /// Whether the module signature hash equals the one that wrote it.
  bool sameModule(const StepSignature &signature) const;
  /// The mesh that wrote it, e.g. "dp=2".
  std::string meshDescription() const;

  /// Whether it holds the tensor of `role` and `name`.
  bool holds(const tg::GraphValueInfo &info) const;
  /// Reads the block at `offsets` of `sizes` of the tensor of `info`'s role
  /// and name into `block` (already of shape `sizes`): from each stored
  /// block that overlaps it, only the overlapping bytes. False with `error`
  /// set.
  bool read(const tg::GraphValueInfo &info, const std::vector<int64_t> &offsets,
            const std::vector<int64_t> &sizes, interp::Tensor &block,
            std::string &error);

  /// Bytes of tensor data read so far, and stored in all (the buffers
  /// aside): a rank reads only the parts it holds.
  uint64_t bytesRead() const { return readBytes; }
  uint64_t bytesStored() const;

  /// Writes the logical parameters and model state (under every name of
  /// each, as --save-params does) and the persistent buffers to `path`,
  /// one safetensors file; false with `error` set.
  bool exportParams(const std::string &path, std::string &error);

  /// One stored block of a tensor: in which file, where in the logical
  /// tensor, and where its bytes start in the file (row-major, `dtype`).
  struct Block {
    std::string file;
    std::vector<int64_t> offsets, sizes;
    rt::DType dtype = rt::DType::F32;
    uint64_t begin = 0;
  };
  /// One logical tensor of the index.
  struct Entry {
    std::string role, name;
    std::vector<std::string> aliases;
    /// State that is model state (a buffer), which --export-params writes.
    bool buffer = false;
    /// The module's dtype (safetensors spelling); blocks may be stored
    /// wider (f64 under --f64).
    std::string dtype;
    std::vector<int64_t> shape;
    std::vector<Block> blocks;
  };

private:
  Checkpoint() = default;
  /// The descriptor of shard file `file`, opened on first use.
  int fileDescriptor(const std::string &file, std::string &error);
  /// Fills the block at `offsets` of `sizes` of `entry`'s tensor into
  /// `out` (row-major over the block, already sized).
  bool readInto(const Entry &entry, const std::vector<int64_t> &offsets,
                const std::vector<int64_t> &sizes, std::vector<double> &out,
                std::string &error);

  std::string folderPath;
  CheckpointProgress state;
  std::string identity;
  std::vector<std::string> meshAxes;
  std::vector<int64_t> meshShape;
  /// By key "<role>/<name>".
  std::map<std::string, Entry> entries;
  std::map<std::string, int> descriptors;
  uint64_t readBytes = 0;
};

/// spmd-run --export-params FILE D: the logical parameters of D's last good
/// checkpoint to FILE; the exit code (1 after an error printed to stderr).
int exportCheckpointParams(const std::string &directory,
                           const std::string &path);

} // namespace spmdc::runner

#endif // SPMDC_RUNNER_CHECKPOINT_H
