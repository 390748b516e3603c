//===- Checkpoint.cpp - sharded checkpoints: write, resume, export --------===//

#include "spmdc/Runner/Checkpoint.h"

#include "spmdc/Runner/Relaunch.h"
#include "spmdc/Runner/StepSignature.h"
#include "spmdc/Runtime/AtomicFile.h"
#include "spmdc/Runtime/Limits.h"
#include "spmdc/Support/ShapeString.h"
#ifdef SPMDC_HAVE_MPI
#include "spmdc/Runtime/Collectives.h"
#endif

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"

#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <numeric>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace mlir;
using spmdc::interp::Tensor;

namespace spmdc::runner {

namespace {

/// The index's "format" and "version": a reader refuses any other.
constexpr const char *kFormat = "spmdc-checkpoint";
constexpr int64_t kVersion = 1;

std::string joinPath(llvm::StringRef a, llvm::StringRef b) {
  llvm::SmallString<256> path(a);
  llvm::sys::path::append(path, b);
  return path.str().str();
}

std::string stepFolderName(int64_t step) {
  char name[32];
  std::snprintf(name, sizeof name, "step-%06lld", static_cast<long long>(step));
  return name;
}

std::string rankFileName(int64_t rank) {
  return "rank-" + std::to_string(rank) + ".safetensors";
}

std::string keyOf(llvm::StringRef role, llvm::StringRef name) {
  return (role + "/" + name).str();
}

std::string roleName(const tg::GraphValueInfo &info) {
  return tg::stringifyRole(*info.role).str();
}

std::vector<int64_t> logicalShape(const Sharded &sharded) {
  return {sharded.logicalType.getShape().begin(),
          sharded.logicalType.getShape().end()};
}

/// Whether `rank` is the first rank holding its block of a value sharded as
/// `sharding` (the others hold replicas, which are not written again).
bool firstHolder(int64_t rank, const dist::TensorSharding &sharding,
                 const dist::Mesh &mesh) {
  llvm::SmallVector<bool> involved(mesh.axes.size(), false);
  for (int axis : sharding.shardedAxes())
    involved[axis] = true;
  llvm::SmallVector<int64_t> coords = mesh.coordinates(rank);
  for (size_t axis = 0; axis < coords.size(); ++axis)
    if (!involved[axis])
      coords[axis] = 0;
  return mesh.rankAt(coords) == rank;
}

/// The box of `sizes` at `from` of `local` (a rank's tensor: a piece of it
/// where a dim is in parts, a chunk that may reach into a padded dim's
/// padding), row-major.
std::vector<double> boxOf(const Tensor &local, llvm::ArrayRef<int64_t> from,
                          llvm::ArrayRef<int64_t> sizes) {
  int64_t count = 1;
  for (int64_t size : sizes)
    count *= size;
  if (llvm::equal(local.shape, sizes))
    return local.data;
  std::vector<double> out(count);
  std::vector<int64_t> strides = interp::stridesOf(local.shape);
  std::vector<int64_t> index(sizes.size(), 0);
  for (int64_t i = 0; i < count; ++i) {
    int64_t at = 0;
    for (size_t d = 0; d < index.size(); ++d)
      at += (from[d] + index[d]) * strides[d];
    out[i] = local.data[at];
    for (int d = static_cast<int>(index.size()) - 1; d >= 0; --d) {
      if (++index[d] < sizes[d])
        break;
      index[d] = 0;
    }
  }
  return out;
}

/// One block a rank stores of a tensor: a piece of the logical tensor it
/// holds, under `key` in its shard file.
struct StoredPiece {
  std::string key;
  dist::TensorSharding::Piece piece;
};

/// The blocks `rank` stores of the argument of `info` sharded as
/// `sharded`: none unless it is the first rank holding its block; else its
/// block, or for a tensor in parts each of its pieces (keyed
/// `<role>/<name>#<j>`), leaving out any empty one (a chunk wholly in a
/// padded dim's padding). The stored blocks of every rank tile the logical
/// tensor, whatever its layout.
std::vector<StoredPiece> storedPieces(int64_t rank,
                                      const tg::GraphValueInfo &info,
                                      const Sharded &sharded,
                                      const dist::Mesh &mesh) {
  std::vector<StoredPiece> stored;
  if (!firstHolder(rank, sharded.sharding, mesh))
    return stored;
  llvm::SmallVector<dist::TensorSharding::Piece> pieces =
      sharded.sharding.piecesOf(rank, sharded.logicalType.getShape(), mesh);
  std::string key = keyOf(roleName(info), info.name);
  for (auto [j, piece] : llvm::enumerate(pieces))
    if (!llvm::is_contained(piece.sizes, 0))
      stored.push_back(
          {pieces.size() == 1 ? key : key + "#" + std::to_string(j), piece});
  return stored;
}

/// Whether every rank of the job is `ok`, and which is the first that is
/// not (-1: none). Collective under mpirun, over every rank; a barrier too.
int64_t firstFailedRank(bool ok, bool underMpi, const dist::Mesh &mesh) {
  if (!underMpi)
    return ok ? -1 : 0;
#ifdef SPMDC_HAVE_MPI
  int64_t numRanks = mesh.numRanks();
  double mine = ok ? 1 : 0;
  std::vector<double> all(numRanks);
  int64_t shape[2] = {1, 1};
  std::vector<int32_t> axes(mesh.shape.size());
  std::iota(axes.begin(), axes.end(), 0);
  spmd_all_gather(&mine, all.data(), 2, shape, 0, SPMD_DTYPE_F64, axes.data(),
                  static_cast<int32_t>(axes.size()));
  for (int64_t rank = 0; rank < numRanks; ++rank)
    if (all[rank] == 0)
      return rank;
#endif
  return -1;
}

/// Flushes a directory's entries (a rename in it) to disk.
bool syncDirectory(const std::string &path, std::string &error) {
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0 || ::fsync(fd) != 0) {
    error =
        path + ": cannot flush the directory to disk: " + std::strerror(errno);
    if (fd >= 0)
      ::close(fd);
    return false;
  }
  ::close(fd);
  return true;
}

bool writeWhole(const std::string &path, llvm::StringRef text,
                std::string &error) {
  rt::AtomicFile file;
  return file.open(path, error) &&
         file.write(text.data(), text.size(), error) && file.commit(error);
}

/// Where the data section of safetensors file `path` starts, and the file's
/// size.
bool dataStartOf(const std::string &path, uint64_t &start, uint64_t &bytes,
                 std::string &error) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  unsigned char head[8];
  struct stat st;
  bool ok = fd >= 0 && ::pread(fd, head, 8, 0) == 8 && ::fstat(fd, &st) == 0;
  if (fd >= 0)
    ::close(fd);
  if (!ok) {
    error = path + ": cannot read the shard's header";
    return false;
  }
  uint64_t length = 0;
  for (int i = 7; i >= 0; --i)
    length = (length << 8) | head[i];
  start = 8 + length;
  bytes = static_cast<uint64_t>(st.st_size);
  return true;
}

