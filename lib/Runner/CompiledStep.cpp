//===- CompiledStep.cpp - a module's step, JIT-compiled -------------------===//

#include "spmdc/Runner/CompiledStep.h"

#include "spmdc/Runner/CudaRuntimeLibrary.h"
#include "spmdc/Runtime/Blas.h"
#include "spmdc/Runtime/ParallelFor.h"
#include "spmdc/Runtime/FloatFormats.h"
#include "spmdc/Runtime/HeapPolicy.h"
#include "spmdc/Runtime/MemRefCopy.h"
#include "spmdc/Runtime/SafeTensors.h"
#include "spmdc/Target/NativeCode.h"
#ifdef SPMDC_HAVE_MPI
#include "spmdc/Runtime/Collectives.h"
#endif

#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/ExecutionEngine/Orc/AbsoluteSymbols.h"
#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/xxhash.h"
#include "llvm/TargetParser/Host.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include <unistd.h>

using namespace mlir;

namespace spmdc::runner {

namespace {

using rt::DType;

/// A module value's dtype ("f32", "i1", ...) as the runtime's DType.
std::optional<DType> dtypeOfModuleValue(const std::string &dtype) {
  if (dtype == "i1")
    return DType::Bool;
  return rt::parseDType(llvm::StringRef(dtype).upper());
}

template <typename T>
void storeAs(const std::vector<double> &values, char *to) {
  T *out = reinterpret_cast<T *>(to);
  for (size_t i = 0; i < values.size(); ++i)
    out[i] = static_cast<T>(values[i]);
}

/// Writes `values` as elements of `dtype` from `to` on (typed loops: a step
/// converts millions of elements).
void storeElements(DType dtype, const std::vector<double> &values, char *to) {
  switch (dtype) {
  case DType::F32:
    return storeAs<float>(values, to);
  case DType::F64:
    return storeAs<double>(values, to);
  case DType::F16:
    return storeAs<_Float16>(values, to);
  case DType::I64:
    return storeAs<int64_t>(values, to);
  case DType::I32:
    return storeAs<int32_t>(values, to);
  case DType::BF16: {
    auto *out = reinterpret_cast<uint16_t *>(to);
    for (size_t i = 0; i < values.size(); ++i)
      out[i] = rt::toBF16(static_cast<float>(values[i]));
    return;
  }
  case DType::Bool:
    for (size_t i = 0; i < values.size(); ++i)
      to[i] = values[i] != 0.0;
    return;
  }
}

double loadElement(DType dtype, const char *at) {
  switch (dtype) {
  case DType::F32:
    return *reinterpret_cast<const float *>(at);
  case DType::F64:
    return *reinterpret_cast<const double *>(at);
  case DType::F16:
    return static_cast<double>(*reinterpret_cast<const _Float16 *>(at));
  case DType::I64:
    return static_cast<double>(*reinterpret_cast<const int64_t *>(at));
  case DType::I32:
    return *reinterpret_cast<const int32_t *>(at);
  case DType::BF16:
    return rt::fromBF16(*reinterpret_cast<const uint16_t *>(at));
  case DType::Bool:
    return *at != 0;
  }
  return 0;
}

template <typename T> void loadAs(const char *from, std::vector<double> &out) {
  const T *in = reinterpret_cast<const T *>(from);
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = static_cast<double>(in[i]);
}

/// Reads `out.size()` contiguous elements of `dtype` from `from`.
void loadContiguous(DType dtype, const char *from, std::vector<double> &out) {
  switch (dtype) {
  case DType::F32:
    return loadAs<float>(from, out);
  case DType::F64:
    return loadAs<double>(from, out);
  case DType::I64:
    return loadAs<int64_t>(from, out);
  case DType::I32:
    return loadAs<int32_t>(from, out);
  default:
    for (size_t i = 0; i < out.size(); ++i)
      out[i] = loadElement(dtype, from + i * rt::dtypeSize(dtype));
  }
}

/// A memref descriptor as the LLVM lowering lays it out: allocated and
/// aligned pointers, offset, sizes, strides, each 8 bytes.
struct Descriptor {
  std::vector<int64_t> fields;

