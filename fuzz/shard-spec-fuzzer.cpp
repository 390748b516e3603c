//===- shard-spec-fuzzer.cpp - fuzz the shard-spec parser -----------------===//
//
// Bytes as a shard spec (docs/shard-spec.md) through parseShardSpec, then
// the lookups the shard stage makes of a parsed spec.
//
//===----------------------------------------------------------------------===//

#include "MlirFuzzSupport.h"

#include "spmdc/Sharding/ShardSpec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  std::optional<spmdc::ShardSpec> spec =
      spmdc::parseShardSpec(text, "fuzz.json", spmdc::fuzz::context());
  if (!spec)
    return 0;
  (void)spec->numRanks();
  for (const char *name : {"tokens", "layers.0.mlp.fc1.weight", "x", ""}) {
    (void)spec->findRule(name);
    (void)spec->batchDim(name);
  }
  for (const spmdc::TensorRule &rule : spec->tensors)
    for (const auto &[axis, placement] : rule.placements)
      (void)spec->axisIndex(axis), (void)placement.str();
  return 0;
}