llvm::json::Array jsonShape(llvm::ArrayRef<int64_t> shape) {
  llvm::json::Array array;
  for (int64_t size : shape)
    array.push_back(size);
  return array;
}

} // namespace

std::vector<size_t> checkpointedArguments(const StepSignature &signature) {
  std::vector<size_t> indices;
  for (size_t a = 0; a < signature.arguments.size(); ++a) {
    const tg::GraphValueInfo &arg = signature.arguments[a];
    if (arg.role != tg::Role::param && arg.role != tg::Role::state)
      continue;
    if (llvm::any_of(signature.results, [&](const tg::GraphValueInfo &r) {
          return r.role == arg.role && r.name == arg.name;
        }))
      indices.push_back(a);
  }
  return indices;
}

std::string moduleIdentity(const StepSignature &signature) {
  std::string text;
  llvm::raw_string_ostream os(text);
  for (auto [info, sharded] :
       llvm::zip(signature.arguments, signature.argumentShardings)) {
    std::optional<rt::DType> dtype =
        dtypeOf(sharded.logicalType.getElementType());
    os << info.name << '|' << (info.role ? roleName(info) : "?") << '|'
       << (dtype ? rt::dtypeName(*dtype) : "?") << '|'
       << shapeString(logicalShape(sharded)) << ';';
  }
  os << "mesh";
  for (auto [axis, size] : llvm::zip(signature.mesh.axes, signature.mesh.shape))
    os << '|' << axis << '=' << size;
  return llvm::utohexstr(llvm::xxh3_64bits(llvm::arrayRefFromStringRef(text)),
                         /*LowerCase=*/true, /*Width=*/16);
}

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