  Descriptor(void *allocated, void *aligned,
             const std::vector<int64_t> &shape) {
    fields.push_back(reinterpret_cast<int64_t>(allocated));
    fields.push_back(reinterpret_cast<int64_t>(aligned));
    fields.push_back(0);
    fields.insert(fields.end(), shape.begin(), shape.end());
    std::vector<int64_t> strides(shape.size(), 1);
    for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d)
      strides[d] = strides[d + 1] * shape[d + 1];
    fields.insert(fields.end(), strides.begin(), strides.end());
  }
};

} // namespace

/// The runtime functions the lowering calls: memrefCopy (copies between
/// buffers of different layouts; the runtime's, MemRefCopy.h), BLAS and
/// MPI for cpu modules; for cuda modules the CUDA runtime's memory, kernel
/// launches and cuBLAS, which take precedence.
static llvm::orc::SymbolMap runtimeSymbols(
    const CudaRuntimeLibrary *cuda,
    llvm::function_ref<llvm::orc::SymbolStringPtr(const char *)> intern) {
  llvm::orc::SymbolMap symbols;
  auto add = [&](const char *name, auto *function) {
    symbols[intern(name)] = {llvm::orc::ExecutorAddr::fromPtr(function),
                             llvm::JITSymbolFlags::Exported};
  };
  add("memrefCopy", &memrefCopy);
  add("spmd_matmul_f32", &spmd_matmul_f32);
  add("spmd_parallel_for", &spmd_parallel_for);
  add("spmd_matmul_f64", &spmd_matmul_f64);
  add("spmd_matmul_bf16", &spmd_matmul_bf16);
  add("__truncsfbf2", &spmd_truncsfbf2);
#ifdef SPMDC_HAVE_MPI
  // The collectives --convert-dist-to-runtime calls.
  add("spmd_collective_f32", &spmd_collective_f32);
  add("spmd_collective_f64", &spmd_collective_f64);
  add("spmd_collective_i64", &spmd_collective_i64);
  add("spmd_collective_i32", &spmd_collective_i32);
  // Their started forms (--dist-async-collectives).
  add("spmd_collective_start_f32", &spmd_collective_start_f32);
  add("spmd_collective_start_f64", &spmd_collective_start_f64);
  add("spmd_collective_start_i64", &spmd_collective_start_i64);
  add("spmd_collective_start_i32", &spmd_collective_start_i32);
  add("spmd_collective_wait_f32", &spmd_collective_wait_f32);
  add("spmd_collective_wait_f64", &spmd_collective_wait_f64);
  add("spmd_collective_wait_i64", &spmd_collective_wait_i64);
  add("spmd_collective_wait_i32", &spmd_collective_wait_i32);
  add("spmd_collective_progress", &spmd_collective_progress);
#endif
  if (cuda)
    for (auto [name, address] : cuda->symbols())
      add(name, address);
  return symbols;
}

/// Why this machine cannot run `file`'s native code (another triple, or a
/// CPU feature it was compiled for and this CPU lacks); empty if it can.
static std::string nativeMismatch(const ModuleFile &file) {
  if (file.nativeTriple != llvm::sys::getProcessTriple())
    return "it is for " + file.nativeTriple;
  llvm::StringMap<bool> host = llvm::sys::getHostCPUFeatures();
  llvm::SmallVector<llvm::StringRef> features;
  llvm::StringRef(file.nativeFeatures).split(features, ',', -1, false);
  for (llvm::StringRef feature : features) {
    auto it = host.find(feature.drop_front());
    if (feature.starts_with("+") && it != host.end() && !it->second)
      return "it is for " + file.nativeCpu + ", and this CPU lacks " +
             feature.drop_front().str();
  }
  return "";
}

