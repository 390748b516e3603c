//===- ShardSpec.cpp - the shard spec a user gives spmdc ------------------===//

#include "spmdc/Sharding/ShardSpec.h"
#include "spmdc/Support/JsonDocument.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/GlobPattern.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cmath>

using namespace mlir;
using json = nlohmann::json;

namespace spmdc {

std::optional<Preset> parsePreset(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<Preset>>(name)
      .Case("ddp", Preset::Ddp)
      .Case("zero1", Preset::Zero1)
      .Case("zero2", Preset::Zero2)
      .Case("zero3", Preset::Zero3)
      .Case("megatron", Preset::Megatron)
      .Case("sequence", Preset::Sequence)
      .Default(std::nullopt);
}

llvm::StringRef presetName(Preset preset) {
  switch (preset) {
  case Preset::Ddp:
    return "ddp";
  case Preset::Zero1:
    return "zero1";
  case Preset::Zero2:
    return "zero2";
  case Preset::Zero3:
    return "zero3";
  case Preset::Megatron:
    return "megatron";
  case Preset::Sequence:
    return "sequence";
  }
  llvm_unreachable("every preset is named");
}

bool isZero(Preset preset) {
  return preset == Preset::Zero1 || preset == Preset::Zero2 ||
         preset == Preset::Zero3;
}

bool isDataParallel(Preset preset) {
  return preset == Preset::Ddp || isZero(preset);
}

std::optional<Placement> Placement::parse(StringRef text) {
  text = text.trim();
  if (text == "R")
    return Placement{Kind::Replicate, 0};
  if (text == "P")
    return Placement{Kind::Partial, 0};
  int64_t dim;
  if (text.consume_front("S(") && text.consume_back(")") &&
      !text.trim().getAsInteger(10, dim))
    return Placement{Kind::Shard, dim};
  return std::nullopt;
}

std::string Placement::str() const {
  switch (kind) {
  case Kind::Replicate:
    return "R";
  case Kind::Partial:
    return "P";
  case Kind::Shard:
    return "S(" + std::to_string(dim) + ")";
  }
  return "R";
}

int64_t ShardSpec::numRanks() const {
  int64_t n = 1;
  for (int64_t s : shape)
    n *= s;
  return n;
}

int ShardSpec::axisIndex(StringRef axis) const {
  for (auto [i, a] : llvm::enumerate(axes))
    if (a == axis)
      return i;
  return -1;
}

static bool globMatches(StringRef pattern, StringRef name) {
  llvm::Expected<llvm::GlobPattern> glob = llvm::GlobPattern::create(pattern);
  if (!glob) {
    llvm::consumeError(glob.takeError());
    return false;
  }
  return glob->match(name);
}

const TensorRule *ShardSpec::findRule(StringRef name) const {
  const TensorRule *best = nullptr;
  for (const TensorRule &rule : tensors) {
    if (!rule.isGlob) {
      if (rule.pattern == name)
        return &rule;
      continue;
    }
    if (globMatches(rule.pattern, name) &&
        (!best || rule.pattern.size() > best->pattern.size()))
      best = &rule;
  }
  return best;
}

int64_t ShardSpec::batchDim(StringRef name) const {
  // The same precedence as placements: an exact name, then the longest glob.
  const std::pair<std::string, int64_t> *best = nullptr;
  for (const auto &entry : batchDims) {
    if (entry.first == name)
      return entry.second;
    if (globMatches(entry.first, name) &&
        (!best || entry.first.size() > best->first.size()))
      best = &entry;
  }
  return best ? best->second : 0;
}

namespace {
class SpecParser {
public:
  SpecParser(MLIRContext &context, StringRef fileName)
      : context(context), fileName(fileName.str()) {}

  std::optional<ShardSpec> parse(const json &root);

private:
  InFlightDiagnostic error(const std::string &pointer) {
    return emitError(jsonPointerLoc(context, fileName, pointer));
  }
  LogicalResult parseMesh(const json &mesh, ShardSpec &spec);
  LogicalResult parseOptimizer(const json &optimizer, ShardSpec &spec);
  LogicalResult parseNetwork(const json &network, ShardSpec &spec);

