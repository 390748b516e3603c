//===- module-fuzzer.cpp - fuzz the module-file reader --------------------===//
//
// Bytes as an executable module (docs/module.md) through ModuleFile::parse,
// then what spmd-run reads of a parsed module before it compiles anything:
// the mesh, the step's signature and shardings, and the weights section.
//
//===----------------------------------------------------------------------===//

#include "FuzzSupport.h"
#include "MlirFuzzSupport.h"

#include "spmdc/Module/ModuleFile.h"
#include "spmdc/Runner/StepSignature.h"
#include "spmdc/Runtime/SafeTensors.h"

using namespace spmdc;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef bytes(reinterpret_cast<const char *>(data), size);
  std::string error;
  std::optional<ModuleFile> module = ModuleFile::parse(bytes, error);
  if (!module)
    return 0;
  runner::StepSignature signature;
  if (!runner::readModuleMesh(*module, signature.mesh))
    return 0;
  (void)runner::readModuleSignature(*module, fuzz::context(), signature,
                                    error);
  if (module->weightsBytes) {
    fuzz::MemoryFile file(data, size);
    if (file.ok())
      if (auto weights = rt::SafeTensorsReader::open(
              file.path(), error, module->weightsOffset, module->weightsBytes))
        for (const rt::TensorInfo &info : weights->tensors()) {
          std::vector<double> values;
          (void)weights->readAsDouble(info.name, values, error);
        }
  }
  return 0;
}