bool CheckpointWriter::write(const CheckpointProgress &progress,
                             llvm::ArrayRef<int64_t> localRanks,
                             const RankValues &values,
                             const std::vector<rt::NamedTensor> &buffers,
                             std::string &error) {
  const dist::Mesh &mesh = signature.mesh;
  std::string folderName = stepFolderName(progress.step);
  std::string folder = joinPath(directory, folderName);
  // Written under a name no reader takes, renamed once the index is in.
  std::string partial = folder + ".partial";
  std::vector<size_t> indices = checkpointedArguments(signature);
  std::string where = "checkpoint of step " + std::to_string(progress.step) +
                      " in " + directory + ": ";

  // Each rank writes its own file: the blocks it is the first to hold.
  bool ok = true;
  if (std::error_code ec = llvm::sys::fs::create_directories(partial)) {
    error = partial + ": cannot create the folder: " + ec.message();
    ok = false;
  }
  for (size_t k = 0; ok && k < localRanks.size(); ++k) {
    int64_t rank = localRanks[k];
    std::vector<rt::NamedTensor> tensors;
    for (size_t a : indices) {
      const tg::GraphValueInfo &info = signature.arguments[a];
      const Sharded &sharded = signature.argumentShardings[a];
      Type element = info.type.getElementType();
      rt::DType dtype =
          f64 && isa<FloatType>(element) ? rt::DType::F64 : *dtypeOf(element);
      for (const StoredPiece &stored : storedPieces(rank, info, sharded, mesh))
        tensors.push_back(
            {stored.key,
             dtype,
             {stored.piece.sizes.begin(), stored.piece.sizes.end()},
             boxOf(values[k][a], stored.piece.localOffsets,
                   stored.piece.sizes)});
    }
    if (rank == 0)
      for (const rt::NamedTensor &buffer : buffers)
        tensors.push_back({keyOf("buffer", buffer.name), buffer.dtype,
                           buffer.shape, buffer.values});
    std::map<std::string, std::string> metadata{
        {"format", kFormat},
        {"rank", std::to_string(rank)},
        {"step", std::to_string(progress.step)}};
    if (!rt::writeSafeTensors(joinPath(partial, rankFileName(rank)), tensors,
                              error, metadata))
      ok = false;
  }
  int64_t failed = firstFailedRank(ok, underMpi, mesh);
  if (failed >= 0) {
    if (ok)
      error = "rank " + std::to_string(failed) +
              " could not write its shard (it says why)";
    error = where + error + "; the last good checkpoint is unchanged";
    return false;
  }
  // Fault injection for the tests: SPMD_RUN_TEST_CHECKPOINT_EXIT=S ends
  // every rank with status 3 once the shards of step S are written, before
  // the index: a crash mid-checkpoint.
  if (const char *at = std::getenv("SPMD_RUN_TEST_CHECKPOINT_EXIT"))
    if (std::atoll(at) == progress.step) {
      std::fflush(stdout);
      std::_Exit(3);
    }

  // Rank 0, once every shard is on disk: the index, then the folder's name,
  // then D/latest.
  if (localRanks.front() == 0) {
    llvm::json::Object files;
    std::map<std::string,
             std::pair<uint64_t, std::unique_ptr<rt::SafeTensorsReader>>>
        headers;
    for (int64_t rank = 0; ok && rank < mesh.numRanks(); ++rank) {
      std::string file = rankFileName(rank);
      std::string path = joinPath(partial, file);
      uint64_t start = 0, bytes = 0;
      std::unique_ptr<rt::SafeTensorsReader> reader;
      if (!dataStartOf(path, start, bytes, error) ||
          !(reader = rt::SafeTensorsReader::open(path, error))) {
        ok = false;
        break;
      }
      files[file] = llvm::json::Object{{"bytes", static_cast<int64_t>(bytes)}};
      headers[file] = {start, std::move(reader)};
    }
    llvm::json::Object tensors;
    auto blockOf = [&](const std::string &file, const std::string &key,
                       llvm::ArrayRef<int64_t> offsets,
                       llvm::ArrayRef<int64_t> sizes) -> llvm::json::Value {
      auto &[start, reader] = headers[file];
      const rt::TensorInfo *stored = reader->find(key);
      return llvm::json::Object{
          {"file", file},
          {"key", key},
          {"offsets", jsonShape(offsets)},
          {"sizes", jsonShape(sizes)},
          {"dtype", rt::dtypeName(stored->dtype)},
          {"begin", static_cast<int64_t>(start + stored->dataBegin)},
          {"bytes", static_cast<int64_t>(stored->dataEnd - stored->dataBegin)}};
    };
    for (size_t a : indices) {
      if (!ok)
        break;
      const tg::GraphValueInfo &info = signature.arguments[a];
      const Sharded &sharded = signature.argumentShardings[a];
      std::string key = keyOf(roleName(info), info.name);
      llvm::json::Array blocks;
      for (int64_t rank = 0; rank < mesh.numRanks(); ++rank)
        for (const StoredPiece &stored :
             storedPieces(rank, info, sharded, mesh))
          blocks.push_back(blockOf(rankFileName(rank), stored.key,
                                   stored.piece.offsets, stored.piece.sizes));
      llvm::json::Array aliases;
      for (const std::string &alias : info.aliases)
        aliases.push_back(alias);
      tensors[key] = llvm::json::Object{
          {"role", roleName(info)},
          {"name", info.name},
          {"aliases", std::move(aliases)},
          {"buffer", info.buffer},
          {"dtype",
           rt::dtypeName(*dtypeOf(sharded.logicalType.getElementType()))},
          {"shape", jsonShape(logicalShape(sharded))},
          {"blocks", std::move(blocks)}};
    }
    for (const rt::NamedTensor &buffer : buffers) {
      std::string key = keyOf("buffer", buffer.name);
      llvm::json::Array blocks;
      blocks.push_back(blockOf(rankFileName(0), key,
                               std::vector<int64_t>(buffer.shape.size(), 0),
                               buffer.shape));
      tensors[key] = llvm::json::Object{{"role", "buffer"},
                                        {"name", buffer.name},
                                        {"aliases", llvm::json::Array()},
                                        {"buffer", true},
                                        {"dtype", rt::dtypeName(buffer.dtype)},
                                        {"shape", jsonShape(buffer.shape)},
                                        {"blocks", std::move(blocks)}};
    }
    llvm::json::Array axes, shape;
    for (auto [axis, size] : llvm::zip(mesh.axes, mesh.shape)) {
      axes.push_back(axis);
      shape.push_back(size);
    }
    llvm::json::Object index{
        {"format", kFormat},
        {"version", kVersion},
        {"module", moduleIdentity(signature)},
        {"mesh", llvm::json::Object{{"axes", std::move(axes)},
                                    {"shape", std::move(shape)}}},
        {"step", progress.step},
        {"dataset", llvm::json::Object{{"file", progress.dataset},
                                       {"shuffle", progress.shuffle},
                                       {"next_batch", progress.nextBatch}}},
        {"seed", static_cast<int64_t>(progress.seed)},
        {"files", std::move(files)},
        {"tensors", std::move(tensors)}};
    std::string text;
    llvm::raw_string_ostream os(text);
    os << llvm::formatv("{0:2}", llvm::json::Value(std::move(index))) << "\n";
    // A folder of the same step from an earlier run gives way; D/latest
    // never names a folder being written, so the last good one stays.
    if (ok && writeWhole(joinPath(partial, "index.json"), text, error) &&
        syncDirectory(partial, error)) {
      llvm::sys::fs::remove_directories(folder, /*IgnoreErrors=*/true);
      if (std::error_code ec = llvm::sys::fs::rename(partial, folder)) {
        error = folder + ": cannot rename the finished folder into place: " +
                ec.message();
        ok = false;
      } else {
        ok = syncDirectory(directory, error) &&
             writeWhole(joinPath(directory, "latest"), folderName + "\n",
                        error) &&
             syncDirectory(directory, error);
      }
    } else {
      ok = false;
    }
    if (!ok)
      error = where + error + "; the last good checkpoint is unchanged";
  }
  if (firstFailedRank(ok, underMpi, mesh) >= 0) {
    if (ok)
      error = where + "rank 0 could not write the index";
    return false;
  }
  spdlog::info("checkpoint of step {} written to {}", progress.step, folder);
  return true;
}

