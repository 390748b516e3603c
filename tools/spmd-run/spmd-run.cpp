//===- spmd-run.cpp - run a training step for K steps ---------------------===//
//
// Builds the logical inputs of a graph (from safetensors files or the
// deterministic initialisation) and gives each rank its block of them (per
// the argument's dist.sharding, on the module's dist.mesh), runs the step K
// times on all ranks feeding updated parameters and optimizer state back by
// name, prints `step K loss X` on stdout and optionally saves the logical
// parameters and outputs, assembled from the ranks' blocks.
//
//===----------------------------------------------------------------------===//

#include "CompiledStep.h"
#include "CudaRuntimeLibrary.h"
#include "RunOptions.h"

#include "spmdc/Dialect/Dist/IR/Dist.h"
#include "spmdc/Dialect/TensorGraph/IR/GraphSignature.h"
#include "spmdc/InitAll.h"
#include "spmdc/Interpreter/Interpreter.h"
#include "spmdc/Runtime/Init.h"
#ifdef SPMDC_HAVE_MPI
#include "spmdc/Runtime/Collectives.h"
#endif
#include "spmdc/Runtime/SafeTensors.h"
#include "spmdc/Runtime/StoredTensor.h"
#include "spmdc/Support/Diagnostics.h"
#include "spmdc/Support/Logging.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/AsmParser/AsmParser.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <limits>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <cmath>
#include <cstdio>
#include <functional>
#include <numeric>

using namespace mlir;
using spmdc::interp::Shape;
using spmdc::interp::Tensor;