/// Links the module's native code (spmdc --aot) with ORC; null with
/// `error` set on failure.
static std::unique_ptr<llvm::orc::LLJIT>
linkNative(llvm::StringRef object, const CudaRuntimeLibrary *cuda,
           std::string &error) {
  auto failed = [&](llvm::Error e) {
    error =
        "cannot link the module's native code: " + llvm::toString(std::move(e));
    return nullptr;
  };
  auto jit = llvm::orc::LLJITBuilder().create();
  if (!jit)
    return failed(jit.takeError());
  llvm::orc::JITDylib &library = (*jit)->getMainJITDylib();
  auto intern = [&](const char *name) { return (*jit)->mangleAndIntern(name); };
  if (llvm::Error e = library.define(
          llvm::orc::absoluteSymbols(runtimeSymbols(cuda, intern))))
    return failed(std::move(e));
  // libc and libm (malloc, expf, ...) from this process.
  auto process = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
      (*jit)->getDataLayout().getGlobalPrefix());
  if (!process)
    return failed(process.takeError());
  library.addGenerator(std::move(*process));
  if (llvm::Error e = (*jit)->addObjectFile(
          llvm::MemoryBuffer::getMemBufferCopy(object, "step.o")))
    return failed(std::move(e));
  return std::move(*jit);
}

/// Where the JIT's native code for `file` on this host at `optLevel` is
/// cached across runs (as JAX caches its compilations): $SPMDC_CACHE_DIR,
/// else $XDG_CACHE_HOME/spmdc, else ~/.cache/spmdc. Empty when caching is
/// off (SPMDC_CACHE_DIR=off) or for CUDA modules (their kernels load in
/// constructors the cache does not keep).
static std::string nativeCachePath(const ModuleFile &file, int optLevel) {
  if (file.target != "cpu")
    return "";
  std::string dir;
  if (const char *given = std::getenv("SPMDC_CACHE_DIR")) {
    if (llvm::StringRef(given) == "off" || !*given)
      return "";
    dir = given;
  } else if (const char *xdg = std::getenv("XDG_CACHE_HOME")) {
    dir = std::string(xdg) + "/spmdc";
  } else if (const char *home = std::getenv("HOME")) {
    dir = std::string(home) + "/.cache/spmdc";
  } else {
    return "";
  }
  // The key: the program, the host CPU and its features, the level, and
  // this spmd-run (the runtime the code calls, the LLVM that compiled it).
  std::string key = file.program;
  key += "\n" + llvm::sys::getHostCPUName().str();
  llvm::StringMap<bool> features = llvm::sys::getHostCPUFeatures();
  std::vector<std::string> names;
  for (const auto &feature : features)
    if (feature.second)
      names.push_back(feature.first().str());
  std::sort(names.begin(), names.end());
  for (const std::string &name : names)
    key += "," + name;
  key += "\nO" + std::to_string(optLevel) + " " LLVM_VERSION_STRING;
  llvm::sys::fs::file_status self;
  if (!llvm::sys::fs::status("/proc/self/exe", self))
    key += " " + std::to_string(self.getSize()) + " " +
           std::to_string(
               self.getLastModificationTime().time_since_epoch().count());
  return dir + "/" + llvm::utohexstr(llvm::xxh3_64bits(key)) + ".o";
}

/// The address of `name` in linked native code, or null with `error` set.
template <typename Function>
static Function nativeFunction(llvm::orc::LLJIT &jit, const char *name,
                               std::string &error) {
  auto address = jit.lookup(name);
  if (!address) {
    error = "the module's native code: " + llvm::toString(address.takeError());
    return nullptr;
  }
  return address->toPtr<Function>();
}

std::unique_ptr<CompiledStep> CompiledStep::open(const ModuleFile &file,
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
  if (file.target == "cpu") {
    spmd_blas_set_threads(options.gemmThreads);
    spmd_parallel_set_threads(options.nestThreads);
    spmd_keep_freed_memory();
    if (options.hugePages)
      step->hugePageBytes = spmd_reserve_heap(file.bufferPeakBytes);
  }
  auto resolve = [&](const std::vector<ModuleValue> &values,
                     std::vector<DType> &types) {
    for (const ModuleValue &value : values) {
      std::optional<DType> dtype = dtypeOfModuleValue(value.dtype);
      if (!dtype) {
        error = "value '" + value.name + "' has dtype '" + value.dtype +
                "', which spmd-run does not support";
        return false;
      }
      types.push_back(*dtype);
    }
    return true;
  };
  if (!resolve(file.arguments, step->argumentTypes) ||
      !resolve(file.results, step->resultTypes))
    return nullptr;
  if (file.target == "cuda") {
    step->cuda =
        CudaRuntimeLibrary::open(options.localRank, options.multiRank, error);
    if (!step->cuda)
      return nullptr;
  }
  step->context = &context;
  step->options = options;
  step->arguments.resize(file.arguments.size());
  return step;
}