//===----------------------------------------------------------------------===//
// Reading
//===----------------------------------------------------------------------===//

namespace {

/// Reads `what` of `object` as a list of integers; false if it is not one.
bool readInts(const llvm::json::Object &object, llvm::StringRef what,
              std::vector<int64_t> &out) {
  const llvm::json::Array *array = object.getArray(what);
  if (!array)
    return false;
  out.clear();
  for (const llvm::json::Value &value : *array) {
    std::optional<int64_t> v = value.getAsInteger();
    if (!v || *v < 0)
      return false;
    out.push_back(*v);
  }
  return true;
}

/// The step folders of `directory` that hold an index, newest first.
std::vector<std::string> completeFolders(const std::string &directory) {
  std::vector<std::pair<long long, std::string>> found;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(directory, ec), end;
       !ec && it != end; it.increment(ec)) {
    llvm::StringRef name = llvm::sys::path::filename(it->path());
    long long step;
    // step-NNNNNN exactly: not a .partial folder, not a stray file.
    if (!name.consume_front("step-") || name.empty() ||
        !llvm::all_of(name, llvm::isDigit) || name.getAsInteger(10, step))
      continue;
    if (llvm::sys::fs::exists(joinPath(it->path(), "index.json")))
      found.push_back({step, it->path()});
  }
  llvm::sort(found, [](auto &a, auto &b) { return a.first > b.first; });
  std::vector<std::string> folders;
  for (auto &[step, path] : found)
    folders.push_back(path);
  return folders;
}

} // namespace

std::string Checkpoint::indexPath() const {
  return joinPath(folderPath, "index.json");
}

