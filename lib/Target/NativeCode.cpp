//===- NativeCode.cpp - a lowered step as a host object file --------------===//

#include "spmdc/Target/NativeCode.h"

#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/Analysis/CFG.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"
#include "llvm/Transforms/InstCombine/InstCombine.h"

#include <algorithm>
#include <tuple>

using namespace mlir;

namespace spmdc {
namespace {

/// `void <name>(void **args)`: loads each argument of `entry` from the
/// pointer args[i], calls it, and stores its result through args[numArgs],
/// as ExecutionEngine's packed wrappers do.
void addPackedEntry(llvm::Module &module, llvm::Function &entry,
                    llvm::StringRef name) {
  llvm::LLVMContext &context = module.getContext();
  auto *ptr = llvm::PointerType::getUnqual(context);
  auto *type =
      llvm::FunctionType::get(llvm::Type::getVoidTy(context), {ptr}, false);
  auto *wrapper = llvm::Function::Create(
      type, llvm::GlobalValue::ExternalLinkage, name, module);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(context, "entry", wrapper));
  llvm::Value *args = wrapper->getArg(0);
  llvm::SmallVector<llvm::Value *> values;
  for (auto [i, arg] : llvm::enumerate(entry.args())) {
    llvm::Value *slot = b.CreateLoad(
        ptr, b.CreateConstGEP1_64(ptr, args, static_cast<uint64_t>(i)));
    values.push_back(b.CreateLoad(arg.getType(), slot));
  }
  llvm::Value *result = b.CreateCall(&entry, values);
  if (!result->getType()->isVoidTy()) {
    llvm::Value *slot =
        b.CreateLoad(ptr, b.CreateConstGEP1_64(ptr, args, entry.arg_size()));
    b.CreateStore(result, slot);
  }
  b.CreateRetVoid();
}

/// Replaces the array `name` (llvm.global_ctors or llvm.global_dtors) by a
/// function `wrapper` that calls its functions in priority order (reverse
/// for destructors, which run last-first): the object is linked by
/// spmd-run's JIT linker, which runs no constructors itself.
void addStructorCaller(llvm::Module &module, llvm::StringRef name,
                       llvm::StringRef wrapper, bool reverse) {
  llvm::LLVMContext &context = module.getContext();
  auto *type = llvm::FunctionType::get(llvm::Type::getVoidTy(context), false);
  auto *caller = llvm::Function::Create(
      type, llvm::GlobalValue::ExternalLinkage, wrapper, module);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(context, "entry", caller));
  // (priority, position in the array): the order they must run in.
  std::vector<std::tuple<uint64_t, size_t, llvm::Function *>> structors;
  if (llvm::GlobalVariable *array = module.getGlobalVariable(name)) {
    if (auto *list = dyn_cast<llvm::ConstantArray>(array->getInitializer()))
      for (llvm::Value *operand : list->operands()) {
        auto *entry = cast<llvm::ConstantStruct>(operand);
        auto *priority = cast<llvm::ConstantInt>(entry->getOperand(0));
        if (auto *f = dyn_cast<llvm::Function>(entry->getOperand(1)))
          structors.emplace_back(priority->getZExtValue(), structors.size(), f);
      }
    array->eraseFromParent();
  }
  std::sort(structors.begin(), structors.end());
  if (reverse)
    std::reverse(structors.begin(), structors.end());
  for (auto &[priority, position, function] : structors)
    b.CreateCall(function);
  b.CreateRetVoid();
}

/// The features `machine` compiles for, as "+name,..." (those its CPU
/// implies and those asked for).
std::string enabledFeatures(const llvm::TargetMachine &machine) {
  const llvm::MCSubtargetInfo *info = machine.getMCSubtargetInfo();
  std::string list;
  for (const llvm::SubtargetFeatureKV &feature :
       info->getAllProcessorFeatures())
    if (info->checkFeatures(std::string("+") + feature.Key))
      list += (list.empty() ? "+" : ",+") + std::string(feature.Key);
  return list;
}

/// Instructions of a loop-free function from which it counts as glue.
constexpr size_t kGlueInstructions = 256;

bool isGlue(llvm::Function &function) {
  if (function.isDeclaration() ||
      function.getInstructionCount() < kGlueInstructions)
    return false;
  llvm::SmallVector<std::pair<const llvm::BasicBlock *,
                              const llvm::BasicBlock *>>
      backEdges;
  llvm::FindFunctionBackedges(function, backEdges);
  return backEdges.empty();
}

} // namespace

