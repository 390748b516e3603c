//===- Mesh.cpp - mesh groups and tensor shardings ------------------------===//

#include "spmdc/Dialect/Dist/IR/Dist.h"

#include "mlir/IR/Builders.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>

using namespace mlir;

namespace spmdc::dist {

int64_t Mesh::numRanks() const {
  int64_t n = 1;
  for (int64_t s : shape)
    n *= s;
  return n;
}

int Mesh::axisIndex(StringRef name) const {
  for (auto [i, axis] : llvm::enumerate(axes))
    if (axis == name)
      return i;
  return -1;
}

SmallVector<int64_t> Mesh::coordinates(int64_t rank) const {
  SmallVector<int64_t> coords(shape.size());
  for (int i = shape.size() - 1; i >= 0; --i) {
    coords[i] = rank % shape[i];
    rank /= shape[i];
  }
  return coords;
}

int64_t Mesh::rankAt(ArrayRef<int64_t> coords) const {
  int64_t rank = 0;
  for (auto [c, s] : llvm::zip(coords, shape))
    rank = rank * s + c;
  return rank;
}

int64_t Mesh::groupSize(ArrayRef<int> groupAxes) const {
  int64_t size = 1;
  for (int a : groupAxes)
    size *= shape[a];
  return size;
}

int64_t Mesh::groupIndex(int64_t rank, ArrayRef<int> groupAxes) const {
  SmallVector<int64_t> coords = coordinates(rank);
  int64_t index = 0;
  for (int a : groupAxes)
    index = index * shape[a] + coords[a];
  return index;
}

SmallVector<int64_t> Mesh::groupMembers(int64_t rank,
                                        ArrayRef<int> groupAxes) const {
  SmallVector<int64_t> coords = coordinates(rank);
  SmallVector<int64_t> members;
  int64_t size = groupSize(groupAxes);
  for (int64_t index = 0; index < size; ++index) {
    int64_t rest = index;
    for (int i = groupAxes.size() - 1; i >= 0; --i) {
      coords[groupAxes[i]] = rest % shape[groupAxes[i]];
      rest /= shape[groupAxes[i]];
    }
    members.push_back(rankAt(coords));
  }
  return members;
}

FailureOr<SmallVector<int>> Mesh::axisIndices(ArrayAttr names) const {
  SmallVector<int> indices;
  for (Attribute name : names) {
    auto str = llvm::dyn_cast<StringAttr>(name);
    int index = str ? axisIndex(str.getValue()) : -1;
    if (index < 0)
      return failure();
    indices.push_back(index);
  }
  return indices;
}

ArrayAttr Mesh::axisNames(MLIRContext *context, ArrayRef<int> indices) const {
  Builder b(context);
  SmallVector<Attribute> names;
  for (int i : indices)
    names.push_back(b.getStringAttr(axes[i]));
  return b.getArrayAttr(names);
}

DictionaryAttr Mesh::toAttr(MLIRContext *context) const {
  Builder b(context);
  SmallVector<Attribute> names;
  for (const std::string &axis : axes)
    names.push_back(b.getStringAttr(axis));
  return b.getDictionaryAttr(
      {b.getNamedAttr("axes", b.getArrayAttr(names)),
       b.getNamedAttr("shape", b.getDenseI64ArrayAttr(shape))});
}

FailureOr<Mesh> Mesh::of(Operation *op, StringRef attrName) {
  auto module = llvm::isa<ModuleOp>(op) ? llvm::cast<ModuleOp>(op)
                                        : op->getParentOfType<ModuleOp>();
  DictionaryAttr attr =
      module ? module->getAttrOfType<DictionaryAttr>(attrName) : nullptr;
  auto axes = attr ? attr.getAs<ArrayAttr>("axes") : nullptr;
  auto shape = attr ? attr.getAs<DenseI64ArrayAttr>("shape") : nullptr;
  if (!axes || !shape || axes.size() != shape.size())
    return op->emitError() << "needs a module attribute '" << attrName
                           << "' = {axes = [...], shape = [...]}";
  Mesh mesh;
  for (Attribute axis : axes) {
    auto name = llvm::dyn_cast<StringAttr>(axis);
    if (!name)
      return op->emitError("mesh axes must be strings");
    mesh.axes.push_back(name.str());
  }
  for (int64_t s : shape.asArrayRef()) {
    if (s < 1)
      return op->emitError("mesh sizes must be positive");
    mesh.shape.push_back(s);
  }
  return mesh;
}

TensorSharding TensorSharding::replicated(int64_t rank) {
  TensorSharding s;
  s.dims.resize(rank);
  return s;
}

bool TensorSharding::operator==(const TensorSharding &other) const {
  if (dims != other.dims || partial != other.partial)
    return false;
  for (size_t d = 0; d < std::max(padded.size(), other.padded.size()); ++d)
    if (paddedSize(d) != other.paddedSize(d))
      return false;
  for (size_t d = 0; d < dims.size(); ++d)
    if (partsOf(d) != other.partsOf(d))
      return false;
  return true;
}

void TensorSharding::setParts(size_t d, int64_t count) {
  if (count <= 1 && d >= parts.size())
    return;
  if (d >= parts.size())
    parts.resize(dims.size(), 1);
  parts[d] = std::max<int64_t>(count, 1);
}

bool TensorSharding::hasParts() const {
  for (size_t d = 0; d < dims.size(); ++d)
    if (partsOf(d) > 1)
      return true;
  return false;
}

void TensorSharding::setPadded(size_t d, int64_t size) {
  if (size == 0 && d >= padded.size())
    return;
  if (d >= padded.size())
    padded.resize(dims.size(), 0);
  padded[d] = size;
}

void TensorSharding::padUneven(ArrayRef<int64_t> logical, const Mesh &mesh) {
  for (auto [d, axes] : llvm::enumerate(dims)) {
    int64_t chunks = mesh.groupSize(axes);
    // A dim in parts is never padded.
    if (partsOf(d) > 1)
      continue;
    setPadded(d, logical[d] % chunks
                     ? llvm::divideCeil(logical[d], chunks) * chunks
                     : 0);
  }
}

bool TensorSharding::isReplicated() const {
  return partial.empty() &&
         llvm::all_of(dims, [](const auto &d) { return d.empty(); });
}

SmallVector<int> TensorSharding::shardedAxes() const {
  SmallVector<int> axes;
  for (const auto &d : dims)
    axes.append(d.begin(), d.end());
  return axes;
}

FailureOr<SmallVector<int64_t>>
TensorSharding::localShape(ArrayRef<int64_t> logical, const Mesh &mesh) const {
  SmallVector<int64_t> local(logical);
  for (auto [i, axes] : llvm::enumerate(dims)) {
    int64_t chunks = mesh.groupSize(axes) * partsOf(i);
    if (paddedSize(i))
      local[i] = paddedSize(i);
    if (local[i] % chunks != 0)
      return failure();
    local[i] /= mesh.groupSize(axes);
  }
  return local;
}

void TensorSharding::blockOf(int64_t rank, ArrayRef<int64_t> logical,
                             const Mesh &mesh,
                             SmallVectorImpl<int64_t> &offsets,
                             SmallVectorImpl<int64_t> &sizes) const {
  offsets.assign(logical.size(), 0);
  sizes.assign(logical.begin(), logical.end());
  for (auto [i, axes] : llvm::enumerate(dims)) {
    int64_t parts = mesh.groupSize(axes);
    int64_t chunk = (paddedSize(i) ? paddedSize(i) : logical[i]) / parts;
    if (partsOf(i) > 1)
      chunk = logical[i] / partsOf(i) / parts;
    offsets[i] = mesh.groupIndex(rank, axes) * chunk;
    sizes[i] = std::clamp<int64_t>(logical[i] - offsets[i], 0, chunk);
  }
}

SmallVector<TensorSharding::Piece>
TensorSharding::piecesOf(int64_t rank, ArrayRef<int64_t> logical,
                         const Mesh &mesh) const {
  Piece block;
  blockOf(rank, logical, mesh, block.offsets, block.sizes);
  block.localOffsets.assign(logical.size(), 0);
  SmallVector<Piece> pieces{block};
  // Each dim in parts multiplies the pieces: part j's chunk sits at
  // j * (part size) in the logical dim and at j * chunk in the local one.
  for (size_t d = 0; d < dims.size(); ++d) {
    int64_t count = partsOf(d);
    if (count == 1)
      continue;
    int64_t part = logical[d] / count, chunk = block.sizes[d];
    SmallVector<Piece> more;
    for (const Piece &piece : pieces)
      for (int64_t j = 0; j < count; ++j) {
        Piece p = piece;
        p.offsets[d] += j * part;
        p.localOffsets[d] += j * chunk;
        more.push_back(p);
      }
    pieces = std::move(more);
  }
  return pieces;
}

std::string TensorSharding::str(const Mesh &mesh) const {
  std::string s = "[";
  for (auto [i, axes] : llvm::enumerate(dims)) {
    if (i)
      s += ", ";
    if (axes.empty()) {
      s += "R";
      continue;
    }
    s += "S(";
    for (auto [j, a] : llvm::enumerate(axes))
      s += (j ? "," : "") + mesh.axes[a];
    s += ")";
    if (paddedSize(i))
      s += " padded to " + std::to_string(paddedSize(i));
    if (partsOf(i) > 1)
      s += " in " + std::to_string(partsOf(i)) + " parts";
  }
  s += "]";
  if (!partial.empty()) {
    s += " P(";
    for (auto [j, a] : llvm::enumerate(partial))
      s += (j ? "," : "") + mesh.axes[a];
    s += ")";
  }
  return s;
}

bool isValidPadding(const TensorSharding &sharding, ArrayRef<int64_t> local,
                    ArrayRef<int64_t> logical, const Mesh &mesh) {
  if (local.size() != logical.size() || sharding.dims.size() != local.size())
    return false;
  for (auto [d, axes] : llvm::enumerate(sharding.dims)) {
    int64_t parts = mesh.groupSize(axes);
    if (logical[d] < 0 ||
        llvm::divideCeil(logical[d], parts) * parts != local[d] * parts)
      return false;
  }
  return true;
}

ShardingAttr TensorSharding::toAttr(MLIRContext *context, const Mesh &mesh,
                                    StringRef origin) const {
  SmallVector<Attribute> dimAttrs;
  for (const auto &axes : dims)
    dimAttrs.push_back(mesh.axisNames(context, axes));
  SmallVector<int64_t> partCounts;
  if (hasParts())
    for (size_t d = 0; d < dims.size(); ++d)
      partCounts.push_back(partsOf(d));
  return ShardingAttr::get(
      context, ArrayAttr::get(context, dimAttrs),
      partial.empty() ? ArrayAttr() : mesh.axisNames(context, partial),
      ArrayRef<int64_t>(),
      origin.empty() ? StringAttr() : StringAttr::get(context, origin),
      partCounts);
}

FailureOr<TensorSharding> TensorSharding::fromAttr(ShardingAttr attr,
                                                   const Mesh &mesh,
                                                   int64_t rank) {
  if (!attr || static_cast<int64_t>(attr.getDims().size()) != rank)
    return failure();
  TensorSharding s;
  for (Attribute d : attr.getDims()) {
    auto indices = mesh.axisIndices(llvm::cast<ArrayAttr>(d));
    if (failed(indices))
      return failure();
    s.dims.push_back(*indices);
  }
  if (ArrayAttr partial = attr.getPartial()) {
    auto indices = mesh.axisIndices(partial);
    if (failed(indices))
      return failure();
    s.partial = *indices;
  }
  if (!attr.getParts().empty()) {
    if (static_cast<int64_t>(attr.getParts().size()) != rank)
      return failure();
    for (auto [d, count] : llvm::enumerate(attr.getParts()))
      s.setParts(d, count);
  }
  return s;
}

} // namespace spmdc::dist