std::unique_ptr<Checkpoint> Checkpoint::open(const std::string &directory,
                                             std::string &error) {
  if (!llvm::sys::fs::is_directory(directory)) {
    error = directory + ": " +
            (llvm::sys::fs::exists(directory)
                 ? "is not a checkpoint directory (not a directory)"
                 : "no such checkpoint directory");
    return nullptr;
  }
  // D/latest names the last good folder; without it (or where it names one
  // without an index), the newest folder with an index.
  std::unique_ptr<Checkpoint> checkpoint(new Checkpoint());
  std::string latestPath = joinPath(directory, "latest");
  if (auto latest = llvm::MemoryBuffer::getFile(latestPath)) {
    // A folder of D: a name, not a path.
    llvm::StringRef name = (*latest)->getBuffer().trim();
    std::string folder = joinPath(directory, name);
    if (name.empty() || name == "." || name == ".." || name.contains('/') ||
        name.contains('\0'))
      spdlog::warn("{} does not name a folder of {}; looking for the newest "
                   "complete checkpoint",
                   latestPath, directory);
    else if (llvm::sys::fs::exists(joinPath(folder, "index.json")))
      checkpoint->folderPath = folder;
    else
      spdlog::warn("{} names {}, which has no index.json; looking for the "
                   "newest complete checkpoint",
                   latestPath, folder);
  }
  if (checkpoint->folderPath.empty()) {
    std::vector<std::string> folders = completeFolders(directory);
    if (folders.empty()) {
      error = directory + ": holds no complete checkpoint (no step-NNNNNN "
                          "folder with an index.json)";
      return nullptr;
    }
    checkpoint->folderPath = folders.front();
  }

  // The index.
  std::string indexFile = checkpoint->indexPath();
  auto refuse = [&](const std::string &why) {
    error = indexFile + ": " + why;
    return nullptr;
  };
  auto buffer = llvm::MemoryBuffer::getFile(indexFile);
  if (!buffer)
    return refuse("cannot read: " + buffer.getError().message());
  // llvm::json parses and frees recursively: refuse deep nesting first.
  llvm::StringRef text = (*buffer)->getBuffer();
  size_t deep = rt::findJsonDepthExcess(text.data(), text.size());
  if (deep != std::string::npos)
    return refuse("JSON nested deeper than " +
                  std::to_string(rt::kMaxJsonDepth) + " levels (at byte " +
                  std::to_string(deep) + ")");
  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(text);
  if (!parsed)
    return refuse("is not valid JSON: " + llvm::toString(parsed.takeError()));
  const llvm::json::Object *index = parsed->getAsObject();
  if (!index || index->getString("format") != kFormat)
    return refuse("is not an spmdc checkpoint index (no \"format\": \"" +
                  std::string(kFormat) + "\")");
  if (index->getInteger("version") != kVersion)
    return refuse("has a format version other than " +
                  std::to_string(kVersion) + ", which this spmd-run reads");
  const llvm::json::Object *mesh = index->getObject("mesh");
  const llvm::json::Object *dataset = index->getObject("dataset");
  const llvm::json::Object *files = index->getObject("files");
  const llvm::json::Object *tensors = index->getObject("tensors");
  std::optional<int64_t> step = index->getInteger("step");
  std::optional<int64_t> seed = index->getInteger("seed");
  std::optional<llvm::StringRef> identity = index->getString("module");
  if (!mesh || !dataset || !files || !tensors || !step || !seed || !identity ||
      !readInts(*mesh, "shape", checkpoint->meshShape))
    return refuse("is malformed: it lacks one of \"module\", \"mesh\", "
                  "\"step\", \"dataset\", \"seed\", \"files\", \"tensors\"");
  if (const llvm::json::Array *axes = mesh->getArray("axes"))
    for (const llvm::json::Value &axis : *axes)
      checkpoint->meshAxes.push_back(axis.getAsString().value_or("?").str());
  CheckpointProgress &state = checkpoint->state;
  state.step = *step;
  state.seed = static_cast<uint64_t>(*seed);
  state.nextBatch = dataset->getInteger("next_batch").value_or(*step);
  state.dataset = dataset->getString("file").value_or("").str();
  state.shuffle = dataset->getBoolean("shuffle").value_or(false);
  checkpoint->identity = identity->str();
  // spmd-run counts steps in an int; batches are drawn from 0 on.
  if (state.step < 0 || state.step > std::numeric_limits<int32_t>::max())
    return refuse("is malformed: \"step\" " + std::to_string(state.step) +
                  " is not a step count");
  if (state.nextBatch < 0)
    return refuse("is malformed: \"next_batch\" " +
                  std::to_string(state.nextBatch) + " is negative");

  // Every shard file there, whole: a crash cannot leave a short one (they
  // are renamed into place whole), a copy or a full disk can.
  for (const auto &[file, info] : *files) {
    // A file of the step folder: a name, not a path.
    llvm::StringRef name = file;
    if (name.empty() || name == "." || name == ".." || name.contains('/') ||
        name.contains('\0'))
      return refuse("is malformed: file '" + name.str() +
                    "' is not the name of a file in the checkpoint's folder");
    std::string path = joinPath(checkpoint->folderPath, file.str());
    const llvm::json::Object *fileInfo = info.getAsObject();
    std::optional<int64_t> bytes =
        fileInfo ? fileInfo->getInteger("bytes") : std::nullopt;
    if (!bytes)
      return refuse("is malformed: file '" + file.str() + "' has no size");
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) {
      error = path + ": is missing (" + std::strerror(errno) +
              "), but the checkpoint's index lists it";
      return nullptr;
    }
    if (!S_ISREG(st.st_mode)) {
      error = path + ": is not a regular file, but the checkpoint's index "
                     "lists it as a shard";
      return nullptr;
    }
    if (st.st_size != *bytes) {
      error = path + ": is " +
              (st.st_size < *bytes ? "truncated" : "not the file written") +
              ": " + std::to_string(st.st_size) +
              " bytes, but the checkpoint's index (from the file's header) "
              "says " +
              std::to_string(*bytes);
      return nullptr;
    }
  }

  // The tensors and their blocks. Every size is checked before anything is
  // sized by it: each tensor against --max-tensor-bytes, each block inside
  // its tensor and its file, the blocks of a tensor covering it exactly
  // (as the writer's do), and no two blocks sharing a file's bytes, so
  // what --export-params allocates is bounded by the shards' real bytes.
  std::map<std::string, std::vector<std::pair<uint64_t, uint64_t>>> claimed;
  for (const auto &[key, value] : *tensors) {
    const llvm::json::Object *tensor = value.getAsObject();
    Entry entry;
    const llvm::json::Array *blocks =
        tensor ? tensor->getArray("blocks") : nullptr;
    if (!tensor || !blocks || !readInts(*tensor, "shape", entry.shape) ||
        !tensor->getString("role") || !tensor->getString("name") ||
        !tensor->getString("dtype"))
      return refuse("is malformed: tensor '" + key.str() + "'");
    entry.role = tensor->getString("role")->str();
    entry.name = tensor->getString("name")->str();
    entry.dtype = tensor->getString("dtype")->str();
    entry.buffer = tensor->getBoolean("buffer").value_or(false);
    if (const llvm::json::Array *aliases = tensor->getArray("aliases"))
      for (const llvm::json::Value &alias : *aliases)
        if (std::optional<llvm::StringRef> name = alias.getAsString())
          entry.aliases.push_back(name->str());
    // Looked up by "<role>/<name>", as the writer keys it.
    if (key != keyOf(entry.role, entry.name))
      return refuse("is malformed: tensor '" + key.str() + "' is " +
                    entry.role + " '" + entry.name + "', whose key is '" +
                    keyOf(entry.role, entry.name) + "'");
    std::optional<rt::DType> entryDType = rt::parseDType(entry.dtype);
    if (!entryDType)
      return refuse("is malformed: tensor '" + key.str() + "' has dtype '" +
                    entry.dtype + "', which is not a safetensors dtype");
    uint64_t tensorBytes = 0;
    std::string why;
    if (!rt::checkTensorSize(entry.shape, rt::dtypeSize(*entryDType),
                             tensorBytes, why))
      return refuse("tensor '" + key.str() + "': " + why);
    // No overflow: checkTensorSize bounds the count.
    int64_t elements = 1, covered = 0;
    for (int64_t size : entry.shape)
      elements *= size;
    for (const llvm::json::Value &blockValue : *blocks) {
      const llvm::json::Object *block = blockValue.getAsObject();
      Block stored;
      std::optional<rt::DType> dtype;
      std::optional<int64_t> begin, bytes;
      if (block) {
        stored.file = block->getString("file").value_or("").str();
        if (std::optional<llvm::StringRef> name = block->getString("dtype"))
          dtype = rt::parseDType(name->str());
        begin = block->getInteger("begin");
        bytes = block->getInteger("bytes");
      }
      bool fits = block && readInts(*block, "offsets", stored.offsets) &&
                  readInts(*block, "sizes", stored.sizes) &&
                  stored.offsets.size() == entry.shape.size() &&
                  stored.sizes.size() == entry.shape.size() && dtype && begin &&
                  bytes && files->get(stored.file);
      // offsets + sizes <= shape, without overflow (both are >= 0).
      for (size_t d = 0; fits && d < entry.shape.size(); ++d)
        fits = stored.sizes[d] <= entry.shape[d] &&
               stored.offsets[d] <= entry.shape[d] - stored.sizes[d];
      // Inside the tensor, so no more elements than it has.
      int64_t count = 1;
      if (fits)
        for (int64_t size : stored.sizes)
          count *= size;
      if (fits) {
        stored.dtype = *dtype;
        stored.begin = static_cast<uint64_t>(*begin);
        int64_t fileBytes = *files->getObject(stored.file)->getInteger("bytes");
        int64_t width = static_cast<int64_t>(rt::dtypeSize(*dtype)), want;
        fits = !__builtin_mul_overflow(count, width, &want) && *bytes == want &&
               *begin >= 0 && *begin <= fileBytes &&
               *bytes <= fileBytes - *begin;
      }
      if (!fits)
        return refuse("is malformed: a block of tensor '" + key.str() +
                      "' lies outside the tensor or its file");
      if (__builtin_add_overflow(covered, count, &covered))
        covered = std::numeric_limits<int64_t>::max();
      if (covered > elements)
        break;
      if (count)
        claimed[stored.file].push_back(
            {stored.begin, stored.begin + static_cast<uint64_t>(*bytes)});
      entry.blocks.push_back(std::move(stored));
    }
    if (covered != elements)
      return refuse(
          "is malformed: the blocks of tensor '" + key.str() + "' hold " +
          (covered > elements ? "more than the "
                              : std::to_string(covered) + " of the ") +
          std::to_string(elements) + " elements of its shape " +
          shapeString(entry.shape));
    checkpoint->entries[key.str()] = std::move(entry);
  }
  for (auto &[file, ranges] : claimed) {
    llvm::sort(ranges);
    for (size_t i = 1; i < ranges.size(); ++i)
      if (ranges[i].first < ranges[i - 1].second)
        return refuse(
            "is malformed: two blocks share bytes " +
            std::to_string(ranges[i].first) + " to " +
            std::to_string(std::min(ranges[i].second, ranges[i - 1].second)) +
            " of file '" + file + "'");
  }
  return checkpoint;
}

