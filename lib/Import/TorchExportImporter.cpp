//===- TorchExportImporter.cpp - torch.export programs into tg ------------===//
//
// Reads a `.pt2` archive (a zip, read with libzip) or a bare ExportedProgram
// JSON file: the graph signature gives @main's arguments (parameters, with
// a `tg.init_ref` to where their weights lie in the archive, never the
// weights themselves; user inputs as data; buffers the model mutates as
// state, also by reference; other buffers and constants become constants),
// each node becomes tg ops through AtenOps.cpp, and the loss output (or an
// appended cross-entropy) becomes the loss result, the buffer mutations
// state results.
//
//===----------------------------------------------------------------------===//

#include "TorchExport.h"

#include "spmdc/Dialect/TensorGraph/IR/GraphSignature.h"
#include "spmdc/Import/Import.h"
#include "spmdc/Runtime/Limits.h"
#include "spmdc/Support/JsonDocument.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <set>
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
    archive->archiveBytes = bytes.size();
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
    // The sizes are the archive's claims: check them before allocating.
    if (!(stat.valid & ZIP_STAT_SIZE) || !(stat.valid & ZIP_STAT_COMP_SIZE)) {
      error = "'" + name + "' has no size in the archive";
      return false;
    }
    if (stat.size > rt::maxTensorBytes()) {
      error = "'" + name + "' claims " + rt::formatBytes(stat.size) +
              ", more than --max-tensor-bytes (" +
              rt::formatBytes(rt::maxTensorBytes()) + ")";
      return false;
    }
    // Deflate expands at most 1032:1; a stored entry not at all.
    bool stored = (stat.valid & ZIP_STAT_COMP_METHOD) &&
                  stat.comp_method == ZIP_CM_STORE;
    if (stat.comp_size > archiveBytes ||
        (stored ? stat.size > stat.comp_size
                : stat.size / 1032 > stat.comp_size + 1)) {
      error = "'" + name + "' claims " + std::to_string(stat.size) +
              " bytes, more than its " + std::to_string(stat.comp_size) +
              " bytes in the archive of " + std::to_string(archiveBytes) +
              " can hold";
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
  uint64_t archiveBytes = 0;
};

int64_t elementBytes(Type type) {
  return std::max<int64_t>(1, type.getIntOrFloatBitWidth() / 8);
}

/// Where a zip entry's bytes lie in the archive file.
struct EntryPlace {
  uint64_t dataOffset = 0, size = 0;
  bool stored = true;
};

uint64_t readLE(StringRef bytes, uint64_t at, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i)
    v |= uint64_t(static_cast<unsigned char>(bytes[at + i])) << (8 * i);
  return v;
}

