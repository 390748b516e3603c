//===- CompiledStep.cpp - a module's step, JIT-compiled -------------------===//

#include "CompiledStep.h"

#include "spmdc/Runtime/Blas.h"
#ifdef SPMDC_HAVE_MPI
#include "spmdc/Runtime/Collectives.h"
#endif

#include "mlir/ExecutionEngine/CRunnerUtils.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/TargetSelect.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

using namespace mlir;

namespace spmdc {

namespace {

size_t elementBytes(const std::string &dtype) {
  if (dtype == "f64" || dtype == "i64")
    return 8;
  if (dtype == "f32" || dtype == "i32")
    return 4;
  if (dtype == "f16" || dtype == "bf16")
    return 2;
  return 1; // i1
}

void storeElement(const std::string &dtype, double v, char *at) {
  if (dtype == "f32") {
    float f = static_cast<float>(v);
    std::memcpy(at, &f, 4);
  } else if (dtype == "f64") {
    std::memcpy(at, &v, 8);
  } else if (dtype == "i64") {
    int64_t i = static_cast<int64_t>(v);
    std::memcpy(at, &i, 8);
  } else if (dtype == "i32") {
    int32_t i = static_cast<int32_t>(v);
    std::memcpy(at, &i, 4);
  } else {
    *at = v != 0.0;
  }
}

double loadElement(const std::string &dtype, const char *at) {
  if (dtype == "f32") {
    float f;
    std::memcpy(&f, at, 4);
    return f;
  }
  if (dtype == "f64") {
    double d;
    std::memcpy(&d, at, 8);
    return d;
  }
  if (dtype == "i64") {
    int64_t i;
    std::memcpy(&i, at, 8);
    return static_cast<double>(i);
  }
  if (dtype == "i32") {
    int32_t i;
    std::memcpy(&i, at, 4);
    return i;
  }
  return *at != 0;
}

/// A memref descriptor as the LLVM lowering lays it out: allocated and
/// aligned pointers, offset, sizes, strides, each 8 bytes.
struct Descriptor {
  std::vector<int64_t> fields;

  Descriptor(void *data, const std::vector<int64_t> &shape) {
    fields.push_back(reinterpret_cast<int64_t>(data));
    fields.push_back(reinterpret_cast<int64_t>(data));
    fields.push_back(0);
    fields.insert(fields.end(), shape.begin(), shape.end());
    std::vector<int64_t> strides(shape.size(), 1);
    for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d)
      strides[d] = strides[d + 1] * shape[d + 1];
    fields.insert(fields.end(), strides.begin(), strides.end());
  }
};

} // namespace

std::unique_ptr<CompiledStep> CompiledStep::load(const ModuleFile &file,
                                                 MLIRContext &context,
                                                 const Options &options,
                                                 std::string &error) {
  if (file.target != "cpu" && file.target != "cuda") {
    error = "the module's target is '" + file.target +
            "'; spmd-run runs cpu and cuda modules";
    return nullptr;
  }
  auto step = std::unique_ptr<CompiledStep>(new CompiledStep());
  step->file = file;
  if (file.target == "cuda") {
    step->cuda = CudaRuntimeLibrary::open(options.localRank,
                                          options.multiRank, error);
    if (!step->cuda)
      return nullptr;
  }
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  DialectRegistry registry;
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  // A cuda module's host code launches kernels of gpu.binary ops (PTX).
  registerGPUDialectTranslation(registry);
  registerNVVMDialectTranslation(registry);
  gpu::registerOffloadingLLVMTranslationInterfaceExternalModels(registry);
  context.appendDialectRegistry(registry);
  OwningOpRef<ModuleOp> program =
      parseSourceString<ModuleOp>(file.program, &context);
  if (!program) {
    error = "the module's program does not parse";
    return nullptr;
  }
  ExecutionEngineOptions engineOptions;
  auto transformer = makeOptimizingTransformer(options.optLevel, 0, nullptr);
  engineOptions.transformer = transformer;
  engineOptions.jitCodeGenOptLevel =
      static_cast<llvm::CodeGenOptLevel>(options.optLevel);
  auto engine = ExecutionEngine::create(*program, engineOptions);
  if (!engine) {
    error = "cannot compile the module's program: " +
            llvm::toString(engine.takeError());
    return nullptr;
  }
  step->engine = std::move(*engine);
  // The runtime functions the lowering calls: memrefCopy (copies between
  // buffers of different layouts) from MLIR's C runner utilities, BLAS and
  // MPI for cpu modules; for cuda modules the CUDA runtime's memory,
  // kernel launches and cuBLAS, which take precedence.
  const CudaRuntimeLibrary *cuda = step->cuda.get();
  step->engine->registerSymbols([cuda](llvm::orc::MangleAndInterner interner) {
    llvm::orc::SymbolMap symbols;
    auto add = [&](const char *name, auto *function) {
      symbols[interner(name)] = {llvm::orc::ExecutorAddr::fromPtr(function),
                                 llvm::JITSymbolFlags::Exported};
    };
    add("memrefCopy", &memrefCopy);
    add("spmd_matmul_f32", &spmd_matmul_f32);
    add("spmd_matmul_f64", &spmd_matmul_f64);
    add("spmd_matmul_bf16", &spmd_matmul_bf16);
#ifdef SPMDC_HAVE_MPI
    // The collectives --convert-dist-to-runtime calls.
    add("spmd_collective_f32", &spmd_collective_f32);
    add("spmd_collective_f64", &spmd_collective_f64);
    add("spmd_collective_i64", &spmd_collective_i64);
    add("spmd_collective_i32", &spmd_collective_i32);
#endif
    if (cuda)
      for (auto [name, address] : cuda->symbols())
        add(name, address);
    return symbols;
  });
  return step;
}

