//===- ModuleFile.cpp - the executable module spmdc writes ----------------===//

#include "spmdc/Module/ModuleFile.h"
#include "spmdc/Runtime/Limits.h"

#include <nlohmann/json.hpp>

namespace spmdc {

static constexpr llvm::StringLiteral kMagic = "SPMDC-MODULE 1\n";
/// The header's version: 2 since the step's entry takes its arguments and
/// results through memory (--wide-interfaces-through-memory).
static constexpr int kVersion = 2;
/// The most ranks a mesh may have (as a shard spec's, ShardSpec.h).
static constexpr int64_t kMaxRanks = int64_t(1) << 20;

bool ModuleFile::looksLikeModule(llvm::StringRef bytes) {
  return bytes.starts_with(kMagic);
}

static nlohmann::json toJson(const ModuleValue &v) {
  nlohmann::json j = {{"name", v.name},
                      {"role", v.role},
                      {"dtype", v.dtype},
                      {"shape", v.shape}};
  if (v.indexBound)
    j["index_bound"] = *v.indexBound;
  if (!v.shardDims.empty() || !v.partialAxes.empty())
    j["sharding"] = {{"dims", v.shardDims}, {"partial", v.partialAxes}};
  if (!v.logicalShape.empty())
    j["sharding"]["logical"] = v.logicalShape;
  if (!v.shardParts.empty())
    j["sharding"]["parts"] = v.shardParts;
  if (!v.aliases.empty())
    j["aliases"] = v.aliases;
  if (v.buffer)
    j["buffer"] = true;
  if (v.defaultValue)
    j["default"] = *v.defaultValue;
  return j;
}

/// Header, program and native code; with `weightsBytes` of weights to
/// follow.
static std::string serializeHead(const ModuleFile &m, uint64_t weightsBytes);

std::string ModuleFile::serialize() const { return serializeHead(*this, 0); }

bool ModuleFile::write(const rt::ByteSink &sink, std::string &error) const {
  rt::SafeTensorsPlan plan;
  if (!initialValues.empty())
    plan = rt::planSafeTensors(initialValues);
  std::string head = serializeHead(*this, plan.totalBytes);
  if (!sink(head.data(), head.size())) {
    error = "cannot write the module";
    return false;
  }
  return initialValues.empty() || rt::writeSafeTensors(plan, sink, error);
}

static std::string serializeHead(const ModuleFile &m, uint64_t weightsBytes) {
  const std::string &target = m.target, &entry = m.entry;
  const auto &meshAxes = m.meshAxes;
  const auto &meshShape = m.meshShape;
  const auto &arguments = m.arguments;
  const auto &results = m.results;
  const std::string &program = m.program, &native = m.native;
  nlohmann::json header = {
      {"version", kVersion}, {"target", target}, {"entry", entry}};
  if (!meshAxes.empty())
    header["mesh"] = {{"axes", meshAxes}, {"shape", meshShape}};
  header["arguments"] = nlohmann::json::array();
  for (const ModuleValue &v : arguments)
    header["arguments"].push_back(toJson(v));
  header["results"] = nlohmann::json::array();
  for (const ModuleValue &v : results)
    header["results"].push_back(toJson(v));
  if (!m.evalEntry.empty())
    header["eval"] = {{"entry", m.evalEntry}, {"arguments", m.evalArguments}};
  if (!m.constantBuffers.empty()) {
    header["constant_buffers"] = nlohmann::json::array();
    for (const ModuleValue &v : m.constantBuffers)
      header["constant_buffers"].push_back(toJson(v));
  }
  if (m.bufferPeakBytes)
    header["buffer_peak_bytes"] = m.bufferPeakBytes;
  if (!native.empty() || weightsBytes)
    header["program_bytes"] = program.size();
  if (!native.empty())
    header["native"] = {{"triple", m.nativeTriple},
                        {"cpu", m.nativeCpu},
                        {"features", m.nativeFeatures},
                        {"bytes", native.size()}};
  if (weightsBytes)
    header["weights"] = {{"format", "safetensors"}, {"bytes", weightsBytes}};
  std::string text = header.dump(1);
  return kMagic.str() + std::to_string(text.size()) + "\n" + text + program +
         native;
}

std::optional<ModuleFile> ModuleFile::parse(llvm::StringRef bytes,
                                            std::string &error) {
  if (!looksLikeModule(bytes)) {
    error = "not an spmdc module (no 'SPMDC-MODULE 1' header)";
    return std::nullopt;
  }
  bytes = bytes.drop_front(kMagic.size());
  size_t newline = bytes.find('\n');
  uint64_t length;
  if (newline == llvm::StringRef::npos ||
      bytes.take_front(newline).getAsInteger(10, length) ||
      bytes.size() < newline + 1 + length) {
    error = "the module's header length is missing or beyond the file";
    return std::nullopt;
  }
  llvm::StringRef headerText = bytes.substr(newline + 1, length);
  uint64_t bodyStart = kMagic.size() + newline + 1 + length;
  ModuleFile file;
  llvm::StringRef body = bytes.drop_front(newline + 1 + length);
  size_t deep = rt::findJsonDepthExcess(headerText.data(), headerText.size());
  if (deep != std::string::npos) {
    error = "the module's header is nested deeper than " +
            std::to_string(rt::kMaxJsonDepth) + " levels (at header byte " +
            std::to_string(deep) + ")";
    return std::nullopt;
  }
  try {
    nlohmann::json header =
        nlohmann::json::parse(headerText.begin(), headerText.end());
    if (header.at("version") != kVersion) {
      error = "unsupported module version " + header["version"].dump() +
              ": this spmd-run runs version " + std::to_string(kVersion) +
              " modules; compile it again with this spmdc";
      return std::nullopt;
    }
    file.target = header.at("target").get<std::string>();
    file.entry = header.at("entry").get<std::string>();
    if (header.contains("mesh")) {
      file.meshAxes = header["mesh"].at("axes").get<std::vector<std::string>>();
      file.meshShape = header["mesh"].at("shape").get<std::vector<int64_t>>();
      int64_t ranks = 1;
      for (int64_t size : file.meshShape)
        if (size < 1 || __builtin_mul_overflow(ranks, size, &ranks) ||
            ranks > kMaxRanks) {
          error = "the module's mesh shape " + header["mesh"]["shape"].dump() +
                  " is not positive sizes of at most " +
                  std::to_string(kMaxRanks) + " ranks in all";
          return std::nullopt;
        }
    }
    // Shapes are checked here, before anything is sized by them: sizes
    // non-negative, counts within int64 (the --max-tensor-bytes limit
    // applies where a tensor is made, spmd-run's signature).
    std::string valueError;
    auto readValues = [&valueError](const nlohmann::json &list,
                                    std::vector<ModuleValue> &out) {
      for (const nlohmann::json &j : list) {
        ModuleValue v;
        v.name = j.at("name").get<std::string>();
        v.role = j.at("role").get<std::string>();
        v.dtype = j.at("dtype").get<std::string>();
        v.shape = j.at("shape").get<std::vector<int64_t>>();
        if (j.contains("index_bound"))
          v.indexBound = j["index_bound"].get<int64_t>();
        if (j.contains("sharding")) {
          v.shardDims =
              j["sharding"].at("dims").get<std::vector<std::vector<int>>>();
          v.partialAxes = j["sharding"].at("partial").get<std::vector<int>>();
          if (j["sharding"].contains("logical"))
            v.logicalShape =
                j["sharding"]["logical"].get<std::vector<int64_t>>();
          if (j["sharding"].contains("parts"))
            v.shardParts = j["sharding"]["parts"].get<std::vector<int64_t>>();
        }
        if (j.contains("aliases"))
          v.aliases = j["aliases"].get<std::vector<std::string>>();
        v.buffer = j.value("buffer", false);
        if (j.contains("default"))
          v.defaultValue = j["default"].get<double>();
        int64_t count = 1;
        for (int64_t size : v.shape)
          if (size < 0 || __builtin_mul_overflow(count, size, &count) ||
              __builtin_mul_overflow(count, int64_t(8), &count)) {
            valueError = "the module's value '" + v.name + "' has shape " +
                         j["shape"].dump() +
                         ", which is negative or has more bytes than a "
                         "64-bit count holds";
            return false;
          }
        out.push_back(v);
      }
      return true;
    };
    if (!readValues(header.at("arguments"), file.arguments) ||
        !readValues(header.at("results"), file.results) ||
        (header.contains("constant_buffers") &&
         !readValues(header["constant_buffers"], file.constantBuffers))) {
      error = valueError;
      return std::nullopt;
    }
    if (header.contains("eval")) {
      file.evalEntry = header["eval"].at("entry").get<std::string>();
      file.evalArguments =
          header["eval"].at("arguments").get<std::vector<size_t>>();
      for (size_t index : file.evalArguments)
        if (index >= file.arguments.size()) {
          error = "the module's eval program takes argument " +
                  std::to_string(index) + " of a step of " +
                  std::to_string(file.arguments.size());
          return std::nullopt;
        }
    }
    if (header.contains("buffer_peak_bytes"))
      file.bufferPeakBytes = header["buffer_peak_bytes"].get<uint64_t>();
    // Without native code or weights the program is the rest of the file.
    uint64_t programBytes = body.size();
    uint64_t nativeBytes = 0;
    if (header.contains("weights")) {
      programBytes = header.at("program_bytes").get<uint64_t>();
      file.weightsBytes = header["weights"].at("bytes").get<uint64_t>();
      if (header.contains("native"))
        nativeBytes = header["native"].at("bytes").get<uint64_t>();
      uint64_t before;
      if (__builtin_add_overflow(programBytes, nativeBytes, &before))
        before = UINT64_MAX;
      if (before > body.size() || body.size() - before != file.weightsBytes) {
        error = "the module's weights are " +
                std::to_string(file.weightsBytes) +
                " bytes by its header, but " +
                (before > body.size()
                     ? std::string("its program and native code are cut short")
                     : std::to_string(body.size() - before) +
                           " follow its program") +
                " (was the file truncated?)";
        return std::nullopt;
      }
      file.weightsOffset = bodyStart + before;
    }
    if (header.contains("native")) {
      const nlohmann::json &native = header["native"];
      programBytes = header.at("program_bytes").get<uint64_t>();
      nativeBytes = native.at("bytes").get<uint64_t>();
      uint64_t total;
      if (__builtin_add_overflow(programBytes, nativeBytes, &total) ||
          __builtin_add_overflow(total, file.weightsBytes, &total) ||
          total != body.size()) {
        error = "the module's program and native code are " +
                std::to_string(programBytes + nativeBytes) +
                " bytes by its header, but " + std::to_string(body.size()) +
                " follow it";
        return std::nullopt;
      }
      file.native = body.substr(programBytes, nativeBytes).str();
      file.nativeTriple = native.at("triple").get<std::string>();
      file.nativeCpu = native.at("cpu").get<std::string>();
      file.nativeFeatures = native.at("features").get<std::string>();
    }
    file.program = body.take_front(programBytes).str();
  } catch (const nlohmann::json::exception &e) {
    error = std::string("malformed module header: ") + e.what();
    return std::nullopt;
  }
  return file;
}

} // namespace spmdc
