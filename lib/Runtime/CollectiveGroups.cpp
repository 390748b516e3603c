//===- CollectiveGroups.cpp - a rank's groups over mesh axes --------------===//
//
// One sub-communicator per set of mesh axes, created up front with
// MPI_Comm_split; its rank order is the group order with the axes
// ascending, and a call that lists the axes in another order gets the
// permutation between the two (Group::perm).
//
//===----------------------------------------------------------------------===//

#include "CollectiveState.h"

namespace spmdc::rt::collectives {

uint64_t packAxes(const int32_t *axes, int32_t n) {
  uint64_t packed = static_cast<uint64_t>(n) << 32;
  for (int32_t i = 0; i < n; ++i)
    packed |= static_cast<uint64_t>(axes[i] & 0xF) << (4 * i);
  return packed;
}

std::string axesText(uint64_t packed) {
  int n = static_cast<int>((packed >> 32) & 0xF);
  std::string text = "[";
  for (int i = 0; i < n; ++i)
    text += (i ? ", " : "") + std::to_string((packed >> (4 * i)) & 0xF);
  return text + "]";
}

/// The members' ranks in listed group order, for messages.
std::vector<int64_t> groupRanks(const int32_t *axes, int32_t n) {
  State &s = state();
  int64_t size = 1;
  for (int32_t i = 0; i < n; ++i)
    size *= s.shape[axes[i]];
  std::vector<int64_t> ranks;
  for (int64_t index = 0; index < size; ++index) {
    std::vector<int64_t> c = s.coords;
    int64_t rest = index;
    for (int32_t i = n - 1; i >= 0; --i) {
      c[axes[i]] = rest % s.shape[axes[i]];
      rest /= s.shape[axes[i]];
    }
    int64_t r = 0;
    for (size_t a = 0; a < c.size(); ++a)
      r = r * s.shape[a] + c[a];
    ranks.push_back(r);
  }
  return ranks;
}

/// Checks the axis list and resolves it to this rank's group.
Group resolveGroup(const char *call, const int32_t *axes, int32_t n) {
  State &s = state();
  int32_t meshRank = static_cast<int32_t>(s.shape.size());
  if (n < 0 || n > meshRank || (n > 0 && !axes))
    fail(call, "bad axis list (%d axes) for a mesh of %d axes", n, meshRank);
  uint32_t mask = 0;
  bool ascending = true;
  for (int32_t i = 0; i < n; ++i) {
    if (axes[i] < 0 || axes[i] >= meshRank)
      fail(call, "mesh axis %d out of range: the mesh has %d axes", axes[i],
           meshRank);
    if (mask & (1u << axes[i]))
      fail(call, "mesh axis %d listed twice", axes[i]);
    mask |= 1u << axes[i];
    if (i > 0 && axes[i] < axes[i - 1])
      ascending = false;
  }
  Group g;
  for (int32_t i = 0; i < n; ++i) {
    g.size *= s.shape[axes[i]];
    g.index = g.index * s.shape[axes[i]] + s.coords[axes[i]];
  }
  if (g.size == 1)
    return g;
  g.comm = s.comms[mask];
  g.mask = mask;
  if (ascending)
    return g;
  // Communicator rank j is the ascending-order index; decode it into
  // coordinates over the axes, then encode those in the listed order.
  g.perm.resize(g.size);
  std::vector<int64_t> c(meshRank, 0);
  for (int64_t j = 0; j < g.size; ++j) {
    int64_t rest = j;
    for (int32_t a = meshRank - 1; a >= 0; --a)
      if (mask & (1u << a)) {
        c[a] = rest % s.shape[a];
        rest /= s.shape[a];
      }
    int64_t listed = 0;
    for (int32_t i = 0; i < n; ++i)
      listed = listed * s.shape[axes[i]] + c[axes[i]];
    g.perm[j] = listed;
  }
  return g;
}

void setMesh(const char *call, int32_t mesh_rank, const int64_t *mesh_shape) {
  State &s = state();
  if (mesh_rank < 1 || mesh_rank > SPMD_RT_MAX_MESH_AXES || !mesh_shape)
    failOnce(call, "a mesh needs 1 to %d axes, got %d", SPMD_RT_MAX_MESH_AXES,
             mesh_rank);
  int64_t meshSize = 1;
  std::string shapeText = "[";
  for (int32_t a = 0; a < mesh_rank; ++a) {
    if (mesh_shape[a] < 1)
      failOnce(call, "mesh axis %d has size %lld; sizes must be >= 1", a,
               static_cast<long long>(mesh_shape[a]));
    meshSize *= mesh_shape[a];
    shapeText += (a ? ", " : "") + std::to_string(mesh_shape[a]);
  }
  shapeText += "]";
  if (meshSize != s.size)
    failOnce(call,
             "the mesh %s has %lld ranks but the job has %d (run it with "
             "mpirun -np %lld)",
             shapeText.c_str(), static_cast<long long>(meshSize), s.size,
             static_cast<long long>(meshSize));

  s.shape.assign(mesh_shape, mesh_shape + mesh_rank);
  s.coords.assign(mesh_rank, 0);
  for (int64_t a = mesh_rank - 1, rest = s.rank; a >= 0; --a) {
    s.coords[a] = rest % s.shape[a];
    rest /= s.shape[a];
  }
}

void createCommunicators(const char *call) {
  State &s = state();
  int32_t mesh_rank = static_cast<int32_t>(s.shape.size());
  // One communicator per set of axes; key = group index with the axes
  // ascending, color = the rank with those axes' coordinates zeroed.
  uint32_t sets = 1u << mesh_rank;
  s.comms.assign(sets, MPI_COMM_NULL);
  for (uint32_t mask = 1; mask < sets; ++mask) {
    int64_t color = 0, key = 0;
    for (int32_t a = 0; a < mesh_rank; ++a) {
      bool in = mask & (1u << a);
      color = color * s.shape[a] + (in ? 0 : s.coords[a]);
      if (in)
        key = key * s.shape[a] + s.coords[a];
    }
    checkMpi(MPI_Comm_split(MPI_COMM_WORLD, static_cast<int>(color),
                            static_cast<int>(key), &s.comms[mask]),
             call, "MPI_Comm_split");
  }
}

} // namespace spmdc::rt::collectives
