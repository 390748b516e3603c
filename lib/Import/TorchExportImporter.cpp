//===- TorchExportImporter.cpp - torch.export programs into tg ------------===//
//
// Reads a `.pt2` archive (a zip, read with libzip) or a bare ExportedProgram
// JSON file: the graph signature gives @main's arguments (parameters with
// their weights as `tg.init`, user inputs as data; buffers and constants
// become constants), each node becomes tg ops through AtenOps.cpp, and the
// loss output (or an appended cross-entropy) becomes the loss result.
//
//===----------------------------------------------------------------------===//

#include "TorchExport.h"

#include "spmdc/Dialect/TensorGraph/IR/GraphSignature.h"
#include "spmdc/Import/Import.h"
#include "spmdc/Support/JsonDocument.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Path.h"

#include <zip.h>

using namespace mlir;
using json = nlohmann::json;

namespace spmdc {
namespace {

/// The files of a zip archive, read into memory by name.
class Archive {
public:
  /// Opens `bytes` as a zip; empty with `error` set if it is not one.
  static std::unique_ptr<Archive> open(StringRef bytes, std::string &error) {
    zip_error_t zipError;
    zip_error_init(&zipError);
    zip_source_t *source =
        zip_source_buffer_create(bytes.data(), bytes.size(), 0, &zipError);
    zip_t *zip = source ? zip_open_from_source(source, ZIP_RDONLY, &zipError)
                        : nullptr;
    if (!zip) {
      error = std::string("not a zip archive (") +
              zip_error_strerror(&zipError) + ")";
      if (source)
        zip_source_free(source);
      zip_error_fini(&zipError);
      return nullptr;
    }
    zip_error_fini(&zipError);
    auto archive = std::unique_ptr<Archive>(new Archive());
    archive->zip = zip;
    return archive;
  }
  ~Archive() { zip_discard(zip); }

  std::vector<std::string> names() const {
    std::vector<std::string> result;
    zip_int64_t n = zip_get_num_entries(zip, 0);
    for (zip_int64_t i = 0; i < n; ++i)
      if (const char *name = zip_get_name(zip, i, 0))
        result.push_back(name);
    return result;
  }

  /// The bytes of `name`; false with `error` set if it cannot be read.
  bool read(const std::string &name, std::string &bytes, std::string &error) {
    zip_stat_t stat;
    zip_stat_init(&stat);
    if (zip_stat(zip, name.c_str(), 0, &stat) != 0) {
      error = "the archive has no '" + name + "'";
      return false;
    }
    zip_file_t *file = zip_fopen(zip, name.c_str(), 0);
    if (!file) {
      error = "cannot open '" + name + "': " + zip_strerror(zip);
      return false;
    }
    bytes.resize(stat.size);
    zip_int64_t got = zip_fread(file, bytes.data(), stat.size);
    zip_fclose(file);
    if (got != static_cast<zip_int64_t>(stat.size)) {
      error = "cannot read '" + name + "'";
      return false;
    }
    return true;
  }

private:
  Archive() = default;
  zip_t *zip = nullptr;
};

int64_t elementBytes(Type type) {
  return std::max<int64_t>(1, type.getIntOrFloatBitWidth() / 8);
}

class TorchExportImporter {
public:
  TorchExportImporter(MLIRContext &context, StringRef fileName,
                      const ImportOptions &options)
      : context(context), fileName(fileName.str()), options(options),
        builder(&context),
        fileLoc(FileLineColLoc::get(&context, fileName, 0, 0)) {}

  OwningOpRef<ModuleOp> importArchive(StringRef bytes);
  OwningOpRef<ModuleOp> importProgram(const json &program);

private:
  InFlightDiagnostic error(const std::string &place) {
    return emitError(jsonPointerLoc(context, fileName, place));
  }
  FailureOr<RankedTensorType> typeOfMeta(const json &meta,
                                         const std::string &place);
  /// The logical row-major values of a stored tensor (strides and storage
  /// offset applied).
  FailureOr<DenseElementsAttr> loadTensor(const std::string &name,
                                          const json &entry,
                                          const std::string &place);
  LogicalResult importNode(const json &node, size_t index);
  Location nodeLoc(const json &node);

  MLIRContext &context;
  std::string fileName;
  const ImportOptions &options;
  OpBuilder builder;
  Location fileLoc;