std::string CompiledStep::device() const {
  return cuda ? "CUDA device " + cuda->deviceName() : "cpu";
}

void *CompiledStep::allocate(size_t bytes) const {
  bytes = std::max<size_t>(bytes, 1);
  return cuda ? cuda->allocate(bytes) : std::malloc(bytes);
}

void CompiledStep::release(void *buffer) const {
  if (cuda)
    cuda->release(buffer);
  else
    std::free(buffer);
}

CompiledStep::~CompiledStep() = default;

bool CompiledStep::run(const std::vector<interp::Tensor> &args,
                       std::vector<interp::Tensor> &results,
                       std::string &error) {
  // Arguments: buffers of their dtype (host memory, or CUDA managed
  // memory), passed as descriptors, freed when the step is done.
  std::vector<char *> buffers;
  llvm::scope_exit freeArguments([&] {
    for (char *buffer : buffers)
      release(buffer);
  });
  std::vector<Descriptor> descriptors;
  descriptors.reserve(args.size());
  for (auto [arg, value] : llvm::zip(args, file.arguments)) {
    size_t bytes = elementBytes(value.dtype);
    buffers.push_back(
        static_cast<char *>(allocate(arg.data.size() * bytes)));
    for (size_t i = 0; i < arg.data.size(); ++i)
      storeElement(value.dtype, arg.data[i], buffers.back() + i * bytes);
    descriptors.emplace_back(buffers.back(), value.shape);
  }
  std::vector<void *> packed;
  for (Descriptor &d : descriptors)
    for (int64_t &field : d.fields)
      packed.push_back(&field);
  // Results: one struct of descriptors, 8-byte fields throughout.
  size_t resultFields = 0;
  for (const ModuleValue &r : file.results)
    resultFields += 3 + 2 * r.shape.size();
  std::vector<int64_t> resultStorage(resultFields);
  packed.push_back(resultStorage.data());

  if (llvm::Error e = engine->invokePacked(file.entry, packed)) {
    error = "the step failed: " + llvm::toString(std::move(e));
    return false;
  }

  results.clear();
  size_t at = 0;
  std::vector<void *> freed;
  for (const ModuleValue &r : file.results) {
    auto *allocated = reinterpret_cast<char *>(resultStorage[at]);
    auto *aligned = reinterpret_cast<char *>(resultStorage[at + 1]);
    int64_t offset = resultStorage[at + 2];
    size_t rank = r.shape.size();
    std::vector<int64_t> strides(resultStorage.begin() + at + 3 + rank,
                                 resultStorage.begin() + at + 3 + 2 * rank);
    interp::Tensor t(r.shape);
    size_t bytes = elementBytes(r.dtype);
    std::vector<int64_t> index(rank, 0);
    for (int64_t i = 0; i < t.numel(); ++i) {
      int64_t element = offset;
      for (size_t d = 0; d < rank; ++d)
        element += index[d] * strides[d];
      t.data[i] = loadElement(r.dtype, aligned + element * bytes);
      for (int64_t d = static_cast<int64_t>(rank) - 1; d >= 0; --d) {
        if (++index[d] < r.shape[d])
          break;
        index[d] = 0;
      }
    }
    results.push_back(std::move(t));
    // Buffers the step allocated are ours to free, once; a result that is
    // an argument's buffer stays with its owner.
    bool ownedByUs = false;
    for (char *buffer : buffers)
      ownedByUs |= allocated == buffer;
    // A constant result's "allocated" pointer is the lowering's marker for
    // a global, not a heap block.
    bool global = allocated == reinterpret_cast<char *>(0xdeadbeef);
    if (!ownedByUs && !global && allocated &&
        std::find(freed.begin(), freed.end(), allocated) == freed.end()) {
      freed.push_back(allocated);
    }
    at += 3 + 2 * rank;
  }
  for (void *p : freed)
    release(p);
  return true;
}

} // namespace spmdc