/// The place of every entry of the zip `bytes`, from its central directory
/// (zip64 included), so that weights can be referred to by file offset and
/// read in place later; empty if the directory cannot be read. Every offset
/// and size is the archive's claim, checked against its size before use
/// (`fits`, which cannot overflow).
std::map<std::string, EntryPlace> zipEntryPlaces(StringRef bytes) {
  std::map<std::string, EntryPlace> places;
  uint64_t size = bytes.size();
  // [at, at + n) lies inside the archive.
  auto fits = [size](uint64_t at, uint64_t n) {
    return at <= size && n <= size - at;
  };
  if (size < 22)
    return places;
  // The end-of-central-directory record, behind at most a 64 KiB comment.
  int64_t eocd = -1;
  for (int64_t at = size - 22; at >= 0 && at >= int64_t(size) - 22 - 65535;
       --at)
    if (readLE(bytes, at, 4) == 0x06054b50) {
      eocd = at;
      break;
    }
  if (eocd < 0)
    return places;
  uint64_t entries = readLE(bytes, eocd + 10, 2);
  uint64_t directory = readLE(bytes, eocd + 16, 4);
  if (eocd >= 20 && readLE(bytes, eocd - 20, 4) == 0x07064b50) {
    uint64_t zip64 = readLE(bytes, eocd - 20 + 8, 8);
    if (fits(zip64, 56) && readLE(bytes, zip64, 4) == 0x06064b50) {
      entries = readLE(bytes, zip64 + 32, 8);
      directory = readLE(bytes, zip64 + 48, 8);
    }
  }
  uint64_t at = directory;
  for (uint64_t i = 0; i < entries; ++i) {
    if (!fits(at, 46) || readLE(bytes, at, 4) != 0x02014b50)
      return {};
    uint64_t method = readLE(bytes, at + 10, 2);
    uint64_t compressed = readLE(bytes, at + 20, 4);
    uint64_t uncompressed = readLE(bytes, at + 24, 4);
    uint64_t nameLength = readLE(bytes, at + 28, 2);
    uint64_t extraLength = readLE(bytes, at + 30, 2);
    uint64_t commentLength = readLE(bytes, at + 32, 2);
    uint64_t local = readLE(bytes, at + 42, 4);
    if (!fits(at, 46 + nameLength + extraLength + commentLength))
      return {};
    std::string name = bytes.substr(at + 46, nameLength).str();
    // Zip64 sizes and offset, in this order, for the fields that overflow.
    uint64_t extraEnd = at + 46 + nameLength + extraLength;
    for (uint64_t e = at + 46 + nameLength; e + 4 <= extraEnd;) {
      uint64_t id = readLE(bytes, e, 2), length = readLE(bytes, e + 2, 2);
      if (e + 4 + length > extraEnd)
        return {};
      if (id == 1) {
        uint64_t f = e + 4, end = e + 4 + length;
        for (uint64_t *field : {&uncompressed, &compressed, &local})
          if (*field == 0xFFFFFFFF) {
            if (f + 8 > end)
              return {};
            *field = readLE(bytes, f, 8), f += 8;
          }
      }
      e += 4 + length;
    }
    if (!fits(local, 30) || readLE(bytes, local, 4) != 0x04034b50)
      return {};
    EntryPlace place;
    place.dataOffset =
        local + 30 + readLE(bytes, local + 26, 2) + readLE(bytes, local + 28, 2);
    if (!fits(place.dataOffset, compressed))
      return {};
    place.size = uncompressed;
    place.stored = method == 0 && compressed == uncompressed;
    places[name] = place;
    at += 46 + nameLength + extraLength + commentLength;
  }
  return places;
}

/// The view of its storage a stored tensor's metadata gives: its strides
/// (row-major where absent), its storage offset, and the bytes of storage
/// it reaches.
struct StorageView {
  SmallVector<int64_t> strides;
  int64_t offset = 0;
  int64_t neededBytes = 0;
};