  std::unique_ptr<Archive> archive;
  std::string prefix;
  /// Weight and constant entries by state-dict name.
  std::map<std::string, json> weights, constants;
  const json *tensorValues = nullptr;
  llvm::StringMap<Value> values;
};

FailureOr<RankedTensorType>
TorchExportImporter::typeOfMeta(const json &meta, const std::string &place) {
  if (!meta.is_object() || !meta.contains("dtype") || !meta.contains("sizes"))
    return error(place) << "expected tensor metadata with dtype and sizes";
  Type element = torch_export::scalarType(&context, meta["dtype"].get<int64_t>());
  if (!element)
    return error(place) << "unsupported dtype " << meta["dtype"].dump();
  SmallVector<int64_t> shape;
  for (const json &size : meta["sizes"]) {
    if (!size.contains("as_int"))
      return error(place) << "has a symbolic size: spmdc needs static shapes";
    shape.push_back(size["as_int"].get<int64_t>());
  }
  return RankedTensorType::get(shape, element);
}

FailureOr<DenseElementsAttr>
TorchExportImporter::loadTensor(const std::string &name, const json &entry,
                                const std::string &place) {
  if (entry.value("use_pickle", false))
    return error(place) << "'" << name
                        << "' is stored pickled, which spmdc does not read";
  const json &meta = entry["tensor_meta"];
  auto type = typeOfMeta(meta, place + "/tensor_meta");
  if (failed(type))
    return failure();
  std::string blobName =
      entry.value("folder", prefix) + entry.value("path_name", "");
  std::string bytes, message;
  if (!archive->read(blobName, bytes, message))
    return error(place) << "'" << name << "': " << message;

  // The storage the strides and offset index into must be in the blob.
  int64_t elementSize = elementBytes(type->getElementType());
  SmallVector<int64_t> strides;
  for (const json &s : meta.value("strides", json::array()))
    strides.push_back(s.value("as_int", int64_t(0)));
  int64_t offset = meta.contains("storage_offset")
                       ? meta["storage_offset"].value("as_int", int64_t(0))
                       : 0;
  if (strides.size() != static_cast<size_t>(type->getRank())) {
    strides.assign(type->getRank(), 1);
    for (int64_t d = type->getRank() - 2; d >= 0; --d)
      strides[d] = strides[d + 1] * type->getDimSize(d + 1);
  }
  int64_t lastElement = offset;
  for (int64_t d = 0; d < type->getRank(); ++d)
    lastElement += (type->getDimSize(d) - 1) * strides[d];
  int64_t needed = type->getNumElements() == 0 ? 0
                                               : (lastElement + 1) * elementSize;
  if (static_cast<int64_t>(bytes.size()) < needed)
    return error(place) << "'" << name << "' has " << bytes.size()
                        << " bytes in '" << blobName << "' but its shape "
                        << *type << " needs " << needed;

  // Gather the elements in row-major order.
  std::vector<char> data(type->getNumElements() * elementSize);
  SmallVector<int64_t> index(type->getRank(), 0);
  for (int64_t i = 0; i < type->getNumElements(); ++i) {
    int64_t at = offset;
    for (int64_t d = 0; d < type->getRank(); ++d)
      at += index[d] * strides[d];
    std::memcpy(data.data() + i * elementSize, bytes.data() + at * elementSize,
                elementSize);
    for (int64_t d = type->getRank() - 1; d >= 0; --d) {
      if (++index[d] < type->getDimSize(d))
        break;
      index[d] = 0;
    }
  }
  if (type->getElementType().isInteger(1)) {
    // DenseElementsAttr packs i1; build from bools.
    SmallVector<bool> bits;
    for (char c : data)
      bits.push_back(c != 0);
    return DenseElementsAttr::get(*type, bits);
  }
  return DenseElementsAttr::getFromRawBuffer(*type, data);
}

Location TorchExportImporter::nodeLoc(const json &node) {
  // The node's own name, then the user's source line from its stack trace.
  std::string name = node.value("name", "");
  std::string where;
  if (node.contains("metadata") && node["metadata"].contains("stack_trace")) {
    StringRef trace = node["metadata"]["stack_trace"].get_ref<const std::string &>();
    // 'File "model.py", line 12, in forward'
    // The innermost frame: the line closest to the op.
    size_t file = trace.rfind("File \"");
    size_t line = trace.find("\", line ", file);
    if (file != StringRef::npos && line != StringRef::npos) {
      StringRef path = trace.slice(file + 6, line);
      StringRef rest = trace.drop_front(line + 8);
      StringRef number = rest.take_while([](char c) { return isdigit(c); });
      where = (path + ":" + number).str();
    }
  }
  std::string label = where.empty() ? name : name + "' at '" + where;
  return NameLoc::get(StringAttr::get(&context, label), fileLoc);
}

LogicalResult TorchExportImporter::importNode(const json &node, size_t index) {
  std::string target = node.value("target", "");
  Location loc = nodeLoc(node);
  const auto &mappings = torch_export::atenMappings();
  auto mapping = mappings.find(target);
  if (mapping == mappings.end())
    return emitError(loc) << "unsupported op '" << target << "' (node #"
                          << index << "); docs/pytorch.md lists the ops "
                          << "spmdc maps";
  torch_export::Node view(
      node, builder, loc,
      [&](const std::string &name) { return values.lookup(name); },
      [&](const std::string &name) -> RankedTensorType {
        if (!tensorValues->contains(name))
          return nullptr;
        auto type = typeOfMeta((*tensorValues)[name], "/tensor_values/" + name);
        return succeeded(type) ? *type : nullptr;
      });
  view.index = index;
  if (failed(mapping->second(view)))
    return failure();
  for (auto &[name, value] : view.defined)
    values[name] = value;
  return success();
}

OwningOpRef<ModuleOp> TorchExportImporter::importArchive(StringRef bytes) {
  std::string message;
  archive = Archive::open(bytes, message);
  if (!archive) {
    error("/") << message;
    return nullptr;
  }
  // Records sit under one top-level folder: <name>/models/<name>.json.
  std::string modelName;
  for (const std::string &name : archive->names()) {
    StringRef n(name);
    size_t models = n.find("/models/");
    if (models != StringRef::npos && n.ends_with(".json")) {
      prefix = n.take_front(models + 1).str();
      modelName = name;
      break;
    }
  }
  if (modelName.empty()) {
    error("/") << "the archive has no models/<name>.json (is it a "
                  "torch.export .pt2 file?)";
    return nullptr;
  }
  std::string modelText;
  if (!archive->read(modelName, modelText, message)) {
    error("/") << message;
    return nullptr;
  }
  // Weights and constants configs, whatever their file names.
  for (const std::string &name : archive->names()) {
    StringRef n(name);
    bool isWeights = n.starts_with(prefix + "data/weights/") && n.ends_with(".json");
    bool isConstants = n.starts_with(prefix + "data/constants/") && n.ends_with(".json");
    if (!isWeights && !isConstants)
      continue;
    std::string text;
    if (!archive->read(name, text, message)) {
      error("/") << message;
      return nullptr;
    }
    std::optional<json> config =
        parseJsonDocument(text, fileName + ":" + name, context);
    if (!config)
      return nullptr;
    // Blobs sit beside their config; remember where.
    std::string folder = prefix + (isWeights ? "data/weights/" : "data/constants/");
    if (config->contains("config"))
      for (auto it = (*config)["config"].begin();
           it != (*config)["config"].end(); ++it) {
        json entry = it.value();
        entry["folder"] = folder;
        (isWeights ? weights : constants)[it.key()] = entry;
      }
  }
  std::optional<json> program =
      parseJsonDocument(modelText, fileName + ":" + modelName, context);
  if (!program)
    return nullptr;
  return importProgram(*program);
}

OwningOpRef<ModuleOp> TorchExportImporter::importProgram(const json &program) {
  if (!program.is_object() || !program.contains("graph_module")) {
    error("/") << "not an ExportedProgram (no 'graph_module')";
    return nullptr;
  }
  const json &version = program.value("schema_version", json::object());
  if (!version.is_object() || version.value("major", -1) != 8) {
    error("/schema_version") << "schema major version "
                             << version.value("major", json(nullptr)).dump()
                             << " is not supported (spmdc reads major 8)";
    return nullptr;
  }
  const json &module = program["graph_module"];
  const json &graph = module["graph"];
  const json &signature = module["signature"];
  tensorValues = &graph["tensor_values"];

  OwningOpRef<ModuleOp> result = ModuleOp::create(fileLoc);
  // The model's name: the archive's folder, or the file's stem.
  StringRef model = prefix.empty() ? llvm::sys::path::stem(fileName)
                                   : StringRef(prefix).drop_back();
  (*result)->setAttr(tg::kModelAttr, builder.getStringAttr(model));
  builder.setInsertionPointToEnd(result->getBody());

  // Arguments: parameters (with their stored weights) and user inputs;
  // buffers and constants are constants of the graph.
  SmallVector<Type> argTypes;
  SmallVector<DictionaryAttr> argAttrs;
  SmallVector<std::string> argValueNames;
  struct Fixed {
    std::string valueName;
    DenseElementsAttr value;
  };
  SmallVector<Fixed> fixedValues;
  std::map<std::string, size_t> parameterOfBlob;
  SmallVector<std::pair<std::string, size_t>> aliases;
  std::map<size_t, SmallVector<Attribute>> aliasNames;
  for (auto [i, spec] : llvm::enumerate(signature["input_specs"])) {
    std::string place = "/graph_module/signature/input_specs/" +
                        std::to_string(i);
    std::string kind = spec.begin().key();
    const json &body = spec.begin().value();
    const json &argJson = body["arg"];
    std::string valueName = argJson.contains("as_tensor")
                                ? argJson["as_tensor"].value("name", "")
                                : argJson.value("name", "");
    if (!tensorValues->contains(valueName)) {
      error(place) << "input '" << valueName << "' has no tensor metadata";
      return nullptr;
    }
    auto type = typeOfMeta((*tensorValues)[valueName],
                           "/graph_module/graph/tensor_values/" + valueName);
    if (failed(type))
      return nullptr;
    NamedAttrList attrs;
    if (kind == "parameter") {
      std::string name = body.value("parameter_name", valueName);
      auto it = weights.find(name);
      // Tied weights (one blob, two names) are one parameter: the later
      // name is an alias of the first.
      if (it != weights.end()) {
        // Same blob and same view of it: same tensor.
        std::string blob = it->second.value("path_name", "") + "|" +
                           it->second["tensor_meta"].dump();
        auto tied = parameterOfBlob.find(blob);
        if (tied != parameterOfBlob.end()) {
          aliases.push_back({valueName, tied->second});
          aliasNames[tied->second].push_back(builder.getStringAttr(name));
          continue;
        }
        parameterOfBlob[blob] = argTypes.size();
      }
      attrs.append(tg::kNameAttr, builder.getStringAttr(name));
      attrs.append(tg::kRoleAttr, builder.getStringAttr("param"));
      if (it != weights.end()) {
        auto value = loadTensor(name, it->second, place);
        if (failed(value))
          return nullptr;
        if (value->getType() != *type) {
          error(place) << "weight '" << name << "' is stored as "
                       << value->getType() << " but the graph uses " << *type;
          return nullptr;
        }
        attrs.append(tg::kInitAttr, *value);
      }
    } else if (kind == "user_input") {
      attrs.append(tg::kNameAttr, builder.getStringAttr(valueName));
      attrs.append(tg::kRoleAttr, builder.getStringAttr("data"));
    } else if (kind == "buffer" || kind == "tensor_constant") {
      std::string name = body.value(kind == "buffer" ? "buffer_name"
                                                     : "tensor_constant_name",
                                    valueName);
      auto it = weights.find(name);
      auto end = weights.end();
      if (it == end) {
        it = constants.find(name);
        end = constants.end();
      }
      if (it == end) {
        error(place) << "the archive has no value for " << kind << " '"
                     << name << "'";
        return nullptr;
      }
      auto value = loadTensor(name, it->second, place);
      if (failed(value))
        return nullptr;
      fixedValues.push_back({valueName, *value});
      continue;
    } else {
      error(place) << "unsupported input kind '" << kind << "'";
      return nullptr;
    }
    argTypes.push_back(*type);
    argAttrs.push_back(attrs.getDictionary(&context));
    argValueNames.push_back(valueName);
  }

  auto fn = func::FuncOp::create(builder, fileLoc, tg::kEntryName,
                                 builder.getFunctionType(argTypes, {}));
  Block *body = fn.addEntryBlock();
  for (auto [i, attrs] : llvm::enumerate(argAttrs)) {
    NamedAttrList list(attrs);
    if (aliasNames.count(i))
      list.append(tg::kAliasesAttr, builder.getArrayAttr(aliasNames[i]));
    fn.setArgAttrs(i, list.getDictionary(&context));
    values[argValueNames[i]] = body->getArgument(i);
  }
  for (auto &[valueName, index] : aliases)
    values[valueName] = body->getArgument(index);
  builder.setInsertionPointToStart(body);
  for (const Fixed &fixed : fixedValues)
    values[fixed.valueName] =
        tg::ConstantOp::create(builder, fileLoc, fixed.value);

  for (auto [i, node] : llvm::enumerate(graph["nodes"]))
    if (failed(importNode(node, i)))
      return nullptr;

  // Outputs: the loss (a loss_output, or the one scalar float output),
  // others as outputs.
  SmallVector<Value> results;
  SmallVector<DictionaryAttr> resultAttrs;
  auto addResult = [&](Value v, StringRef name, StringRef role) {
    NamedAttrList attrs;
    attrs.append(tg::kNameAttr, builder.getStringAttr(name));
    attrs.append(tg::kRoleAttr, builder.getStringAttr(role));
    results.push_back(v);
    resultAttrs.push_back(attrs.getDictionary(&context));
  };
  bool haveLoss = false;
  SmallVector<std::pair<std::string, Value>> userOutputs;
  for (auto [i, spec] : llvm::enumerate(signature["output_specs"])) {
    std::string kind = spec.begin().key();
    const json &argJson = spec.begin().value()["arg"];
    std::string valueName = argJson.contains("as_tensor")
                                ? argJson["as_tensor"].value("name", "")
                                : argJson.value("name", "");
    Value v = values.lookup(valueName);
    std::string place = "/graph_module/signature/output_specs/" +
                        std::to_string(i);
    if (!v) {
      error(place) << "output '" << valueName << "' is not computed";
      return nullptr;
    }
    if (kind == "loss_output") {
      addResult(v, "loss", "loss");
      haveLoss = true;
    } else if (kind == "user_output") {
      userOutputs.push_back({valueName, v});
    } else {
      error(place) << "unsupported output kind '" << kind << "'";
      return nullptr;
    }
  }
  auto isScalarFloat = [](Value v) {
    auto t = tg::typeOf(v);
    return t.getRank() == 0 && isa<FloatType>(t.getElementType());
  };
  if (!options.appendLoss.empty()) {
    // The model returns logits: cross-entropy against a new labels input.
    if (haveLoss || userOutputs.size() != 1) {
      error("/graph_module/signature/output_specs")
          << "--loss=" << options.appendLoss
          << " needs a model with exactly one output (its logits)";
      return nullptr;
    }
    Value logits = userOutputs.front().second;
    RankedTensorType type = tg::typeOf(logits);
    if (type.getRank() < 1 || !isa<FloatType>(type.getElementType())) {
      error("/graph_module/signature/output_specs")
          << "--loss=" << options.appendLoss
          << " needs float logits [..., classes], but the output is " << type;
      return nullptr;
    }
    auto labelsType = RankedTensorType::get(type.getShape().drop_back(),
                                            builder.getI64Type());
    NamedAttrList attrs;
    attrs.append(tg::kNameAttr, builder.getStringAttr("labels"));
    attrs.append(tg::kRoleAttr, builder.getStringAttr("data"));
    (void)fn.insertArgument(fn.getNumArguments(), labelsType,
                            attrs.getDictionary(&context), fileLoc);
    Value labels = fn.getArgument(fn.getNumArguments() - 1);
    addResult(tg::CrossEntropyOp::create(builder, fileLoc, logits, labels),
              "loss", "loss");
    haveLoss = true;
    addResult(logits, userOutputs.front().first, "output");
  } else {
    for (auto &[name, v] : userOutputs) {
      if (!haveLoss && isScalarFloat(v)) {
        addResult(v, "loss", "loss");
        haveLoss = true;
      } else {
        addResult(v, name, "output");
      }
    }
  }
  if (!haveLoss) {
    error("/graph_module/signature/output_specs")
        << "the program returns no scalar loss; for a model that returns "
           "logits, pass --loss=cross_entropy";
    return nullptr;
  }
  func::ReturnOp::create(builder, fileLoc, results);
  fn.setFunctionType(builder.getFunctionType(fn.getArgumentTypes(),
                                             ValueRange(results).getTypes()));
  for (auto [i, attrs] : llvm::enumerate(resultAttrs))
    fn.setResultAttrs(i, attrs);
  if (failed(verify(*result)))
    return nullptr;
  tg::annotateIndexBounds(fn);
  return result;
}

} // namespace

OwningOpRef<ModuleOp> importTorchExport(StringRef bytes, StringRef fileName,
                                        MLIRContext &context,
                                        const ImportOptions &options) {
  TorchExportImporter importer(context, fileName, options);
  // A field of an unexpected JSON type surfaces as nlohmann's exception: one
  // error, not a crash.
  try {
    if (bytes.ltrim().starts_with("{")) {
      std::optional<json> program =
          parseJsonDocument(bytes, fileName, context);
      if (!program)
        return nullptr;
      return importer.importProgram(*program);
    }
    return importer.importArchive(bytes);
  } catch (const json::exception &e) {
    emitError(FileLineColLoc::get(&context, fileName, 0, 0))
        << "malformed ExportedProgram: " << e.what();
    return nullptr;
  }
}

} // namespace spmdc
