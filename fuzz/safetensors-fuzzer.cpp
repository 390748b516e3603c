//===- safetensors-fuzzer.cpp - fuzz the safetensors reader ---------------===//
//
// Bytes as a safetensors file through SafeTensorsReader::open, then every
// tensor read whole and as a block (the first half of each dim), as the
// runner reads --params, --data and a module's weights.
//
//===----------------------------------------------------------------------===//

#include "FuzzSupport.h"

#include "spmdc/Runtime/SafeTensors.h"

using namespace spmdc;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz::MemoryFile file(data, size);
  if (!file.ok())
    return 0;
  std::string error;
  // Also as a section of the file, as a module's weights are read.
  uint64_t start = size > 16 ? data[0] % 16 : 0;
  auto reader = start ? rt::SafeTensorsReader::open(file.path(), error, start)
                      : rt::SafeTensorsReader::open(file.path(), error);
  if (!reader)
    return 0;
  std::vector<double> values;
  for (const rt::TensorInfo &info : reader->tensors()) {
    (void)reader->readAsDouble(info.name, values, error);
    std::vector<int64_t> offsets, sizes;
    for (int64_t d : info.shape) {
      offsets.push_back(d / 4);
      sizes.push_back(d / 2);
    }
    (void)reader->readSliceAsDouble(info.name, offsets, sizes, values, error);
  }
  (void)reader->find("x");
  return 0;
}