namespace {

/// This process's rank when mpirun started it (every rank checks the same
/// inputs, so only rank 0 reports what is wrong with them), else nullopt.
std::optional<int> mpirunRank() {
  for (const char *name : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"})
    if (const char *value = std::getenv(name))
      return std::atoi(value);
  return std::nullopt;
}

/// Prints `spmd-run: error: ...` and gives the exit code of bad input.
int fail(const std::string &message) {
  if (mpirunRank().value_or(0) == 0)
    llvm::errs() << "spmd-run: error: " << message << "\n";
  return 1;
}

/// Starts `ranks` copies of this spmd-run under mpirun, with the same
/// arguments (a module read from stdin is passed on in a file), and gives
/// their exit code.
int launchRanks(int argc, char **argv, const std::string &input,
                llvm::StringRef inputBytes, int64_t ranks) {
  std::string modulePath = input;
  llvm::SmallString<128> temporary;
  if (input == "-") {
    int fd;
    if (llvm::sys::fs::createTemporaryFile("spmd-run", "mod", fd, temporary))
      return fail("cannot write the module from stdin to a temporary file");
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    os << inputBytes;
    modulePath = temporary.str().str();
  }
  std::string self = llvm::sys::fs::getMainExecutable(argv[0], (void *)&fail);
  std::vector<std::string> command = {"mpirun", "--allow-run-as-root",
                                      "--oversubscribe", "--bind-to", "none",
                                      "-np", std::to_string(ranks), self};
  for (int i = 1; i < argc; ++i)
    command.push_back(argv[i] == input ? modulePath : argv[i]);
  std::vector<llvm::StringRef> commandRefs(command.begin(), command.end());
  llvm::ErrorOr<std::string> mpirun = llvm::sys::findProgramByName("mpirun");
  if (!mpirun)
    return fail("this module runs on " + std::to_string(ranks) +
                " ranks, which needs mpirun (Debian: openmpi-bin); or start "
                "spmd-run under mpirun -np " +
                std::to_string(ranks));
  spdlog::info("starting {} ranks: {}", ranks, llvm::join(commandRefs, " "));
  std::string error;
  int rc = llvm::sys::ExecuteAndWait(*mpirun, commandRefs, std::nullopt, {}, 0,
                                     0, &error);
  if (!temporary.empty())
    llvm::sys::fs::remove(temporary);
  if (rc < 0)
    return fail("mpirun failed: " + error);
  return rc == 0 ? 0 : 1;
}

std::optional<spmdc::rt::DType> dtypeOf(Type element) {
  using spmdc::rt::DType;
  if (element.isF64())
    return DType::F64;
  if (element.isF32())
    return DType::F32;
  if (element.isF16())
    return DType::F16;
  if (element.isBF16())
    return DType::BF16;
  if (element.isInteger(64))
    return DType::I64;
  if (element.isInteger(32))
    return DType::I32;
  if (element.isInteger(1))
    return DType::Bool;
  return std::nullopt;
}

std::string shapeString(llvm::ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

/// The logical inputs of the step: a tensor from a file where the file has
/// it, the deterministic initialisation otherwise.
class InputBuilder {
public:
  InputBuilder(const spmdc::RunOptions &options) : options(options) {}

  /// Initial values a compiled module carries: its weights section.
  std::unique_ptr<spmdc::rt::SafeTensorsReader> moduleWeights;

  /// Opens the --params/--data files; false with `error` set on failure.
  bool openFiles(std::string &error) {
    if (!options.params.empty() &&
        !(params = spmdc::rt::SafeTensorsReader::open(options.params, error)))
      return false;
    if (!options.data.empty() &&
        !(data = spmdc::rt::SafeTensorsReader::open(options.data, error)))
      return false;
    return true;
  }

  /// Builds the block at `offsets` of `sizes` of the logical tensor `info`
  /// describes: a rank reads or generates its block only.
  bool build(const spmdc::tg::GraphValueInfo &info,
             const std::vector<int64_t> &offsets,
             const std::vector<int64_t> &sizes, Tensor &block,
             std::string &error) {
    std::vector<int64_t> shape(info.type.getShape().begin(),
                               info.type.getShape().end());
    if (info.type.getNumElements() > (int64_t(1) << 30)) {
      error = "input '" + info.name + "' has " +
              std::to_string(info.type.getNumElements()) +
              " elements; spmd-run holds up to 2^30 per tensor";
      return false;
    }
    block = Tensor(sizes);
    spmdc::rt::SafeTensorsReader *file =
        info.role == "data" ? data.get() : params.get();
    if (file && file->find(info.name))
      return readFromFile(*file, info, offsets, sizes, block, error);
    // Initial values a module carries (a torch.export archive's weights).
    bool initialized = info.role == "param" || info.role == "state";
    if (initialized && moduleWeights && moduleWeights->find(info.name))
      return readFromFile(*moduleWeights, info, offsets, sizes, block, error);
    // Initial values the program refers to, read in place from their file.
    if (info.initRef) {
      std::optional<spmdc::rt::DType> dtype =
          dtypeOf(info.type.getElementType());
      if (!dtype) {
        error = "'" + info.name + "' has an initial value of an unsupported "
                "dtype";
        return false;
      }
      spmdc::rt::StoredTensor stored;
      stored.path = info.initRef->file;
      stored.dataOffset = info.initRef->offset;
      stored.dataBytes = info.initRef->bytes;
      stored.dtype = *dtype;
      stored.shape = shape;
      stored.strides = info.initRef->strides;
      stored.storageOffset = info.initRef->storageOffset;
      if (!spmdc::rt::readStoredBlock(stored, offsets, sizes, block.data,
                                      error)) {
        error = "the initial value of '" + info.name + "' (" +
                info.initRef->entry + "): " + error;
        return false;
      }
      return true;
    }
    // Weights the program carries as a literal.
    if (info.initialValue) {
      auto dense = llvm::dyn_cast<DenseElementsAttr>(info.initialValue);
      if (!dense) {
        error = "parameter '" + info.name + "' has an unreadable initial value";
        return false;
      }
      auto initShape = dense.getType().getShape();
      if (std::vector<int64_t>(initShape.begin(), initShape.end()) != shape) {
        error = "parameter '" + info.name + "' has an initial value of shape " +
                shapeString(initShape) + " but the program expects " +
                shapeString(shape);
        return false;
      }
      Tensor logical(shape);
      size_t i = 0;
      if (llvm::isa<FloatType>(dense.getElementType()))
        for (const APFloat &v : dense.getValues<APFloat>())
          logical.data[i++] = v.convertToDouble();
      else
        for (const APInt &v : dense.getValues<APInt>())
          logical.data[i++] = static_cast<double>(v.getSExtValue());
      block = logical;
      for (size_t d = 0; d < sizes.size(); ++d)
        if (sizes[d] != shape[d])
          block = spmdc::interp::slice(block, d, offsets[d],
                                       offsets[d] + sizes[d], 1);
      return true;
    }
    // A --params file must hold every parameter: a missing one is far more
    // likely a wrong file than a wish for random values.
    if (file && info.role == "param") {
      error = file->path() + ": has no tensor '" + info.name + "'";
      return false;
    }
    int kind = SPMD_INIT_ZERO;
    int64_t bound = 0;
    if (info.role == "param") {
      kind = SPMD_INIT_PARAM;
    } else if (info.role == "data") {
      if (llvm::isa<FloatType>(info.type.getElementType())) {
        kind = SPMD_INIT_DATA;
      } else if (info.type.getElementType().isInteger(1)) {
        kind = SPMD_INIT_INDEX;
        bound = 2;
      } else if (info.indexBound) {
        kind = SPMD_INIT_INDEX;
        bound = *info.indexBound;
      } else {
        error = "integer input '" + info.name +
                "' has no known range (no embedding or loss uses it): give "
                "it in --data";
        return false;
      }
    }
    spmd_init_block(options.seed, info.name.c_str(), shape.data(),
                    static_cast<int32_t>(shape.size()), kind, bound,
                    offsets.data(), sizes.data(), block.data.data());
    return true;
  }

private:
  bool readFromFile(spmdc::rt::SafeTensorsReader &file,
                    const spmdc::tg::GraphValueInfo &info,
                    const std::vector<int64_t> &offsets,
                    const std::vector<int64_t> &sizes, Tensor &block,
                    std::string &error) {
    const spmdc::rt::TensorInfo *stored = file.find(info.name);
    std::vector<int64_t> shape(info.type.getShape().begin(),
                               info.type.getShape().end());
    if (stored->shape != shape) {
      error = file.path() + ": tensor '" + info.name + "' has shape " +
              shapeString(stored->shape) + " but the program expects " +
              shapeString(shape);
      return false;
    }
    return file.readSliceAsDouble(info.name, offsets, sizes, block.data,
                                  error);
  }

  const spmdc::RunOptions &options;
  std::unique_ptr<spmdc::rt::SafeTensorsReader> params, data;
};

/// A value's sharding over the mesh and the logical type it is a block of.
struct Sharded {
  spmdc::dist::TensorSharding sharding;
  RankedTensorType logicalType;
};

/// `local`, a block of `sharding` on `mesh`, with the logical type it is a
/// block of.
Sharded shardedOf(const spmdc::dist::TensorSharding &sharding,
                  RankedTensorType local, const spmdc::dist::Mesh &mesh) {
  llvm::SmallVector<int64_t> shape(local.getShape());
  for (auto [size, axes] : llvm::zip(shape, sharding.dims))
    size *= mesh.groupSize(axes);
  return Sharded{sharding,
                 RankedTensorType::get(shape, local.getElementType())};
}

/// Reads an argument's or result's `dist.sharding` (absent: replicated);
/// nullopt with `error` set when it is malformed.
std::optional<Sharded> readSharding(spmdc::dist::ShardingAttr attr,
                                    const spmdc::tg::GraphValueInfo &info,
                                    const std::string &what,
                                    const spmdc::dist::Mesh &mesh, bool hasMesh,
                                    std::string &error) {
  std::string place = what + " '" + info.name + "'";
  RankedTensorType local = info.type;
  if (!attr)
    return Sharded{spmdc::dist::TensorSharding::replicated(local.getRank()),
                   local};
  auto describeAttr = [&] {
    std::string text;
    llvm::raw_string_ostream os(text);
    os << attr;
    return text;
  };
  if (!hasMesh) {
    error = place + " has a '" + spmdc::dist::kShardingAttr.str() +
            "' but the module has no '" + spmdc::dist::kMeshAttr.str() + "'";
    return std::nullopt;
  }
  FailureOr<spmdc::dist::TensorSharding> sharding =
      spmdc::dist::TensorSharding::fromAttr(attr, mesh, local.getRank());
  if (failed(sharding)) {
    error = place + " has a malformed '" + spmdc::dist::kShardingAttr.str() +
            "' " + describeAttr() +
            ": expected one list of the mesh's axes per dim";
    return std::nullopt;
  }
  llvm::SmallVector<int> used = sharding->shardedAxes();
  used.append(sharding->partial.begin(), sharding->partial.end());
  llvm::SmallVector<bool> seen(mesh.axes.size(), false);
  for (int axis : used) {
    if (seen[axis]) {
      error = place + " uses mesh axis '" + mesh.axes[axis] +
              "' twice in its sharding " + sharding->str(mesh);
      return std::nullopt;
    }
    seen[axis] = true;
  }
  return shardedOf(*sharding, local, mesh);
}

/// e.g. "tensor<4x2xf32> [S(dp), R]".
std::string describe(RankedTensorType type, const Sharded &sharded,
                     const spmdc::dist::Mesh &mesh) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << type << " " << sharded.sharding.str(mesh);
  return text;
}

/// Adds `block` into `logical` at `offsets`.
void addBlock(Tensor &logical, const Tensor &block,
              llvm::ArrayRef<int64_t> offsets) {
  std::vector<int64_t> strides = spmdc::interp::stridesOf(logical.shape);
  std::vector<int64_t> index(block.shape.size(), 0);
  for (int64_t i = 0; i < block.numel(); ++i) {
    int64_t flat = 0;
    for (size_t d = 0; d < index.size(); ++d)
      flat += (offsets[d] + index[d]) * strides[d];
    logical.data[flat] += block.data[i];
    for (int d = static_cast<int>(index.size()) - 1; d >= 0; --d) {
      if (++index[d] < block.shape[d])
        break;
      index[d] = 0;
    }
  }
}

bool sameValues(const Tensor &a, const Tensor &b) {
  if (a.shape != b.shape)
    return false;
  for (size_t i = 0; i < a.data.size(); ++i)
    if (a.data[i] != b.data[i] &&
        !(std::isnan(a.data[i]) && std::isnan(b.data[i])))
      return false;
  return true;
}

/// The logical tensor of value `index` of each rank's values: each block
/// from the first rank holding it, summed over the partial axes (each member
/// of a partial group holds a summand). Warns if a replica differs.
Tensor assemble(const std::vector<std::vector<Tensor>> &perRank, size_t index,
                const Sharded &sharded, const spmdc::dist::Mesh &mesh, bool f64,
                const std::string &label) {
  const spmdc::dist::TensorSharding &sharding = sharded.sharding;
  Shape shape(sharded.logicalType.getShape().begin(),
              sharded.logicalType.getShape().end());
  Tensor logical(shape);
  llvm::SmallVector<bool> involved(mesh.axes.size(), false);
  for (int axis : sharding.shardedAxes())
    involved[axis] = true;
  for (int axis : sharding.partial)
    involved[axis] = true;
  bool warned = false;
  for (int64_t rank = 0; rank < mesh.numRanks(); ++rank) {
    // The first rank holding the same block (and summand) as `rank`.
    llvm::SmallVector<int64_t> coords = mesh.coordinates(rank);
    for (size_t axis = 0; axis < coords.size(); ++axis)
      if (!involved[axis])
        coords[axis] = 0;
    int64_t first = mesh.rankAt(coords);
    const Tensor &block = perRank[rank][index];
    if (first != rank) {
      if (!warned && !sameValues(block, perRank[first][index])) {
        spdlog::warn("{}: rank {} holds a different value than rank {}, "
                     "which should be its replica",
                     label, rank, first);
        warned = true;
      }
      continue;
    }
    llvm::SmallVector<int64_t> offsets, sizes;
    sharding.blockOf(rank, shape, mesh, offsets, sizes);
    addBlock(logical, block, offsets);
  }
  Type element = sharded.logicalType.getElementType();
  if (!sharding.partial.empty() && (!f64 || !llvm::isa<FloatType>(element)))
    for (double &v : logical.data)
      v = spmdc::interp::roundToElementType(v, element);
  return logical;
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  spmdc::RunOptions options;
  if (std::optional<int> exitCode =
          spmdc::parseRunOptions(argc, argv, options))
    return *exitCode;
  spmdc::setupLogging("spmd-run", options.logLevel);
#ifdef __GLIBC__
  // A step allocates and frees the same large buffers every time; keep
  // them in the heap rather than mmap'ing fresh pages the kernel must zero
  // on every step (page faults were a sixth of gpt2 medium's step and a
  // third of GPT-2 small's).
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, std::numeric_limits<int>::max());
#endif

  DialectRegistry registry;
  spmdc::registerAllDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();

  std::string errorMessage;
  llvm::SourceMgr sourceMgr;
  if (!spmdc::loadMainFile(sourceMgr, options.input, errorMessage))
    return fail(errorMessage);
  llvm::StringRef inputBytes =
      sourceMgr.getMemoryBuffer(sourceMgr.getMainFileID())->getBuffer();
  spmdc::ToolDiagnosticHandler diagnostics(sourceMgr, context, llvm::errs());

  // The step's signature, each value's sharding on the mesh, and how to run
  // one step on all ranks: a compiled module's JIT-compiled step, or IR
  // through the reference interpreter.
  std::vector<spmdc::tg::GraphValueInfo> argInfos, resultInfos;
  std::vector<Sharded> argShardings, resultShardings;
  spmdc::dist::Mesh mesh;
  using RankValues = std::vector<std::vector<Tensor>>;
  std::function<FailureOr<RankValues>(const RankValues &)> runStep;
  // Set for a module of several ranks run under mpirun: this process is one
  // rank, and gathers what it prints or saves from the others.
  bool underMpi = false;
  std::optional<spmdc::ModuleFile> moduleFile;
  OwningOpRef<ModuleOp> module;
  std::unique_ptr<spmdc::CompiledStep> compiled;

  if (spmdc::ModuleFile::looksLikeModule(inputBytes)) {
    if (options.interpret)
      return fail(options.input + ": is a compiled module; --interpret runs "
                                  "IR (spmdc --emit=<stage> other than module)");
    if (options.f64)
      return fail("--f64 applies to --interpret; a compiled module computes "
                  "in its own dtypes");
    moduleFile = spmdc::ModuleFile::parse(inputBytes, errorMessage);
    if (!moduleFile)
      return fail(options.input + ": " + errorMessage);
    const spmdc::ModuleFile *file = &*moduleFile;
    for (size_t axis = 0; axis < file->meshAxes.size(); ++axis) {
      mesh.axes.push_back(file->meshAxes[axis]);
      mesh.shape.push_back(axis < file->meshShape.size()
                               ? file->meshShape[axis]
                               : 0);
    }
    if (file->meshShape.size() != file->meshAxes.size() ||
        llvm::any_of(mesh.shape, [](int64_t size) { return size < 1; }))
      return fail(options.input + ": the module's mesh is malformed");
    if (mesh.numRanks() != options.nranks)
      return fail("the module's mesh has " + std::to_string(mesh.numRanks()) +
                  " ranks but --nranks is " + std::to_string(options.nranks));
    // Said once, before any rank starts.
    if (file->target == "cuda" && !mpirunRank())
      if (std::optional<std::string> why =
              spmdc::CudaRuntimeLibrary::unavailable())
        return fail(options.input + ": " + *why);
    if (mesh.numRanks() > 1) {
#ifdef SPMDC_HAVE_MPI
      if (!mpirunRank())
        return launchRanks(argc, argv, options.input, inputBytes,
                           mesh.numRanks());
      underMpi = true;
#else
      return fail("this spmd-run was built without MPI, so it runs modules "
                  "of one rank only");
#endif
    }
    auto toInfos = [&](const std::vector<spmdc::ModuleValue> &values,
                       std::vector<spmdc::tg::GraphValueInfo> &infos) {
      for (const spmdc::ModuleValue &value : values) {
        Type element = parseType(value.dtype, &context);
        if (!element || !dtypeOf(element)) {
          errorMessage = options.input + ": value '" + value.name +
                         "' has an unknown dtype '" + value.dtype + "'";
          return false;
        }
        spmdc::tg::GraphValueInfo info;
        info.name = value.name;
        info.role = value.role;
        info.type = RankedTensorType::get(value.shape, element);
        info.indexBound = value.indexBound;
        info.aliases = value.aliases;
        info.buffer = value.buffer;
        infos.push_back(std::move(info));
      }
      return true;
    };
    if (!toInfos(file->arguments, argInfos) ||
        !toInfos(file->results, resultInfos))
      return fail(errorMessage);
    // A value's sharding, checked against the mesh; its logical type.
    auto toSharded = [&](const spmdc::ModuleValue &value,
                         RankedTensorType local) -> std::optional<Sharded> {
      spmdc::dist::TensorSharding sharding =
          spmdc::dist::TensorSharding::replicated(local.getRank());
      if (!value.shardDims.empty() || !value.partialAxes.empty()) {
        if (value.shardDims.size() != static_cast<size_t>(local.getRank()))
          return std::nullopt;
        for (auto [dim, axes] : llvm::enumerate(value.shardDims))
          sharding.dims[dim].assign(axes.begin(), axes.end());
        sharding.partial.assign(value.partialAxes.begin(),
                                value.partialAxes.end());
      }
      for (int axis : sharding.shardedAxes())
        if (axis < 0 || axis >= static_cast<int>(mesh.axes.size()))
          return std::nullopt;
      for (int axis : sharding.partial)
        if (axis < 0 || axis >= static_cast<int>(mesh.axes.size()))
          return std::nullopt;
      return shardedOf(sharding, local, mesh);
    };
    auto readShardings = [&](const std::vector<spmdc::ModuleValue> &values,
                             const std::vector<spmdc::tg::GraphValueInfo> &infos,
                             std::vector<Sharded> &out) {
      for (auto [value, info] : llvm::zip(values, infos)) {
        std::optional<Sharded> sharded = toSharded(value, info.type);
        if (!sharded) {
          errorMessage = options.input + ": value '" + value.name +
                         "' has a malformed sharding";
          return false;
        }
        out.push_back(std::move(*sharded));
      }
      return true;
    };
    if (!readShardings(file->arguments, argInfos, argShardings) ||
        !readShardings(file->results, resultInfos, resultShardings))
      return fail(errorMessage);
    runStep = [&](const RankValues &args) -> FailureOr<RankValues> {
      RankValues results(1);
      if (!compiled->run(results[0], errorMessage)) {
        spdlog::error("{}", errorMessage);
        return failure();
      }
      return results;
    };
  } else {
    if (!options.interpret)
      return fail(options.input +
                  ": is IR, not a compiled module: run it with --interpret, "
                  "or compile it with spmdc --emit=module");
    module = parseSourceFile<ModuleOp>(sourceMgr, &context);
    if (!module || failed(spmdc::tg::verifyGraphSignature(*module)))
      return 1;
    func::FuncOp entry = spmdc::tg::getEntryFunction(*module);
    spmdc::tg::annotateIndexBounds(entry);
    argInfos = spmdc::tg::getArgumentInfos(entry);
    resultInfos = spmdc::tg::getResultInfos(entry);

    // The mesh: the program's, or one rank of no axes.
    bool sharded = (*module)->hasAttr(spmdc::dist::kMeshAttr);
    if (sharded) {
      FailureOr<spmdc::dist::Mesh> programMesh =
          spmdc::dist::Mesh::of(*module);
      if (failed(programMesh))
        return 1;
      mesh = *programMesh;
      if (mesh.numRanks() != options.nranks)
        return fail("the program's mesh has " +
                    std::to_string(mesh.numRanks()) + " ranks but --nranks is " +
                    std::to_string(options.nranks));
    } else if (options.nranks != 1) {
      return fail("this program has no device mesh (it was not sharded), so "
                  "it runs on one rank; use --nranks 1");
    }

    // Each argument's and result's sharding and logical type. A program
    // not yet partitioned (--emit=propagate) only plans shardings: it
    // still means the single-device step.
    bool planned = (*module)->hasAttr(spmdc::dist::kPlannedMeshAttr);
    auto shardingOf = [&](spmdc::dist::ShardingAttr attr) {
      return planned && !sharded ? spmdc::dist::ShardingAttr() : attr;
    };
    for (size_t i = 0; i < argInfos.size(); ++i) {
      auto sharding = readSharding(shardingOf(entry.getArgAttrOfType<spmdc::dist::ShardingAttr>(
                                       i, spmdc::dist::kShardingAttr)),
                                   argInfos[i], "argument", mesh, sharded,
                                   errorMessage);
      if (!sharding)
        return fail(errorMessage);
      if (!sharding->sharding.partial.empty())
        return fail("argument '" + argInfos[i].name + "' is partial (" +
                    sharding->sharding.str(mesh) +
                    "): an input must be replicated or sharded");
      argShardings.push_back(std::move(*sharding));
    }
    for (size_t i = 0; i < resultInfos.size(); ++i) {
      auto sharding = readSharding(shardingOf(entry.getResultAttrOfType<spmdc::dist::ShardingAttr>(
                                       i, spmdc::dist::kShardingAttr)),
                                   resultInfos[i], "result", mesh, sharded,
                                   errorMessage);
      if (!sharding)
        return fail(errorMessage);
      resultShardings.push_back(std::move(*sharding));
    }
    spmdc::interp::InterpreterOptions interpreterOptions;
    interpreterOptions.f64 = options.f64;
    runStep = [&, entry, interpreterOptions](const RankValues &args) {
      return spmdc::interp::runFunctionSPMD(entry, args, mesh,
                                            interpreterOptions);
    };
  }
  int64_t numRanks = mesh.numRanks();
  // The ranks this process runs: all of them in the interpreter, its own
  // under mpirun.
  std::vector<int64_t> localRanks;
  if (underMpi)
    localRanks.push_back(*mpirunRank());
  else
    for (int64_t rank = 0; rank < numRanks; ++rank)
      localRanks.push_back(rank);
  bool printing = localRanks.front() == 0;

  if (!options.saveOutputs.empty() && options.steps == 0)
    return fail("--save-outputs needs at least one step");

  // A compiled module: opened first, so each input goes straight into the
  // step's buffer of its dtype.
  if (moduleFile) {
#ifdef SPMDC_HAVE_MPI
    if (underMpi)
      spmd_rt_init(nullptr, nullptr, static_cast<int32_t>(mesh.shape.size()),
                   mesh.shape.data());
#endif
    spmdc::CompiledStep::Options load;
    load.optLevel = options.optLevel;
    load.multiRank = underMpi;
    const char *localSize = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
    load.gemmThreads =
        spmdc::gemmThreads(options, localSize ? std::atoi(localSize) : 1);
    if (const char *local = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK"))
      load.localRank = std::atoi(local);
    compiled = spmdc::CompiledStep::open(*moduleFile, context, load,
                                          errorMessage);
    if (!compiled)
      return fail(options.input + ": " + errorMessage);
  }

  // Each local rank's block of each input, read or generated on its own.
  InputBuilder inputs(options);
  if (!inputs.openFiles(errorMessage))
    return fail(errorMessage);
  // A module's initial values: a rank reads its blocks from the module's
  // weights section (from a copy in a file if the module came on stdin).
  llvm::SmallString<128> stdinCopy;
  auto removeStdinCopy = llvm::make_scope_exit([&] {
    if (!stdinCopy.empty())
      llvm::sys::fs::remove(stdinCopy);
  });
  if (moduleFile && moduleFile->weightsBytes) {
    std::string path = options.input;
    if (path == "-") {
      int fd;
      if (llvm::sys::fs::createTemporaryFile("spmd-run", "mod", fd, stdinCopy))
        return fail("cannot write the module from stdin to a temporary file");
      llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
      os << inputBytes;
      path = stdinCopy.str().str();
    }
    inputs.moduleWeights = spmdc::rt::SafeTensorsReader::open(
        path, errorMessage, moduleFile->weightsOffset,
        moduleFile->weightsBytes);
    if (!inputs.moduleWeights)
      return fail(options.input + ": the module's weights: " + errorMessage);
  }
  std::vector<std::vector<Tensor>> args(localRanks.size(),
                                        std::vector<Tensor>(argInfos.size()));
  for (size_t i = 0; i < argInfos.size(); ++i) {
    spmdc::tg::GraphValueInfo logicalInfo = argInfos[i];
    logicalInfo.type = argShardings[i].logicalType;
    for (size_t k = 0; k < localRanks.size(); ++k) {
      llvm::SmallVector<int64_t> offsets, sizes;
      argShardings[i].sharding.blockOf(localRanks[k],
                                       logicalInfo.type.getShape(), mesh,
                                       offsets, sizes);
      Tensor &block = args[k][i];
      if (!inputs.build(logicalInfo, {offsets.begin(), offsets.end()},
                        {sizes.begin(), sizes.end()}, block, errorMessage))
        return fail(errorMessage);
      // An f32 argument holds f32 values, whatever the file or init gave. A
      // compiled module's store into its buffers rounds the same way (a
      // cast), except through f32 for bf16, so only those are rounded here.
      Type element = argInfos[i].type.getElementType();
      bool roundedByStore =
          moduleFile && !element.isF16() && !element.isBF16();
      if (!options.f64 && !roundedByStore)
        for (double &v : block.data)
          v = spmdc::interp::roundToElementType(v, element);
      if (compiled) {
        compiled->stage(i, block);
        std::vector<double>().swap(block.data);
      }
    }
  }

  // Results that feed the next step: updated parameters and optimizer state
  // go back to the argument of the same role and name, on each rank.
  std::vector<std::pair<size_t, size_t>> feedback;
  std::optional<size_t> lossIndex;
  for (size_t r = 0; r < resultInfos.size(); ++r) {
    if (resultInfos[r].role == "loss")
      lossIndex = r;
    for (size_t a = 0; a < argInfos.size(); ++a)
      if ((resultInfos[r].role == "param" || resultInfos[r].role == "state") &&
          argInfos[a].role == resultInfos[r].role &&
          argInfos[a].name == resultInfos[r].name) {
        if (resultShardings[r].sharding != argShardings[a].sharding ||
            resultInfos[r].type != argInfos[a].type)
          return fail(resultInfos[r].role + " '" + resultInfos[r].name +
                      "' comes back as " +
                      describe(resultInfos[r].type, resultShardings[r], mesh) +
                      " but goes in as " +
                      describe(argInfos[a].type, argShardings[a], mesh));
        feedback.emplace_back(r, a);
      }
  }

  // A compiled module: compiled (or its native code linked) once its inputs
  // are known good.
  if (compiled) {
    if (!compiled->compile(errorMessage))
      return fail(options.input + ": " + errorMessage);
    spdlog::info("running on {}", compiled->device());
    compiled->keepResident(feedback);
  }

  // Value `index` of every rank, from the values of the local ranks.
  auto allRanks = [&](const RankValues &local, size_t index) {
    RankValues perRank(numRanks, std::vector<Tensor>(1));
    if (!underMpi) {
      for (int64_t rank = 0; rank < numRanks; ++rank)
        perRank[rank][0] = local[rank][index];
      return perRank;
    }
#ifdef SPMDC_HAVE_MPI
    // Blocks are the same size on every rank (dims divide evenly).
    const Tensor &block = local[0][index];
    int64_t n = block.numel();
    std::vector<double> gathered(n * numRanks);
    int64_t shape[2] = {1, n};
    std::vector<int32_t> axes(mesh.shape.size());
    std::iota(axes.begin(), axes.end(), 0);
    spmd_all_gather(block.data.data(), gathered.data(), 2, shape, 0,
                    SPMD_DTYPE_F64, axes.data(),
                    static_cast<int32_t>(axes.size()));
    for (int64_t rank = 0; rank < numRanks; ++rank) {
      perRank[rank][0] = Tensor(block.shape);
      std::copy(gathered.begin() + rank * n, gathered.begin() + (rank + 1) * n,
                perRank[rank][0].data.begin());
    }
#endif
    return perRank;
  };

  // Fault injection for the tests: SPMD_RUN_TEST_EXIT=R:S makes rank R
  // exit with status 3 as step S begins, as a crashed rank would.
  std::optional<std::pair<int64_t, int>> injectedExit;
  if (const char *spec = std::getenv("SPMD_RUN_TEST_EXIT")) {
    long long rank;
    int step;
    if (std::sscanf(spec, "%lld:%d", &rank, &step) == 2)
      injectedExit = {rank, step};
  }

  std::vector<std::vector<Tensor>> lastOutputs;
  for (int step = 1; step <= options.steps; ++step) {
#ifdef SPMDC_HAVE_MPI
    if (underMpi)
      spmd_rt_set_step(step);
#endif
    if (injectedExit && injectedExit->second == step &&
        llvm::is_contained(localRanks, injectedExit->first)) {
      std::fflush(stdout);
      std::exit(3);
    }
    auto started = std::chrono::steady_clock::now();
    FailureOr<RankValues> results = runStep(args);
    if (failed(results))
      return fail("step " + std::to_string(step) + " failed");
    // The step alone, for benchmarks (bench/step_time.py reads it).
    spdlog::info("step {} took {:.3f} ms", step,
                 std::chrono::duration<double, std::milli>(
                     std::chrono::steady_clock::now() - started)
                     .count());
    if (lossIndex) {
      Tensor loss = assemble(allRanks(*results, *lossIndex), 0,
                             resultShardings[*lossIndex], mesh, options.f64,
                             "the loss");
      if (printing)
        std::printf("step %d loss %.9g\n", step, loss.data.front());
    }
    std::fflush(stdout);
    for (size_t k = 0; k < localRanks.size(); ++k)
      for (auto [r, a] : feedback)
        // A compiled step keeps them in its buffers; release the copies.
        args[k][a] = compiled ? Tensor() : (*results)[k][r];
    lastOutputs = std::move(*results);
  }
  // Parameters and state to save, read back from the step's buffers.
  if (compiled && !options.saveParams.empty())
    for (auto [r, a] : feedback)
      args[0][a] = compiled->argument(a);

  // Files keep each tensor's dtype, except that --f64 values keep their
  // digits; each holds the logical tensor, assembled from the ranks' blocks.
  auto savedDType = [&](Type element) {
    return options.f64 && llvm::isa<FloatType>(element)
               ? spmdc::rt::DType::F64
               : *dtypeOf(element);
  };
  if (!options.saveParams.empty()) {
    std::vector<spmdc::rt::NamedTensor> saved;
    // Parameters and model state (buffers), under their state-dict names:
    // what PyTorch's load_state_dict reads.
    for (size_t a = 0; a < argInfos.size(); ++a)
      if (argInfos[a].role == "param" ||
          (argInfos[a].role == "state" && argInfos[a].buffer)) {
        Tensor logical =
            assemble(allRanks(args, a), 0, argShardings[a], mesh, options.f64,
                     argInfos[a].role + " '" + argInfos[a].name + "'");
        // Tied weights are saved under each of their names.
        std::vector<std::string> names{argInfos[a].name};
        names.insert(names.end(), argInfos[a].aliases.begin(),
                     argInfos[a].aliases.end());
        for (const std::string &name : names)
          saved.push_back({name, savedDType(argInfos[a].type.getElementType()),
                           logical.shape, logical.data});
      }
    // Persistent buffers the step only reads, as the model holds them.
    if (printing) {
      for (const spmdc::ModuleValue &buffer : moduleFile
                                                  ? moduleFile->constantBuffers
                                                  : std::vector<spmdc::ModuleValue>{}) {
        Type element = parseType(buffer.dtype, &context);
        std::vector<double> values;
        if (!element || !dtypeOf(element) || !inputs.moduleWeights ||
            !inputs.moduleWeights->readAsDouble(buffer.name, values,
                                                errorMessage))
          return fail(options.input + ": buffer '" + buffer.name +
                      "': " + errorMessage);
        saved.push_back({buffer.name, savedDType(element), buffer.shape,
                         std::move(values)});
      }
      if (module)
        for (const spmdc::tg::ConstantBufferInfo &buffer :
             spmdc::tg::getConstantBuffers(*module)) {
          std::optional<spmdc::rt::DType> dtype =
              dtypeOf(buffer.type.getElementType());
          if (!dtype)
            continue;
          spmdc::rt::StoredTensor stored;
          stored.path = buffer.initRef.file;
          stored.dataOffset = buffer.initRef.offset;
          stored.dataBytes = buffer.initRef.bytes;
          stored.dtype = *dtype;
          stored.shape.assign(buffer.type.getShape().begin(),
                              buffer.type.getShape().end());
          stored.strides = buffer.initRef.strides;
          stored.storageOffset = buffer.initRef.storageOffset;
          std::vector<double> values;
          if (!spmdc::rt::readStoredBlock(
                  stored, std::vector<int64_t>(stored.shape.size(), 0),
                  stored.shape, values, errorMessage))
            return fail("buffer '" + buffer.name + "': " + errorMessage);
          saved.push_back({buffer.name,
                           savedDType(buffer.type.getElementType()),
                           stored.shape, std::move(values)});
        }
    }
    if (printing &&
        !spmdc::rt::writeSafeTensors(options.saveParams, saved, errorMessage))
      return fail(errorMessage);
    spdlog::info("saved {} parameters to {}", saved.size(), options.saveParams);
  }
  if (!options.saveOutputs.empty()) {
    std::vector<spmdc::rt::NamedTensor> saved;
    for (size_t r = 0; r < resultInfos.size(); ++r)
      if (resultInfos[r].role != "param" && resultInfos[r].role != "state") {
        Tensor logical =
            assemble(allRanks(lastOutputs, r), 0, resultShardings[r], mesh,
                     options.f64,
                     resultInfos[r].role + " '" + resultInfos[r].name + "'");
        saved.push_back({resultInfos[r].role + "/" + resultInfos[r].name,
                         savedDType(resultInfos[r].type.getElementType()),
                         logical.shape, logical.data});
      }
    if (printing &&
        !spmdc::rt::writeSafeTensors(options.saveOutputs, saved, errorMessage))
      return fail(errorMessage);
  }
#ifdef SPMDC_HAVE_MPI
  if (underMpi)
    spmd_rt_finalize();
#endif
  return 0;
}