bool CompiledStep::compile(std::string &error) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  // Native code (spmdc --aot) is linked, not compiled, where the CPU can
  // run it; elsewhere the program is compiled as without it.
  if (!file.native.empty()) {
    std::string mismatch = nativeMismatch(file);
    if (mismatch.empty()) {
      native = linkNative(file.native, cuda.get(), error);
      if (!native)
        return false;
      using Init = void (*)();
      auto init = nativeFunction<Init>(*native, "spmd_step_init", error);
      nativeMain =
          nativeFunction<void (*)(void **)>(*native, "spmd_step_main", error);
      nativeFini = nativeFunction<Init>(*native, "spmd_step_fini", error);
      if (!init || !nativeMain || !nativeFini)
        return false;
      if (hasEval() && !(nativeEval = nativeFunction<void (*)(void **)>(
                             *native, "spmd_step_eval", error)))
        return false;
      // The module's constructors: a CUDA module loads its kernels.
      init();
      spdlog::info("running the module's native code ({})", file.nativeCpu);
      return true;
    }
    spdlog::info("compiling the module's program: its native code does not "
                 "run here ({})",
                 mismatch);
  }
  // Native code an earlier run compiled from the same program on this CPU.
  std::string cache = nativeCachePath(file, options.optLevel);
  if (!cache.empty()) {
    if (auto object = llvm::MemoryBuffer::getFile(cache)) {
      std::string linkError;
      auto jit = linkNative((*object)->getBuffer(), cuda.get(), linkError);
      if (jit) {
        nativeMain = nativeFunction<void (*)(void **)>(
            *jit, ("_mlir_" + file.entry).c_str(), linkError);
        if (nativeMain && hasEval())
          nativeEval = nativeFunction<void (*)(void **)>(
              *jit, ("_mlir_" + file.evalEntry).c_str(), linkError);
        if (hasEval() && !nativeEval)
          nativeMain = nullptr;
        llvm::Error init = nativeMain ? jit->initialize(jit->getMainJITDylib())
                                      : llvm::Error::success();
        if (nativeMain && !init) {
          native = std::move(jit);
          spdlog::info("running native code cached in {}", cache);
          return true;
        }
        if (init)
          linkError = llvm::toString(std::move(init));
        nativeMain = nativeEval = nullptr;
      }
      spdlog::warn("ignoring the native-code cache {}: {}", cache, linkError);
    }
    cacheFile = cache;
  }
  DialectRegistry registry;
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  // A cuda module's host code launches kernels of gpu.binary ops (PTX).
  registerGPUDialectTranslation(registry);
  registerNVVMDialectTranslation(registry);
  gpu::registerOffloadingLLVMTranslationInterfaceExternalModels(registry);
  context->appendDialectRegistry(registry);
  OwningOpRef<ModuleOp> program =
      parseSourceString<ModuleOp>(file.program, context);
  if (!program) {
    error = "the module's program does not parse";
    return false;
  }
  ExecutionEngineOptions engineOptions;
  engineOptions.enableObjectDump = !cacheFile.empty();
  // Level 1 optimises in instruction selection and scheduling only: the
  // loops are already vectorized, and LLVM's IR pipeline would cost the JIT
  // 4x the time for a sixth off a step (gpt2 medium). 2 and 3 add it.
  unsigned irLevel = options.optLevel >= 2 ? options.optLevel : 0;
  auto optimize = makeOptimizingTransformer(irLevel, 0, nullptr);
  // engineOptions holds a function_ref: the lambda lives until create().
  auto transform = [&optimize](llvm::Module *module) {
    prepareGlueForCodegen(*module);
    return optimize(module);
  };
  engineOptions.transformer = transform;
  engineOptions.jitCodeGenOptLevel =
      static_cast<llvm::CodeGenOptLevel>(options.optLevel);
  // SPMD_RUN_PERF=1: tell `perf` the JIT-compiled functions' names.
  if (const char *perf = std::getenv("SPMD_RUN_PERF"))
    engineOptions.enablePerfNotificationListener = std::string(perf) != "0";
  // MLIR 22's ExecutionEngine ignores jitCodeGenOptLevel when it makes its
  // own TargetMachine (the host's, at -O2 codegen); hand it one at the
  // requested level, or -O0 would still run LLVM's machine scheduler, which
  // was most of the JIT's time.
  auto machineBuilder = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!machineBuilder) {
    error = "cannot target this host: " +
            llvm::toString(machineBuilder.takeError());
    return false;
  }
  machineBuilder->setCodeGenOptLevel(
      static_cast<llvm::CodeGenOptLevel>(options.optLevel));
  auto machine = machineBuilder->createTargetMachine();
  if (!machine) {
    error = "cannot target this host: " + llvm::toString(machine.takeError());
    return false;
  }
  auto created =
      ExecutionEngine::create(*program, engineOptions, std::move(*machine));
  if (!created) {
    error = "cannot compile the module's program: " +
            llvm::toString(created.takeError());
    return false;
  }
  engine = std::move(*created);
  const CudaRuntimeLibrary *runtime = cuda.get();
  engine->registerSymbols([runtime](llvm::orc::MangleAndInterner interner) {
    return runtimeSymbols(runtime,
                          [&](const char *name) { return interner(name); });
  });
  return true;
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