/// Fails (with `error`) for negative strides or offset, or a reach beyond
/// int64; `type`'s size is checked already (typeOfMeta).
FailureOr<StorageView> storageView(const json &meta, RankedTensorType type,
                                   std::string &error) {
  StorageView view;
  for (const json &s : meta.value("strides", json::array()))
    view.strides.push_back(s.value("as_int", int64_t(0)));
  view.offset = meta.contains("storage_offset")
                    ? meta.at("storage_offset").value("as_int", int64_t(0))
                    : 0;
  if (view.strides.size() != static_cast<size_t>(type.getRank())) {
    view.strides.assign(type.getRank(), 1);
    for (int64_t d = type.getRank() - 2; d >= 0; --d)
      view.strides[d] = view.strides[d + 1] * type.getDimSize(d + 1);
  }
  if (llvm::any_of(view.strides, [](int64_t s) { return s < 0; }) ||
      view.offset < 0) {
    error = "has negative strides or a negative storage offset";
    return failure();
  }
  if (type.getNumElements() == 0)
    return view;
  int64_t lastElement = view.offset, step;
  bool overflow = false;
  for (int64_t d = 0; d < type.getRank(); ++d)
    overflow |= __builtin_mul_overflow(type.getDimSize(d) - 1,
                                       view.strides[d], &step) ||
                __builtin_add_overflow(lastElement, step, &lastElement);
  overflow |= __builtin_add_overflow(lastElement, int64_t(1), &lastElement) ||
              __builtin_mul_overflow(
                  lastElement, elementBytes(type.getElementType()),
                  &view.neededBytes);
  if (overflow) {
    error = "has strides and a storage offset that reach beyond 2^63 bytes";
    return failure();
  }
  return view;
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
  /// The type of a stored tensor's entry; an error if it is pickled or its
  /// metadata is not a tensor's.
  FailureOr<RankedTensorType> storedType(const std::string &name,
                                         const json &entry,
                                         const std::string &place);
  /// The logical row-major values of a stored tensor (strides and storage
  /// offset applied).
  FailureOr<DenseElementsAttr> loadTensor(const std::string &name,
                                          const json &entry,
                                          const std::string &place);
  /// Where a stored tensor's values lie in the archive file, checked (the
  /// entry exists, is stored uncompressed and holds the view), unread.
  FailureOr<std::pair<RankedTensorType, tg::InitialValueRef>>
  referTensor(const std::string &name, const json &entry,
              const std::string &place);
  LogicalResult importNode(const json &node, size_t index);
  Location nodeLoc(const json &node);

  MLIRContext &context;
  std::string fileName;
  const ImportOptions &options;
  OpBuilder builder;
  Location fileLoc;

  std::unique_ptr<Archive> archive;
  /// The archive's absolute path and where each entry's bytes lie in it.
  std::string archivePath;
  std::map<std::string, EntryPlace> entryPlaces;
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
  Type element = torch_export::scalarType(&context, meta.at("dtype").get<int64_t>());
  if (!element)
    return error(place) << "unsupported dtype " << meta.at("dtype").dump();
  std::vector<int64_t> shape;
  for (const json &size : meta.at("sizes")) {
    if (!size.contains("as_int"))
      return error(place) << "has a symbolic size: spmdc needs static shapes";
    shape.push_back(size.at("as_int").get<int64_t>());
  }
  uint64_t bytes;
  std::string sizeError;
  if (!rt::checkTensorSize(shape, elementBytes(element), bytes, sizeError))
    return error(place) << sizeError;
  return RankedTensorType::get(shape, element);
}

FailureOr<RankedTensorType>
TorchExportImporter::storedType(const std::string &name, const json &entry,
                                const std::string &place) {
  if (entry.value("use_pickle", false))
    return error(place) << "'" << name
                        << "' is stored pickled, which spmdc does not read";
  return typeOfMeta(entry.at("tensor_meta"), place + "/tensor_meta");
}

