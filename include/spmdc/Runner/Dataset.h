//===- Dataset.h - a new batch of the data inputs every step ----*- C++ -*-===//
//
// spmd-run --dataset: a flat token file (nanoGPT's train.bin, uint16 or
// uint32 ids) cut into windows of seq + 1 tokens for a language model's
// inputs and targets, or a safetensors file of samples (a leading sample
// dim, one tensor per data input). Step k draws batch k, sequentially or
// shuffled from the seed; a rank reads only its block of each batch,
// straight from the file.
//
//===----------------------------------------------------------------------===//

#ifndef SPMDC_RUNNER_DATASET_H
#define SPMDC_RUNNER_DATASET_H

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace spmdc::interp {
struct Tensor;
} // namespace spmdc::interp
namespace spmdc::tg {
struct GraphValueInfo;
} // namespace spmdc::tg

namespace spmdc::runner {

/// What --dataset and its flags ask for.
struct DatasetOptions {
  std::string path;
  /// Token width of a token file: "u16", "u32", or empty (by the file's
  /// suffix: `.u32.bin` is u32, a safetensors file is samples, else u16).
  std::string dtype;
  /// Random windows (token files) or a permutation a pass (samples) drawn
  /// from `seed`, instead of the file's order.
  bool shuffle = false;
  uint64_t seed = 0;
};

/// A dataset open for the data inputs of one step. Batches are numbered
/// from 0 (step k draws batch k - 1); what a batch holds depends only on
/// the file, the options and its number, so every rank draws the same
/// batch and a run can resume at any batch.
class Dataset {
public:
  virtual ~Dataset();

  /// Opens `options.path` for the data inputs among `arguments` (their
  /// logical types) and checks that it can feed them: null with `error`
  /// naming the file, the input and both shapes.
  static std::unique_ptr<Dataset>
  open(const DatasetOptions &options,
       const std::vector<tg::GraphValueInfo> &arguments, std::string &error);

  /// Whether the data input `name` comes from the dataset.
  virtual bool feeds(const std::string &name) const = 0;

  /// Reads the block at `offsets` of `sizes` of data input `info` (logical
  /// type) of batch `batch` into `block` (already of shape `sizes`); false
  /// with `error` set, for instance on a token id out of the input's range.
  virtual bool read(const tg::GraphValueInfo &info, int64_t batch,
                    const std::vector<int64_t> &offsets,
                    const std::vector<int64_t> &sizes, interp::Tensor &block,
                    std::string &error) = 0;

  /// One line for the logs: the file, its size and how batches are drawn.
  virtual std::string summary() const = 0;
};

} // namespace spmdc::runner

#endif // SPMDC_RUNNER_DATASET_H