CompiledStep::~CompiledStep() {
  for (const Buffer &buffer : arguments)
    release(buffer.allocated);
  for (const Buffer &buffer : evalArguments)
    release(buffer.allocated);
  // Native code's destructors (kernel modules unloaded) before the CUDA
  // runtime ends; the engine runs the program's own as it goes.
  if (nativeFini)
    nativeFini();
}

void CompiledStep::keepResident(
    const std::vector<std::pair<size_t, size_t>> &resultToArgument) {
  residentFrom.assign(file.results.size(), std::nullopt);
  for (auto [r, a] : resultToArgument)
    residentFrom[r] = a;
}

interp::Tensor CompiledStep::argument(size_t index) const {
  const ModuleValue &value = file.arguments[index];
  interp::Tensor t(value.shape);
  loadContiguous(argumentTypes[index], arguments[index].aligned, t.data);
  return t;
}

char *CompiledStep::argumentBuffer(size_t index, size_t bytes) {
  Buffer &buffer = arguments[index];
  if (!buffer.allocated) {
    auto *block = static_cast<char *>(allocate(bytes));
    buffer = {block, block};
  }
  return buffer.aligned;
}

void CompiledStep::stage(size_t index, const interp::Tensor &value) {
  storeElements(argumentTypes[index], value.data,
                argumentBuffer(index, value.data.size() *
                                          rt::dtypeSize(argumentTypes[index])));
}

void CompiledStep::zeroArgument(size_t index, size_t elements) {
  size_t bytes = elements * rt::dtypeSize(argumentTypes[index]);
  char *buffer = argumentBuffer(index, bytes);
  if (cuda)
    std::memset(buffer, 0, bytes);
  else
    spmd_zero_untouched(buffer, bytes);
}

float *CompiledStep::f32Buffer(size_t index, size_t elements) {
  if (argumentTypes[index] != DType::F32)
    return nullptr;
  return reinterpret_cast<float *>(
      argumentBuffer(index, elements * sizeof(float)));
}