FailureOr<DenseElementsAttr>
TorchExportImporter::loadTensor(const std::string &name, const json &entry,
                                const std::string &place) {
  const json &meta = entry.at("tensor_meta");
  auto type = storedType(name, entry, place);
  if (failed(type))
    return failure();
  std::string blobName =
      entry.value("folder", prefix) + entry.value("path_name", "");
  std::string bytes, message;
  if (!archive->read(blobName, bytes, message))
    return error(place) << "'" << name << "': " << message;

  // The storage the strides and offset index into must be in the blob.
  int64_t elementSize = elementBytes(type->getElementType());
  FailureOr<StorageView> viewOr = storageView(meta, *type, message);
  if (failed(viewOr))
    return error(place) << "'" << name << "' " << message;
  const StorageView &view = *viewOr;
  const SmallVector<int64_t> &strides = view.strides;
  int64_t offset = view.offset, needed = view.neededBytes;
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

FailureOr<std::pair<RankedTensorType, tg::InitialValueRef>>
TorchExportImporter::referTensor(const std::string &name, const json &entry,
                                 const std::string &place) {
  const json &meta = entry.at("tensor_meta");
  auto type = storedType(name, entry, place);
  if (failed(type))
    return failure();
  std::string blobName =
      entry.value("folder", prefix) + entry.value("path_name", "");
  auto it = entryPlaces.find(blobName);
  if (it == entryPlaces.end())
    return error(place) << "'" << name << "': the archive has no '"
                        << blobName << "'";
  if (!it->second.stored)
    return error(place) << "'" << name << "': '" << blobName
                        << "' is compressed in the archive; spmdc reads "
                           "weights in place from uncompressed entries (as "
                           "torch.export.save writes them)";
  if (archivePath.empty())
    return error(place) << "'" << name
                        << "': an archive read from stdin has no path to "
                           "read its weights from later; give the file";

  std::string message;
  FailureOr<StorageView> viewOr = storageView(meta, *type, message);
  if (failed(viewOr))
    return error(place) << "'" << name << "' " << message;
  const StorageView &view = *viewOr;
  const SmallVector<int64_t> &strides = view.strides;
  int64_t offset = view.offset, needed = view.neededBytes;
  if (it->second.size < static_cast<uint64_t>(needed))
    return error(place) << "'" << name << "' has " << it->second.size
                        << " bytes in '" << blobName << "' but its shape "
                        << *type << " needs " << needed;
  if (llvm::any_of(strides, [](int64_t s) { return s < 0; }) || offset < 0)
    return error(place) << "'" << name << "' has negative strides";
  tg::InitialValueRef ref;
  ref.file = archivePath;
  ref.entry = blobName;
  ref.offset = it->second.dataOffset;
  ref.bytes = it->second.size;
  ref.storageOffset = offset;
  ref.strides.assign(strides.begin(), strides.end());
  return std::make_pair(*type, ref);
}

Location TorchExportImporter::nodeLoc(const json &node) {
  // The node's own name, then the user's source line from its stack trace.
  std::string name = node.value("name", "");
  std::string where;
  if (node.contains("metadata") && node.at("metadata").contains("stack_trace")) {
    StringRef trace = node.at("metadata").at("stack_trace").get_ref<const std::string &>();
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
  // Set once typeOfMeta has reported a malformed entry.
  bool badMeta = false;
  torch_export::Node view(
      node, builder, loc,
      [&](const std::string &name) { return values.lookup(name); },
      [&](const std::string &name) -> RankedTensorType {
        if (!tensorValues->contains(name))
          return nullptr;
        auto type = typeOfMeta((*tensorValues)[name], "/tensor_values/" + name);
        badMeta |= failed(type);
        return succeeded(type) ? *type : nullptr;
      });
  view.index = index;
  view.metaEntry = [&](const std::string &name) -> const json * {
    return tensorValues->contains(name) ? &(*tensorValues)[name] : nullptr;
  };
  // The mappings read the result type of output 0 (and of every output they
  // define) from its metadata: without it, refuse the node here (a node
  // whose metadata was missing crashed the importer; found by
  // fuzz/pt2-fuzzer.cpp).
  // (Checks torch leaves in the graph, _assert_*, have no outputs.)
  bool computes = !StringRef(target).starts_with("torch.ops.aten._assert_");
  for (size_t i = 0, e = std::max<size_t>(1, view.numOutputs()); i < e; ++i)
    if (((i == 0 && computes) || view.hasOutput(i)) && !view.outputType(i)) {
      if (badMeta)
        return failure();
      return emitError(loc) << "output #" << i << " of '" << target
                            << "' has no tensor metadata in tensor_values";
    }
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
  // Weights are referred to by their place in the file, read later.
  entryPlaces = zipEntryPlaces(bytes);
  if (fileName != "-" && fileName != "<stdin>") {
    SmallString<256> path(fileName);
    if (!llvm::sys::fs::make_absolute(path)) {
      llvm::sys::path::remove_dots(path, /*remove_dot_dot=*/true);
      archivePath = path.str().str();
    }
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
  const json &module = program.at("graph_module");
  const json &graph = module.at("graph");
  const json &signature = module.at("signature");
  tensorValues = &graph.at("tensor_values");

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
  // Buffers the program mutates are state of the step.
  std::set<std::string> mutatedBuffers;
  // Persistent buffers it only reads: constants, listed for --save-params.
  SmallVector<Attribute> constantBuffers;
  for (const json &spec : signature.value("output_specs", json::array()))
    if (spec.is_object() && spec.contains("buffer_mutation"))
      mutatedBuffers.insert(
          spec.at("buffer_mutation").value("buffer_name", std::string()));
  for (auto [i, spec] : llvm::enumerate(signature.at("input_specs"))) {
    std::string place = "/graph_module/signature/input_specs/" +
                        std::to_string(i);
    if (!spec.is_object() || spec.size() != 1) {
      error(place) << "an input spec is an object of one kind";
      return nullptr;
    }
    std::string kind = spec.begin().key();
    const json &body = spec.begin().value();
    const json &argJson = body.at("arg");
    std::string valueName = argJson.contains("as_tensor")
                                ? argJson.at("as_tensor").value("name", "")
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
                           it->second.at("tensor_meta").dump();
        auto tied = parameterOfBlob.find(blob);
        if (tied != parameterOfBlob.end()) {
          aliases.push_back({valueName, tied->second});
          aliasNames[tied->second].push_back(builder.getStringAttr(name));
          continue;
        }
        parameterOfBlob[blob] = argTypes.size();
      }
      attrs.append(tg::kNameAttr, builder.getStringAttr(name));
      attrs.append(tg::kRoleAttr, tg::RoleAttr::get(builder.getContext(), tg::Role::param));
      if (it != weights.end()) {
        auto stored = referTensor(name, it->second, place);
        if (failed(stored))
          return nullptr;
        if (stored->first != *type) {
          error(place) << "weight '" << name << "' is stored as "
                       << stored->first << " but the graph uses " << *type;
          return nullptr;
        }
        attrs.append(tg::kInitRefAttr,
                     tg::initialValueRefAttr(&context, stored->second));
      }
    } else if (kind == "user_input") {
      attrs.append(tg::kNameAttr, builder.getStringAttr(valueName));
      attrs.append(tg::kRoleAttr, tg::RoleAttr::get(builder.getContext(), tg::Role::data));
    } else if (kind == "buffer" &&
               mutatedBuffers.count(body.value("buffer_name", valueName))) {
      // A buffer the model updates (BatchNorm's running statistics): state,
      // fed back from step to step, saved with the parameters.
      std::string name = body.value("buffer_name", valueName);
      attrs.append(tg::kNameAttr, builder.getStringAttr(name));
      attrs.append(tg::kRoleAttr, tg::RoleAttr::get(builder.getContext(), tg::Role::state));
      attrs.append(tg::kBufferAttr, builder.getUnitAttr());
      const json *entry = nullptr;
      if (auto w = weights.find(name); w != weights.end())
        entry = &w->second;
      else if (auto c = constants.find(name); c != constants.end())
        entry = &c->second;
      if (entry) {
        auto stored = referTensor(name, *entry, place);
        if (failed(stored))
          return nullptr;
        if (stored->first != *type) {
          error(place) << "buffer '" << name << "' is stored as "
                       << stored->first << " but the graph uses " << *type;
          return nullptr;
        }
        attrs.append(tg::kInitRefAttr,
                     tg::initialValueRefAttr(&context, stored->second));
      } else if (archive) {
        error(place) << "the archive has no value for buffer '" << name
                     << "'";
        return nullptr;
      }
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
      // A persistent buffer is in the state dict: --save-params writes it
      // (unchanged) from the archive, by reference.
      if (kind == "buffer" && body.value("persistent", true) &&
          !archivePath.empty()) {
        auto stored = referTensor(name, it->second, place);
        if (failed(stored))
          return nullptr;
        constantBuffers.push_back(builder.getDictionaryAttr(
            {builder.getNamedAttr("name", builder.getStringAttr(name)),
             builder.getNamedAttr("type", TypeAttr::get(stored->first)),
             builder.getNamedAttr(
                 "init_ref",
                 tg::initialValueRefAttr(&context, stored->second))}));
      }
      continue;
    } else {
      error(place) << "unsupported input kind '" << kind << "'";
      return nullptr;
    }
    argTypes.push_back(*type);
    argAttrs.push_back(attrs.getDictionary(&context));
    argValueNames.push_back(valueName);
  }

  if (!constantBuffers.empty())
    (*result)->setAttr(tg::kConstantBuffersAttr,
                       builder.getArrayAttr(constantBuffers));
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

  for (auto [i, node] : llvm::enumerate(graph.at("nodes")))
    if (failed(importNode(node, i)))
      return nullptr;

  // Outputs: the loss (a loss_output, or the one scalar float output),
  // others as outputs.
  SmallVector<Value> results;
  SmallVector<DictionaryAttr> resultAttrs;
  auto addResult = [&](Value v, StringRef name, tg::Role role) {
    NamedAttrList attrs;
    attrs.append(tg::kNameAttr, builder.getStringAttr(name));
    attrs.append(tg::kRoleAttr, tg::RoleAttr::get(&context, role));
    results.push_back(v);
    resultAttrs.push_back(attrs.getDictionary(&context));
  };
  bool haveLoss = false;
  SmallVector<std::pair<std::string, Value>> userOutputs;
  // New values of mutated buffers, results after the others.
  SmallVector<std::pair<std::string, Value>> bufferUpdates;
  for (auto [i, spec] : llvm::enumerate(signature.at("output_specs"))) {
    if (!spec.is_object() || spec.size() != 1) {
      error("/graph_module/signature/output_specs/" + std::to_string(i))
          << "an output spec is an object of one kind";
      return nullptr;
    }
    std::string kind = spec.begin().key();
    const json &argJson = spec.begin().value().at("arg");
    std::string valueName = argJson.contains("as_tensor")
                                ? argJson.at("as_tensor").value("name", "")
                                : argJson.value("name", "");
    Value v = values.lookup(valueName);
    std::string place = "/graph_module/signature/output_specs/" +
                        std::to_string(i);
    if (!v) {
      error(place) << "output '" << valueName << "' is not computed";
      return nullptr;
    }
    if (kind == "loss_output") {
      addResult(v, "loss", tg::Role::loss);
      haveLoss = true;
    } else if (kind == "user_output") {
      userOutputs.push_back({valueName, v});
    } else if (kind == "buffer_mutation") {
      std::string name =
          spec.begin().value().value("buffer_name", std::string());
      bufferUpdates.push_back({name, v});
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
    attrs.append(tg::kRoleAttr, tg::RoleAttr::get(builder.getContext(), tg::Role::data));
    (void)fn.insertArgument(fn.getNumArguments(), labelsType,
                            attrs.getDictionary(&context), fileLoc);
    Value labels = fn.getArgument(fn.getNumArguments() - 1);
    addResult(tg::CrossEntropyOp::create(builder, fileLoc, logits, labels),
              "loss", tg::Role::loss);
    haveLoss = true;
    addResult(logits, userOutputs.front().first, tg::Role::output);
  } else {
    for (auto &[name, v] : userOutputs) {
      if (!haveLoss && isScalarFloat(v)) {
        addResult(v, "loss", tg::Role::loss);
        haveLoss = true;
      } else {
        addResult(v, name, tg::Role::output);
      }
    }
  }
  if (!haveLoss) {
    error("/graph_module/signature/output_specs")
        << "the program returns no scalar loss; for a model that returns "
           "logits, pass --loss=cross_entropy";
    return nullptr;
  }
  for (auto &[name, v] : bufferUpdates) {
    // The state argument it updates, by name.
    std::optional<unsigned> arg;
    for (unsigned a = 0; a < fn.getNumArguments(); ++a)
      if (auto n = fn.getArgAttrOfType<StringAttr>(a, tg::kNameAttr);
          n && n.getValue() == name && fn.getArgAttr(a, tg::kBufferAttr))
        arg = a;
    if (!arg || fn.getArgument(*arg).getType() != v.getType()) {
      error("/graph_module/signature/output_specs")
          << "the mutation of buffer '" << name << "' "
          << (arg ? "changes its type" : "names no buffer input");
      return nullptr;
    }
    addResult(v, name, tg::Role::state);
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