  MLIRContext &context;
  std::string fileName;
};

LogicalResult SpecParser::parseMesh(const json &mesh, ShardSpec &spec) {
  if (failed(checkJsonKeys(context, fileName, mesh, "/mesh",
                           {"axes", "shape"}, {"axes", "shape"})))
    return failure();
  const json &axes = mesh["axes"], &shape = mesh["shape"];
  if (!axes.is_array() || axes.empty())
    return error("/mesh/axes") << "expected a non-empty list of axis names";
  if (!shape.is_array() || shape.size() != axes.size())
    return error("/mesh/shape")
           << "expected one size per axis (" << axes.size() << ")";
  for (auto [i, axis] : llvm::enumerate(axes)) {
    std::string pointer = "/mesh/axes/" + std::to_string(i);
    if (!axis.is_string() || axis.get<std::string>().empty())
      return error(pointer) << "expected an axis name";
    if (spec.axisIndex(axis.get<std::string>()) >= 0)
      return error(pointer) << "axis '" << axis.get<std::string>()
                            << "' is named twice";
    spec.axes.push_back(axis.get<std::string>());
  }
  int64_t ranks = 1;
  for (auto [i, size] : llvm::enumerate(shape)) {
    if (!size.is_number_integer() || size.get<int64_t>() < 1)
      return error("/mesh/shape/" + std::to_string(i))
             << "expected a positive integer, got " << size.dump();
    // Sized per rank downstream (the report, the interpreter's ranks).
    if (__builtin_mul_overflow(ranks, size.get<int64_t>(), &ranks) ||
        ranks > kMaxMeshRanks)
      return error("/mesh/shape")
             << "the mesh has more than " << kMaxMeshRanks << " ranks";
    spec.shape.push_back(size.get<int64_t>());
  }
  return success();
}

LogicalResult SpecParser::parseOptimizer(const json &optimizer,
                                         ShardSpec &spec) {
  if (failed(checkJsonKeys(context, fileName, optimizer, "/optimizer",
                           {"name", "lr", "momentum", "weight_decay", "beta1",
                            "beta2", "eps", "clip_grad_norm"},
                           {})))
    return failure();
  for (auto it = optimizer.begin(); it != optimizer.end(); ++it) {
    std::string pointer = "/optimizer/" + it.key();
    if (it.key() == "name") {
      if (!it.value().is_string() ||
          (it.value() != "sgd" && it.value() != "adamw"))
        return error(pointer) << "expected \"sgd\" or \"adamw\", got "
                              << it.value().dump();
      spec.optimizer = it.value() == "sgd" ? tg::OptimizerKind::SGD
                                           : tg::OptimizerKind::AdamW;
    } else if (!it.value().is_number()) {
      return error(pointer) << "expected a number, got " << it.value().dump();
    } else if (it.key() == "clip_grad_norm" &&
               !(it.value().get<double>() > 0 &&
                 std::isfinite(it.value().get<double>()))) {
      return error(pointer)
             << "expected a positive finite number, got " << it.value().dump();
    } else {
      spec.optimizerSettings[it.key()] = it.value().get<double>();
    }
  }
  return success();
}

LogicalResult SpecParser::parseNetwork(const json &network, ShardSpec &spec) {
  if (failed(checkJsonKeys(context, fileName, network, "/network",
                           {"alpha_us", "gbps", "flops", "membw", "ranks"},
                           {})))
    return failure();
  for (auto it = network.begin(); it != network.end(); ++it) {
    std::string pointer = "/network/" + it.key();
    if (!it.value().is_number())
      return error(pointer) << "expected a number, got " << it.value().dump();
    double x = it.value().get<double>();
    if (it.key() == "ranks" ? !(it.value().is_number_integer() && x >= 1 &&
                                x <= kMaxMeshRanks)
        : it.key() == "alpha_us" ? !(x >= 0 && std::isfinite(x))
                                 : !(x > 0 && std::isfinite(x)))
      return error(pointer)
             << (it.key() == "ranks" ? "expected a whole number from 1 to "
                                           "2^20"
                 : it.key() == "alpha_us" ? "expected a finite number, 0 or "
                                            "more"
                                          : "expected a finite number above 0")
             << ", got " << it.value().dump();
    spec.networkSettings[it.key()] = x;
  }
  return success();
}

std::optional<ShardSpec> SpecParser::parse(const json &root) {
  ShardSpec spec;
  spec.fileName = fileName;
  if (failed(checkJsonKeys(context, fileName, root, "",
                           {"version", "mesh", "presets", "tensors",
                            "batch_dims", "optimizer", "network"},
                           {"version", "mesh"})))
    return std::nullopt;
  if (!root["version"].is_number_integer() || root["version"] != 1) {
    error("/version") << "unsupported version " << root["version"].dump()
                      << " (this spmdc reads version 1)";
    return std::nullopt;
  }
  if (failed(parseMesh(root["mesh"], spec)))
    return std::nullopt;

  if (root.contains("presets")) {
    const json &presets = root["presets"];
    if (!presets.is_object()) {
      error("/presets") << "expected an object of axis -> preset";
      return std::nullopt;
    }
    for (auto it = presets.begin(); it != presets.end(); ++it) {
      std::string pointer = "/presets/" + it.key();
      if (spec.axisIndex(it.key()) < 0) {
        error(pointer) << "unknown mesh axis '" << it.key() << "'";
        return std::nullopt;
      }
      std::optional<Preset> preset =
          it.value().is_string() ? parsePreset(it.value().get<std::string>())
                                 : std::nullopt;
      if (!preset) {
        error(pointer) << "unknown preset " << it.value().dump()
                       << " (expected ddp, zero1, zero2, zero3, megatron or "
                          "sequence)";
        return std::nullopt;
      }
      spec.presets[it.key()] = *preset;
    }
  }

  if (root.contains("tensors")) {
    const json &tensors = root["tensors"];
    if (!tensors.is_object()) {
      error("/tensors") << "expected an object of tensor name -> placements";
      return std::nullopt;
    }
    for (auto it = tensors.begin(); it != tensors.end(); ++it) {
      TensorRule rule;
      rule.pattern = it.key();
      rule.isGlob = StringRef(it.key()).find_first_of("*?[") != StringRef::npos;
      rule.pointer = "/tensors/" + it.key();
      if (rule.isGlob) {
        llvm::Expected<llvm::GlobPattern> glob =
            llvm::GlobPattern::create(rule.pattern);
        if (!glob) {
          error(rule.pointer) << "malformed glob '" << rule.pattern
                              << "': " << llvm::toString(glob.takeError());
          return std::nullopt;
        }
      }
      if (!it.value().is_object()) {
        error(rule.pointer) << "expected an object of mesh axis -> placement";
        return std::nullopt;
      }
      for (auto p = it.value().begin(); p != it.value().end(); ++p) {
        std::string pointer = rule.pointer + "/" + p.key();
        if (spec.axisIndex(p.key()) < 0) {
          error(pointer) << "unknown mesh axis '" << p.key() << "'";
          return std::nullopt;
        }
        std::optional<Placement> placement;
        if (p.value().is_string())
          placement = Placement::parse(p.value().get<std::string>());
        if (!placement) {
          error(pointer) << "expected a placement \"R\", \"P\" or \"S(d)\", "
                            "got "
                         << p.value().dump();
          return std::nullopt;
        }
        rule.placements[p.key()] = *placement;
      }
      spec.tensors.push_back(std::move(rule));
    }
  }

  if (root.contains("batch_dims")) {
    const json &batchDims = root["batch_dims"];
    if (!batchDims.is_object()) {
      error("/batch_dims") << "expected an object of input name -> dim";
      return std::nullopt;
    }
    for (auto it = batchDims.begin(); it != batchDims.end(); ++it) {
      if (!it.value().is_number_integer()) {
        error("/batch_dims/" + it.key()) << "expected an integer dim";
        return std::nullopt;
      }
      spec.batchDims.push_back({it.key(), it.value().get<int64_t>()});
    }
  }

  if (root.contains("optimizer") &&
      failed(parseOptimizer(root["optimizer"], spec)))
    return std::nullopt;
  if (root.contains("network") && failed(parseNetwork(root["network"], spec)))
    return std::nullopt;
  return spec;
}
} // namespace

std::optional<ShardSpec> parseShardSpec(StringRef text, StringRef fileName,
                                        MLIRContext &context) {
  std::optional<json> root = parseJsonDocument(text, fileName, context);
  if (!root)
    return std::nullopt;
  return SpecParser(context, fileName).parse(*root);
}

std::optional<ShardSpec> readShardSpec(StringRef path, MLIRContext &context) {
  std::string error;
  if (path == "-") {
    emitError(FileLineColLoc::get(&context, "--shard-spec", 0, 0))
        << "the shard spec cannot come from stdin (the graph may): give a "
           "file";
    return std::nullopt;
  }
  std::unique_ptr<llvm::MemoryBuffer> buffer = openInputFile(path, &error);
  if (!buffer) {
    emitError(FileLineColLoc::get(&context, path, 0, 0)) << error;
    return std::nullopt;
  }
  return parseShardSpec(buffer->getBuffer(), path, context);
}

} // namespace spmdc