void prepareGlueForCodegen(llvm::Module &module) {
  llvm::LoopAnalysisManager loops;
  llvm::FunctionAnalysisManager functions;
  llvm::CGSCCAnalysisManager sccs;
  llvm::ModuleAnalysisManager modules;
  llvm::PassBuilder builder;
  builder.registerModuleAnalyses(modules);
  builder.registerCGSCCAnalyses(sccs);
  builder.registerFunctionAnalyses(functions);
  builder.registerLoopAnalyses(loops);
  builder.crossRegisterProxies(loops, functions, sccs, modules);
  llvm::FunctionPassManager simplify;
  simplify.addPass(llvm::InstCombinePass());
  for (llvm::Function &function : module) {
    if (!isGlue(function))
      continue;
    simplify.run(function, functions);
    function.addFnAttr(llvm::Attribute::OptimizeNone);
    function.addFnAttr(llvm::Attribute::NoInline);
  }
}

FailureOr<NativeObject> compileToObject(ModuleOp module,
                                        const NativeCodeOptions &options) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  NativeObject object;
  object.triple = llvm::sys::getProcessTriple();
  std::string features;
  if (options.cpu == "native") {
    object.cpu = llvm::sys::getHostCPUName().str();
    for (const auto &[name, enabled] : llvm::sys::getHostCPUFeatures())
      features += (features.empty() ? "" : ",") +
                  std::string(enabled ? "+" : "-") + name.str();
  } else {
    object.cpu = options.cpu;
  }
  std::string error;
  llvm::Triple triple(object.triple);
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return module.emitError("--aot: cannot target ")
           << object.triple << ": " << error;
  // Checked against the generic subtarget's list: a subtarget made for an
  // unknown CPU warns on stderr before anyone can ask.
  std::unique_ptr<llvm::MCSubtargetInfo> generic(
      target->createMCSubtargetInfo(triple, "", ""));
  if (!llvm::any_of(generic->getAllProcessorDescriptions(),
                    [&](const llvm::SubtargetSubTypeKV &known) {
                      return object.cpu == known.Key;
                    }))
    return module.emitError("--aot-cpu: '")
           << object.cpu << "' is not a CPU LLVM knows for " << object.triple;
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      triple, object.cpu, features, llvm::TargetOptions(), llvm::Reloc::PIC_,
      std::nullopt, static_cast<llvm::CodeGenOptLevel>(options.optLevel)));

  llvm::LLVMContext context;
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(module, context);
  if (!llvmModule)
    return module.emitError("--aot: the step does not translate to LLVM IR");
  llvmModule->setDataLayout(machine->createDataLayout());
  llvmModule->setTargetTriple(triple);
  llvm::Function *entry = llvmModule->getFunction(options.entry);
  if (!entry || entry->isDeclaration())
    return module.emitError("--aot: no entry function '")
           << options.entry << "'";
  addPackedEntry(*llvmModule, *entry, "spmd_step_main");
  if (!options.evalEntry.empty()) {
    llvm::Function *eval = llvmModule->getFunction(options.evalEntry);
    if (!eval || eval->isDeclaration())
      return module.emitError("--aot: no eval function '")
             << options.evalEntry << "'";
    addPackedEntry(*llvmModule, *eval, "spmd_step_eval");
  }
  addStructorCaller(*llvmModule, "llvm.global_ctors", "spmd_step_init",
                    /*reverse=*/false);
  addStructorCaller(*llvmModule, "llvm.global_dtors", "spmd_step_fini",
                    /*reverse=*/true);
  prepareGlueForCodegen(*llvmModule);
  unsigned irLevel = options.optLevel >= 2 ? options.optLevel : 0;
  if (llvm::Error e = makeOptimizingTransformer(irLevel, 0, machine.get())(
          llvmModule.get()))
    return module.emitError("--aot: ") << llvm::toString(std::move(e));

  {
    llvm::raw_string_ostream stream(object.bytes);
    llvm::buffer_ostream buffer(stream);
    llvm::legacy::PassManager passes;
    if (machine->addPassesToEmitFile(passes, buffer, nullptr,
                                     llvm::CodeGenFileType::ObjectFile))
      return module.emitError("--aot: ")
             << object.cpu << " cannot emit object files";
    passes.run(*llvmModule);
  }
  object.features = enabledFeatures(*machine);
  return object;
}

} // namespace spmdc