Checkpoint::~Checkpoint() {
  for (auto &[file, fd] : descriptors)
    ::close(fd);
}

std::string Checkpoint::meshDescription() const {
  std::string text;
  for (size_t axis = 0; axis < meshShape.size(); ++axis)
    text += (axis ? " x " : "") +
            (axis < meshAxes.size() ? meshAxes[axis] : std::string("?")) + "=" +
            std::to_string(meshShape[axis]);
  return text.empty() ? "one rank" : text;
}

bool Checkpoint::sameModule(const StepSignature &signature) const {
  return identity == moduleIdentity(signature);
}

bool Checkpoint::checkCompatible(const StepSignature &signature,
                                 std::string &error) const {
  std::string where = "checkpoint " + folderPath + " ";
  // A parameter set that differs is another model; state that differs
  // (another optimizer, or none) an incompatible module.
  auto kind = [](llvm::StringRef role) {
    return role == "param" ? "is from another model"
                           : "is from an incompatible module";
  };
  std::map<std::string, size_t> wanted;
  for (size_t a : checkpointedArguments(signature)) {
    const tg::GraphValueInfo &info = signature.arguments[a];
    const Sharded &sharded = signature.argumentShardings[a];
    std::string role = roleName(info);
    std::string key = keyOf(role, info.name);
    wanted[key] = a;
    auto it = entries.find(key);
    std::vector<int64_t> shape = logicalShape(sharded);
    const char *dtype =
        rt::dtypeName(*dtypeOf(sharded.logicalType.getElementType()));
    if (it == entries.end()) {
      error = where + kind(role) + ": it has no " + role + " '" + info.name +
              "' " + shapeString(shape) + " (" + dtype +
              "), which this module takes";
      return false;
    }
    if (it->second.shape != shape || it->second.dtype != dtype) {
      error = where + kind(role) + ": its " + role + " '" + info.name +
              "' is " + shapeString(it->second.shape) + " (" +
              it->second.dtype + ") but this module's is " +
              shapeString(shape) + " (" + dtype + ")";
      return false;
    }
  }
  for (const auto &[key, entry] : entries)
    if (entry.role != "buffer" && !wanted.count(key)) {
      error = where + kind(entry.role) + ": it holds " + entry.role + " '" +
              entry.name + "' " + shapeString(entry.shape) +
              ", which this module does not take";
      return false;
    }
  return true;
}

