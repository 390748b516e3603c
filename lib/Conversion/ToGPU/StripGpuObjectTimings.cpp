//===- StripGpuObjectTimings.cpp - no wall-clock times in the module ------===//
//
// --strip-gpu-object-timings: gpu-module-to-binary records how long each
// kernel took to compile (`LLVMIRToISATimeInMs`, ...) in its gpu.object's
// properties. Those milliseconds differ from run to run, and a module that
// holds them differs too; nothing reads them, so they go.
//
//===----------------------------------------------------------------------===//

#include "spmdc/Conversion/Passes.h"

namespace spmdc {
#define GEN_PASS_DEF_STRIPGPUOBJECTTIMINGS
#include "spmdc/Conversion/Passes.h.inc"
} // namespace spmdc

using namespace mlir;

namespace {

/// `object` without the properties whose names end in "TimeInMs".
gpu::ObjectAttr withoutTimings(gpu::ObjectAttr object) {
  DictionaryAttr properties = object.getProperties();
  if (!properties)
    return object;
  SmallVector<NamedAttribute> kept;
  for (NamedAttribute property : properties)
    if (!property.getName().strref().ends_with("TimeInMs"))
      kept.push_back(property);
  if (kept.size() == properties.size())
    return object;
  auto keptProperties = kept.empty()
                            ? DictionaryAttr()
                            : DictionaryAttr::get(object.getContext(), kept);
  return gpu::ObjectAttr::get(object.getContext(), object.getTarget(),
                              object.getFormat(), object.getObject(),
                              keptProperties, object.getKernels());
}

struct StripGpuObjectTimingsPass
    : spmdc::impl::StripGpuObjectTimingsBase<StripGpuObjectTimingsPass> {
  void runOnOperation() override {
    getOperation().walk([](gpu::BinaryOp binary) {
      SmallVector<Attribute> objects;
      for (Attribute object : binary.getObjects()) {
        auto gpuObject = dyn_cast<gpu::ObjectAttr>(object);
        objects.push_back(gpuObject ? withoutTimings(gpuObject) : object);
      }
      binary.setObjectsAttr(ArrayAttr::get(binary.getContext(), objects));
    });
  }
};

} // namespace