bool CompiledStep::run(std::vector<interp::Tensor> &results,
                       std::string &error) {
  // The entry is `void main(ptr arguments, ptr results)` (spmdc's
  // --wide-interfaces-through-memory): its arguments one array of the
  // descriptors' 8-byte fields, its results one struct of descriptors.
  std::vector<int64_t> argumentWords;
  for (size_t a = 0; a < arguments.size(); ++a) {
    const ModuleValue &value = file.arguments[a];
    if (!arguments[a].allocated) {
      error = "argument '" + value.name + "' was never given a value";
      return false;
    }
    Descriptor d(arguments[a].allocated, arguments[a].aligned, value.shape);
    argumentWords.insert(argumentWords.end(), d.fields.begin(), d.fields.end());
  }
  size_t resultFields = 0;
  for (const ModuleValue &r : file.results)
    resultFields += 3 + 2 * r.shape.size();
  std::vector<int64_t> resultStorage(resultFields);
  void *argumentsPointer = argumentWords.data();
  void *resultsPointer = resultStorage.data();
  std::vector<void *> packed = {&argumentsPointer, &resultsPointer};

  if (nativeMain) {
    nativeMain(packed.data());
  } else if (llvm::Error e = engine->invokePacked(file.entry, packed)) {
    error = "the step failed: " + llvm::toString(std::move(e));
    return false;
  } else if (!cacheFile.empty()) {
    // The JIT compiled the program for this first step: keep its object
    // for the next run (written aside, then renamed: ranks and runs that
    // race write the same bytes, and a reader sees a whole file).
    llvm::sys::fs::create_directories(llvm::sys::path::parent_path(cacheFile));
    std::string partial = cacheFile + "." + std::to_string(::getpid());
    engine->dumpToObjectFile(partial);
    if (llvm::sys::fs::rename(partial, cacheFile))
      llvm::sys::fs::remove(partial);
    cacheFile.clear();
  }

  results.clear();
  const std::vector<Buffer> before = arguments;
  auto isArgument = [](const std::vector<Buffer> &buffers, char *allocated) {
    return llvm::any_of(buffers, [&](const Buffer &buffer) {
      return buffer.allocated == allocated;
    });
  };
  // A constant result's "allocated" pointer is the lowering's marker for a
  // global, not a heap block.
  auto *global = reinterpret_cast<char *>(0xdeadbeef);
  std::vector<char *> adopted, freed;
  size_t at = 0;
  for (auto [index, r] : llvm::enumerate(file.results)) {
    auto *allocated = reinterpret_cast<char *>(resultStorage[at]);
    auto *aligned = reinterpret_cast<char *>(resultStorage[at + 1]);
    int64_t offset = resultStorage[at + 2];
    size_t rank = r.shape.size();
    std::vector<int64_t> strides(resultStorage.begin() + at + 3 + rank,
                                 resultStorage.begin() + at + 3 + 2 * rank);
    at += 3 + 2 * rank;
    DType type = resultTypes[index];
    size_t bytes = rt::dtypeSize(type);
    bool contiguous = true;
    for (int64_t d = static_cast<int64_t>(rank) - 1, expected = 1; d >= 0;
         expected *= r.shape[d], --d)
      contiguous &= r.shape[d] == 1 || strides[d] == expected;

    // A resident result becomes its argument's buffer for the next step,
    // unconverted (its tensor comes back empty; argument() reads it).
    std::optional<size_t> feeds =
        index < residentFrom.size() ? residentFrom[index] : std::nullopt;
    if (feeds && contiguous && allocated && allocated != global &&
        !llvm::is_contained(adopted, allocated)) {
      arguments[*feeds] = {allocated, aligned + offset * bytes};
      adopted.push_back(allocated);
      interp::Tensor placeholder;
      placeholder.shape = r.shape;
      results.push_back(std::move(placeholder));
      continue;
    }

    interp::Tensor t(r.shape);
    if (contiguous) {
      loadContiguous(type, aligned + offset * bytes, t.data);
    } else {
      std::vector<int64_t> index(rank, 0);
      for (int64_t i = 0; i < t.numel(); ++i) {
        int64_t element = offset;
        for (size_t d = 0; d < rank; ++d)
          element += index[d] * strides[d];
        t.data[i] = loadElement(type, aligned + element * bytes);
        for (int64_t d = static_cast<int64_t>(rank) - 1; d >= 0; --d) {
          if (++index[d] < r.shape[d])
            break;
          index[d] = 0;
        }
      }
    }
    if (feeds) {
      // Shared with another result or strided: copy it in instead.
      storeElements(type, t.data, arguments[*feeds].aligned);
      interp::Tensor placeholder;
      placeholder.shape = r.shape;
      t = std::move(placeholder);
    }
    results.push_back(std::move(t));
    // Buffers the step allocated are ours to free, once; a result that is
    // an argument's buffer stays with its owner.
    if (allocated && allocated != global && !isArgument(before, allocated) &&
        !llvm::is_contained(freed, allocated))
      freed.push_back(allocated);
  }
  // Argument buffers replaced by adopted results are done with, unless a
  // result still uses them.
  for (const Buffer &old : before)
    if (!isArgument(arguments, old.allocated) &&
        !llvm::is_contained(freed, old.allocated))
      freed.push_back(old.allocated);
  // So is an adopted result that a later result of the same name replaced
  // (a program that returns a parameter its optimizer also updates).
  for (char *p : adopted)
    if (!isArgument(arguments, p) && !llvm::is_contained(freed, p))
      freed.push_back(p);
  for (char *p : freed)
    if (!isArgument(arguments, p))
      release(p);
  return true;
}