uint64_t Checkpoint::bytesStored() const {
  uint64_t bytes = 0;
  for (const auto &[key, entry] : entries)
    if (entry.role != "buffer")
      for (const Block &block : entry.blocks) {
        uint64_t count = rt::dtypeSize(block.dtype);
        for (int64_t size : block.sizes)
          count *= static_cast<uint64_t>(size);
        bytes += count;
      }
  return bytes;
}

bool Checkpoint::holds(const tg::GraphValueInfo &info) const {
  return info.role && entries.count(keyOf(roleName(info), info.name));
}

int Checkpoint::fileDescriptor(const std::string &file, std::string &error) {
  auto it = descriptors.find(file);
  if (it != descriptors.end())
    return it->second;
  std::string path = joinPath(folderPath, file);
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    error = path + ": cannot open: " + std::strerror(errno);
    return -1;
  }
  descriptors[file] = fd;
  return fd;
}

bool Checkpoint::readInto(const Entry &entry,
                          const std::vector<int64_t> &offsets,
                          const std::vector<int64_t> &sizes,
                          std::vector<double> &out, std::string &error) {
  size_t rank = sizes.size();
  int64_t wanted = 1;
  for (int64_t size : sizes)
    wanted *= size;
  std::vector<int64_t> outStrides = interp::stridesOf(sizes);
  int64_t filled = 0;
  std::vector<unsigned char> bytes;
  for (const Block &block : entry.blocks) {
    // The overlap of the stored block and the one asked for.
    std::vector<int64_t> lo(rank), extent(rank);
    bool empty = false;
    for (size_t d = 0; d < rank; ++d) {
      lo[d] = std::max(offsets[d], block.offsets[d]);
      int64_t hi =
          std::min(offsets[d] + sizes[d], block.offsets[d] + block.sizes[d]);
      extent[d] = hi - lo[d];
      empty |= extent[d] <= 0;
    }
    if (empty)
      continue;
    // Runs contiguous in both: the last dim, and each dim before it while
    // every dim after is whole in both blocks.
    size_t inner = rank == 0 ? 0 : rank - 1;
    while (inner > 0 && extent[inner] == block.sizes[inner] &&
           extent[inner] == sizes[inner])
      --inner;
    int64_t run = 1;
    for (size_t d = inner; d < rank; ++d)
      run *= extent[d];
    int64_t runs = 1;
    for (size_t d = 0; d < inner; ++d)
      runs *= extent[d];
    std::vector<int64_t> storedStrides = interp::stridesOf(block.sizes);
    size_t width = rt::dtypeSize(block.dtype);
    int fd = fileDescriptor(block.file, error);
    if (fd < 0)
      return false;
    bytes.resize(run * width);
    std::vector<int64_t> index(inner, 0);
    for (int64_t r = 0; r < runs; ++r) {
      int64_t from = 0, to = 0;
      for (size_t d = 0; d < rank; ++d) {
        int64_t at = lo[d] + (d < inner ? index[d] : 0);
        from += (at - block.offsets[d]) * storedStrides[d];
        to += (at - offsets[d]) * outStrides[d];
      }
      size_t done = 0;
      while (done < bytes.size()) {
        ssize_t n = ::pread(fd, bytes.data() + done, bytes.size() - done,
                            block.begin + from * width + done);
        if (n < 0 && errno == EINTR)
          continue;
        if (n <= 0) {
          error = joinPath(folderPath, block.file) + ": cannot read " +
                  entry.role + " '" + entry.name + "': " +
                  (n == 0 ? "the file is truncated" : std::strerror(errno));
          return false;
        }
        done += static_cast<size_t>(n);
      }
      readBytes += bytes.size();
      for (int64_t i = 0; i < run; ++i)
        out[to + i] = rt::decodeDType(bytes.data() + i * width, block.dtype);
      for (int d = static_cast<int>(inner) - 1; d >= 0; --d) {
        if (++index[d] < extent[d])
          break;
        index[d] = 0;
      }
    }
    filled += run * runs;
  }
  if (filled != wanted) {
    error = indexPath() + ": the blocks of " + entry.role + " '" + entry.name +
            "' do not cover " + shapeString(sizes) + " at " +
            shapeString(offsets);
    return false;
  }
  return true;
}

