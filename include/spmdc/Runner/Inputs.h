//===- Inputs.h - the step's logical inputs, block by block -----*- C++ -*-===//
//
// Each input of the step is a logical tensor: from a --params or --data
// file where the file has it, else from the initial values the module or
// program carries, else the deterministic initialisation (Init.h). A rank
// reads or generates only its own block of it.
//
//===----------------------------------------------------------------------===//

#ifndef SPMDC_RUNNER_INPUTS_H
#define SPMDC_RUNNER_INPUTS_H

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace spmdc::interp {
struct Tensor;
} // namespace spmdc::interp
namespace spmdc::rt {
class SafeTensorsReader;
struct StoredTensor;
} // namespace spmdc::rt
namespace spmdc::tg {
struct GraphValueInfo;
} // namespace spmdc::tg

namespace spmdc::runner {

class Checkpoint;
class Dataset;

class InputBuilder {
public:
  /// `seed`: the deterministic initialisation's.
  explicit InputBuilder(uint64_t seed);
  ~InputBuilder();

  /// Initial values a compiled module carries: its weights section.
  std::unique_ptr<rt::SafeTensorsReader> moduleWeights;

  /// The data inputs of each step, where --dataset gives them, and the
  /// batch to draw from it (0 for the first step).
  std::unique_ptr<Dataset> dataset;
  int64_t batch = 0;

  /// The checkpoint a run resumes from (--resume): the parameters and
  /// state it holds come from it, before any file or initial value.
  Checkpoint *checkpoint = nullptr;

  /// Threads buildF32InPlace may use: the rank's (spmd-run --threads).
  int threads = 1;

  /// The seed of the deterministic initialisation (a resumed run takes its
  /// checkpoint's).
  void setSeed(uint64_t newSeed) { seed = newSeed; }

  /// Opens the --params and --data files (empty: none); false with `error`
  /// set on failure.
  bool openFiles(const std::string &paramsPath, const std::string &dataPath,
                 std::string &error);

  /// Builds the block at `offsets` of `sizes` of the logical tensor `info`
  /// describes; false with `error` set.
  bool build(const tg::GraphValueInfo &info,
             const std::vector<int64_t> &offsets,
             const std::vector<int64_t> &sizes, interp::Tensor &block,
             std::string &error);

  /// Whether build() would give `info` all zeros (the deterministic
  /// initialisation of optimizer state).
  bool isZeros(const tg::GraphValueInfo &info) const;

  /// What buildF32InPlace did.
  enum class InPlace { Built, NotHere, Failed };

  /// Fills `out`, the f32 block at `offsets` of `sizes` of `info`'s
  /// tensor, with exactly the values build() would give rounded to f32,
  /// where they come from a file (--params, --data, a module's weights, an
  /// initial value read in place) or from the deterministic
  /// initialisation: large blocks on the rank's threads, and no f64 copy.
  /// NotHere where build() is the way; Failed with `error` set.
  InPlace buildF32InPlace(const tg::GraphValueInfo &info,
                          const std::vector<int64_t> &offsets,
                          const std::vector<int64_t> &sizes, float *out,
                          std::string &error) const;

private:
  /// The deterministic initialisation's kind and bound for `info` (the
  /// Init.h kinds); false with `error` set for an integer input of no
  /// known range.
  bool initKindOf(const tg::GraphValueInfo &info, int &kind, int64_t &bound,
                  std::string &error) const;
  /// Where an input's values come from, in build()'s order: the dataset,
  /// the checkpoint, a --params/--data file, the module's weights, an
  /// initial value the program refers to in a file or carries as a
  /// literal, none (a parameter a --params file lacks: an error), or the
  /// deterministic initialisation.
  enum class Source {
    Dataset,
    Checkpoint,
    File,
    ModuleWeights,
    InitRef,
    Literal,
    Missing,
    Init
  };
  Source sourceOf(const tg::GraphValueInfo &info) const;
  /// Whether `source` is a tensor stored in a file (storedTensor).
  static bool isStored(Source source) {
    return source == Source::File || source == Source::ModuleWeights ||
           source == Source::InitRef;
  }
  /// Where the values of `info`, from a stored `source`, lie; false with
  /// `error` set if they do not fit it.
  bool storedTensor(const tg::GraphValueInfo &info, Source source,
                    rt::StoredTensor &stored, std::string &error) const;
  /// Says which initial value a read `error` was of.
  static void explainReadError(const tg::GraphValueInfo &info, Source source,
                               std::string &error);

  uint64_t seed;
  std::unique_ptr<rt::SafeTensorsReader> params, data;
};

} // namespace spmdc::runner

#endif // SPMDC_RUNNER_INPUTS_H