bool CompiledStep::evaluate(
    const std::vector<std::pair<size_t, interp::Tensor>> &given,
    interp::Tensor &loss, std::string &error) {
  if (!hasEval()) {
    error = "the module carries no eval program";
    return false;
  }
  evalArguments.resize(arguments.size());
  for (const auto &[index, value] : given) {
    size_t bytes = value.data.size() * rt::dtypeSize(argumentTypes[index]);
    Buffer &buffer = evalArguments[index];
    if (!buffer.allocated) {
      auto *block = static_cast<char *>(allocate(bytes));
      buffer = {block, block};
    }
    storeElements(argumentTypes[index], value.data, buffer.aligned);
  }
  // `void eval(ptr arguments, ptr results)`, as the step's entry.
  std::vector<int64_t> argumentWords;
  for (size_t a : file.evalArguments) {
    const Buffer &buffer =
        evalArguments[a].allocated ? evalArguments[a] : arguments[a];
    if (!buffer.allocated) {
      error = "argument '" + file.arguments[a].name +
              "' was never given a value";
      return false;
    }
    Descriptor d(buffer.allocated, buffer.aligned, file.arguments[a].shape);
    argumentWords.insert(argumentWords.end(), d.fields.begin(), d.fields.end());
  }
  // The loss: a scalar's descriptor (allocated, aligned, offset).
  int64_t result[3] = {0, 0, 0};
  void *argumentsPointer = argumentWords.data();
  void *resultsPointer = result;
  std::vector<void *> packed = {&argumentsPointer, &resultsPointer};
  if (nativeEval) {
    nativeEval(packed.data());
  } else if (nativeMain) {
    error = "the module's native code has no eval program";
    return false;
  } else if (llvm::Error e = engine->invokePacked(file.evalEntry, packed)) {
    error = "the eval program failed: " + llvm::toString(std::move(e));
    return false;
  }
  auto lossResult = llvm::find_if(file.results, [](const ModuleValue &r) {
    return r.role == "loss";
  });
  DType type = lossResult == file.results.end()
                   ? DType::F32
                   : resultTypes[lossResult - file.results.begin()];
  auto *allocated = reinterpret_cast<char *>(result[0]);
  auto *aligned = reinterpret_cast<char *>(result[1]);
  loss = interp::Tensor(std::vector<int64_t>{});
  loadContiguous(type, aligned + result[2] * rt::dtypeSize(type), loss.data);
  // The step allocated it, unless it is a global or one of the inputs.
  auto *global = reinterpret_cast<char *>(0xdeadbeef);
  bool input = llvm::any_of(file.evalArguments, [&](size_t a) {
    return allocated == arguments[a].allocated ||
           allocated == evalArguments[a].allocated;
  });
  if (allocated && allocated != global && !input)
    release(allocated);
  return true;
}

} // namespace spmdc::runner