bool Checkpoint::read(const tg::GraphValueInfo &info,
                      const std::vector<int64_t> &offsets,
                      const std::vector<int64_t> &sizes, Tensor &block,
                      std::string &error) {
  const Entry &entry = entries.at(keyOf(roleName(info), info.name));
  return readInto(entry, offsets, sizes, block.data, error);
}

bool Checkpoint::exportParams(const std::string &path, std::string &error) {
  // What --save-params writes: parameters and model state under each of
  // their names, and the persistent buffers. Each name once: checked before
  // anything is read (each name holds a copy of its tensor).
  std::map<std::string, std::string> owners;
  for (const auto &[key, entry] : entries) {
    if (entry.role != "param" && !entry.buffer)
      continue;
    std::vector<std::string> names{entry.name};
    names.insert(names.end(), entry.aliases.begin(), entry.aliases.end());
    for (const std::string &name : names) {
      auto [it, added] = owners.try_emplace(name, key);
      if (!added) {
        error = indexPath() + ": is malformed: the name '" + name +
                "' is given twice (tensors '" + it->second + "' and '" + key +
                "')";
        return false;
      }
    }
  }
  std::vector<rt::NamedTensor> saved;
  for (const auto &[key, entry] : entries) {
    if (entry.role != "param" && !entry.buffer)
      continue;
    std::vector<double> values(std::accumulate(entry.shape.begin(),
                                               entry.shape.end(), int64_t(1),
                                               std::multiplies<int64_t>()));
    if (!readInto(entry, std::vector<int64_t>(entry.shape.size(), 0),
                  entry.shape, values, error))
      return false;
    std::optional<rt::DType> dtype =
        entry.blocks.empty() ? rt::parseDType(entry.dtype)
                             : std::optional(entry.blocks.front().dtype);
    std::vector<std::string> names{entry.name};
    names.insert(names.end(), entry.aliases.begin(), entry.aliases.end());
    for (const std::string &name : names)
      saved.push_back(
          {name, dtype.value_or(rt::DType::F32), entry.shape, values});
  }
  return rt::writeSafeTensors(path, saved, error);
}

int exportCheckpointParams(const std::string &directory,
                           const std::string &path) {
  std::string error;
  std::unique_ptr<Checkpoint> checkpoint = Checkpoint::open(directory, error);
  if (!checkpoint || !checkpoint->exportParams(path, error))
    return fail(error);
  spdlog::info("exported the parameters of {} to {}", checkpoint->folder(),
               path);
  return 0;
}

} // namespace spmdc::runner
