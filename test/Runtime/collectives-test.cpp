//===- collectives-test.cpp - MPI test of the runtime's collectives -------===//
//
// Run under mpirun, one process per mesh rank (collectives.test drives it):
//
//   spmdc-collectives-test check MESH          every collective, checked
//   spmdc-collectives-test exit MESH R STEP CODE    rank R exits at STEP
//   spmdc-collectives-test kill MESH R STEP         rank R gets SIGKILL
//   spmdc-collectives-test stall MESH R STEP SECS   rank R sleeps at STEP
//   spmdc-collectives-test bad-dim MESH             a bad reduce_scatter
//   spmdc-collectives-test check-compiled MESH [CUDA_RUNTIME]
//       `check` through what compiled code calls (spmd_collective_<dtype>
//       on descriptors), over MPI, or over the NCCL transport of the CUDA
//       runtime library CUDA_RUNTIME (on the fake stack without GPUs)
//   spmdc-collectives-test check-started MESH [CUDA_RUNTIME]
//       the same through spmd_collective_start_<dtype> and its wait
//
// MESH is the mesh shape, "2x2" or "4". `check` runs every collective over
// every ordered list of mesh axes (the empty list too), every dtype and
// every dim of a 3-D tensor, and compares each result with one computed
// here, element by element, from the semantics in Collectives.h: each rank
// knows every rank's input, since the inputs are a formula of the rank and
// the element. Independent of the runtime's block arithmetic on purpose.
// A few results are also spelled out by hand for the 2x2 and 2 meshes.
// Rank 0 prints "collectives ok" when every rank agrees.
//
//===----------------------------------------------------------------------===//

#include "spmdc/Runtime/Collectives.h"
#include "spmdc/Runtime/Cuda.h"

#include <dlfcn.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <unistd.h>

namespace {

using Shape = std::vector<int64_t>;
using Axes = std::vector<int32_t>;

Shape mesh;
int myRank = 0;
int64_t failures = 0;
int64_t checks = 0;

Shape parseMesh(const char *text) {
  Shape shape;
  for (const char *p = text; *p;) {
    char *end = nullptr;
    shape.push_back(std::strtoll(p, &end, 10));
    p = *end == 'x' ? end + 1 : end;
    if (end == p && *p) {
      std::fprintf(stderr, "bad mesh '%s'\n", text);
      std::exit(2);
    }
  }
  return shape;
}

//===----------------------------------------------------------------------===//
// The reference: groups and values, from the definitions.
//===----------------------------------------------------------------------===//

Shape coordinates(int64_t rank) {
  Shape c(mesh.size());
  for (int i = static_cast<int>(mesh.size()) - 1; i >= 0; --i) {
    c[i] = rank % mesh[i];
    rank /= mesh[i];
  }
  return c;
}

/// The ranks agreeing with `rank` off `axes`, ordered by their multi-index
/// over `axes` in the listed order.
std::vector<int64_t> groupMembers(int64_t rank, const Axes &axes) {
  std::vector<int64_t> members;
  int64_t total = 1;
  for (int64_t s : mesh)
    total *= s;
  Shape mine = coordinates(rank);
  // Every rank that agrees off the axes, then sorted by listed index.
  std::vector<std::pair<int64_t, int64_t>> keyed;
  for (int64_t r = 0; r < total; ++r) {
    Shape c = coordinates(r);
    bool same = true;
    for (size_t a = 0; a < mesh.size(); ++a) {
      bool listed = false;
      for (int32_t x : axes)
        listed |= x == static_cast<int32_t>(a);
      if (!listed && c[a] != mine[a])
        same = false;
    }
    if (!same)
      continue;
    int64_t key = 0;
    for (int32_t x : axes)
      key = key * mesh[x] + c[x];
    keyed.push_back({key, r});
  }
  members.resize(keyed.size());
  for (auto [key, r] : keyed)
    members[key] = r;
  return members;
}

/// Rank `member`'s input at flat element `e`: exact in every dtype here.
double inputValue(int64_t member, int64_t e) {
  return static_cast<double>((member + 1) * 1000 + e);
}

int64_t product(const Shape &s) {
  int64_t n = 1;
  for (int64_t x : s)
    n *= x;
  return n;
}

Shape unflatten(int64_t flat, const Shape &shape) {
  Shape idx(shape.size());
  for (int i = static_cast<int>(shape.size()) - 1; i >= 0; --i) {
    idx[i] = flat % shape[i];
    flat /= shape[i];
  }
  return idx;
}

int64_t flatten(const Shape &idx, const Shape &shape) {
  int64_t flat = 0;
  for (size_t i = 0; i < shape.size(); ++i)
    flat = flat * shape[i] + idx[i];
  return flat;
}

//===----------------------------------------------------------------------===//
// Typed buffers
//===----------------------------------------------------------------------===//

size_t dtypeBytes(int32_t dtype) {
  return dtype == SPMD_DTYPE_F32 || dtype == SPMD_DTYPE_I32 ? 4 : 8;
}

const char *dtypeName(int32_t dtype) {
  static const char *names[] = {"f32", "f64", "i64", "i32"};
  return names[dtype];
}

struct Buffer {
  int32_t dtype;
  std::vector<char> bytes;
  Buffer(int32_t dtype, int64_t count)
      : dtype(dtype), bytes(count * dtypeBytes(dtype), '\x5a') {}
  void *data() { return bytes.data(); }
  void set(int64_t i, double v) {
    switch (dtype) {
    case SPMD_DTYPE_F32:
      reinterpret_cast<float *>(data())[i] = v;
      break;
    case SPMD_DTYPE_F64:
      reinterpret_cast<double *>(data())[i] = v;
      break;
    case SPMD_DTYPE_I64:
      reinterpret_cast<int64_t *>(data())[i] = v;
      break;
    default:
      reinterpret_cast<int32_t *>(data())[i] = v;
      break;
    }
  }
  double get(int64_t i) {
    switch (dtype) {
    case SPMD_DTYPE_F32:
      return reinterpret_cast<float *>(data())[i];
    case SPMD_DTYPE_F64:
      return reinterpret_cast<double *>(data())[i];
    case SPMD_DTYPE_I64:
      return reinterpret_cast<int64_t *>(data())[i];
    default:
      return reinterpret_cast<int32_t *>(data())[i];
    }
  }
};

Buffer inputOf(int64_t member, int32_t dtype, int64_t count) {
  Buffer b(dtype, count);
  for (int64_t e = 0; e < count; ++e)
    b.set(e, inputValue(member, e));
  return b;
}

std::string axesText(const Axes &axes) {
  std::string s = "[";
  for (size_t i = 0; i < axes.size(); ++i)
    s += (i ? "," : "") + std::to_string(axes[i]);
  return s + "]";
}

//===----------------------------------------------------------------------===//
// The collectives under test: the host API (spmd_all_* and friends), or
// what compiled code calls, spmd_collective_<dtype> on descriptors, whose
// bytes travel through the installed transport (MPI, or the CUDA runtime's
// NCCL). Same arguments as the host API.
//===----------------------------------------------------------------------===//

bool viaCompiledAbi = false;
/// With viaCompiledAbi: spmd_collective_start_<dtype>, then its wait
/// (check-started), instead of spmd_collective_<dtype>.
bool viaStarted = false;

/// Calls spmd_collective_<dtype> of `kind` on contiguous row-major buffers.
void compiledCollective(int32_t kind, int32_t dim, int32_t dim2, int32_t dtype,
                        const int32_t *axes, int32_t numAxes, const void *in,
                        const Shape &inShape, void *out,
                        const Shape &outShape) {
  using Fn = void (*)(int32_t, int64_t, int64_t, int64_t, int64_t, void *,
                      int64_t, void *);
  static const Fn byDtype[] = {spmd_collective_f32, spmd_collective_f64,
                               spmd_collective_i64, spmd_collective_i32};
  auto descriptor = [](const void *data, const Shape &shape) {
    auto address = reinterpret_cast<int64_t>(data);
    std::vector<int64_t> d = {address, address, 0};
    d.insert(d.end(), shape.begin(), shape.end());
    Shape strides(shape.size(), 1);
    for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i)
      strides[i] = strides[i + 1] * shape[i + 1];
    d.insert(d.end(), strides.begin(), strides.end());
    return d;
  };
  int64_t packed = 0; // four bits an axis, plus one, first listed lowest
  for (int32_t i = 0; i < numAxes; ++i)
    packed |= int64_t(axes[i] + 1) << (4 * i);
  std::vector<int64_t> inDesc = descriptor(in, inShape),
                       outDesc = descriptor(out, outShape);
  if (!viaStarted) {
    byDtype[dtype](kind, dim, dim2, packed, inShape.size(), inDesc.data(),
                   outShape.size(), outDesc.data());
    return;
  }
  using Start = int64_t (*)(int32_t, int64_t, int64_t, int64_t, int64_t, void *,
                            int64_t, void *);
  using Wait = void (*)(int64_t, int64_t, void *, int64_t, void *);
  static const Start starts[] = {
      spmd_collective_start_f32, spmd_collective_start_f64,
      spmd_collective_start_i64, spmd_collective_start_i32};
  static const Wait waits[] = {
      spmd_collective_wait_f32, spmd_collective_wait_f64,
      spmd_collective_wait_i64, spmd_collective_wait_i32};
  int64_t handle =
      starts[dtype](kind, dim, dim2, packed, inShape.size(), inDesc.data(),
                    outShape.size(), outDesc.data());
  waits[dtype](handle, inShape.size(), inDesc.data(), outShape.size(),
               outDesc.data());
}

Shape shapeOf(int32_t rank, const int64_t *shape) {
  return Shape(shape, shape + rank);
}

void allReduce(void *inout, int64_t count, int32_t dtype, const int32_t *axes,
               int32_t numAxes) {
  if (!viaCompiledAbi) {
    spmd_all_reduce(inout, count, dtype, axes, numAxes);
    return;
  }
  std::vector<char> out(count * dtypeBytes(dtype));
  compiledCollective(0, 0, 0, dtype, axes, numAxes, inout, {count}, out.data(),
                     {count});
  std::memcpy(inout, out.data(), out.size());
}

/// all_gather (kind 1: `dim` of the input grows group-size times),
/// reduce_scatter (2) and local_slice (4: `dim` is cut into group-size
/// chunks): the same arguments for all three.
void alongDim(int32_t kind, decltype(&spmd_all_gather) host, const void *in,
              void *out, int32_t rank, const int64_t *inShape, int32_t dim,
              int32_t dtype, const int32_t *axes, int32_t numAxes) {
  if (!viaCompiledAbi) {
    host(in, out, rank, inShape, dim, dtype, axes, numAxes);
    return;
  }
  Shape from = shapeOf(rank, inShape), to = from;
  int64_t n = spmd_rt_group_size(axes, numAxes);
  to[dim] = kind == 1 ? to[dim] * n : to[dim] / n;
  compiledCollective(kind, dim, 0, dtype, axes, numAxes, in, from, out, to);
}

void allGather(const void *in, void *out, int32_t rank,
               const int64_t *localShape, int32_t dim, int32_t dtype,
               const int32_t *axes, int32_t numAxes) {
  alongDim(1, spmd_all_gather, in, out, rank, localShape, dim, dtype, axes,
           numAxes);
}

void reduceScatter(const void *in, void *out, int32_t rank,
                   const int64_t *inShape, int32_t dim, int32_t dtype,
                   const int32_t *axes, int32_t numAxes) {
  alongDim(2, spmd_reduce_scatter, in, out, rank, inShape, dim, dtype, axes,
           numAxes);
}

void localSlice(const void *in, void *out, int32_t rank, const int64_t *inShape,
                int32_t dim, int32_t dtype, const int32_t *axes,
                int32_t numAxes) {
  alongDim(4, spmd_local_slice, in, out, rank, inShape, dim, dtype, axes,
           numAxes);
}

void allToAll(const void *in, void *out, int32_t rank, const int64_t *inShape,
              int32_t split, int32_t concat, int32_t dtype, const int32_t *axes,
              int32_t numAxes) {
  if (!viaCompiledAbi) {
    spmd_all_to_all(in, out, rank, inShape, split, concat, dtype, axes,
                    numAxes);
    return;
  }
  Shape from = shapeOf(rank, inShape), to = from;
  int64_t n = spmd_rt_group_size(axes, numAxes);
  to[split] /= n;
  to[concat] *= n;
  compiledCollective(3, split, concat, dtype, axes, numAxes, in, from, out, to);
}

/// Compares `got` with `expected(flat index)` over `count` elements.
template <typename F>
void compare(const std::string &what, Buffer &got, int64_t count, F expected) {
  ++checks;
  for (int64_t e = 0; e < count; ++e) {
    double want = expected(e);
    if (got.get(e) != want) {
      std::fprintf(stderr,
                   "rank %d: MISMATCH %s at element %lld: got %g, expected "
                   "%g\n",
                   myRank, what.c_str(), static_cast<long long>(e), got.get(e),
                   want);
      ++failures;
      return;
    }
  }
}

//===----------------------------------------------------------------------===//
// The checks
//===----------------------------------------------------------------------===//

/// Every ordered list of distinct mesh axes, the empty one first.
std::vector<Axes> orderedAxisLists() {
  std::vector<Axes> lists = {{}};
  for (size_t i = 0; i < lists.size(); ++i)
    for (int32_t a = 0; a < static_cast<int32_t>(mesh.size()); ++a) {
      bool used = false;
      for (int32_t x : lists[i])
        used |= x == a;
      if (used)
        continue;
      Axes next = lists[i];
      next.push_back(a);
      lists.push_back(next);
    }
  return lists;
}

void checkAxes(const Axes &axes, int32_t dtype) {
  std::vector<int64_t> members = groupMembers(myRank, axes);
  int64_t n = members.size();
  int64_t index = 0;
  while (members[index] != myRank)
    ++index;
  const int32_t *ax = axes.data();
  int32_t na = axes.size();
  std::string tag = std::string(dtypeName(dtype)) + " axes " + axesText(axes);

  if (spmd_rt_group_size(ax, na) != n || spmd_rt_group_index(ax, na) != index) {
    std::fprintf(stderr,
                 "rank %d: MISMATCH group of %s: size %lld index %lld, "
                 "expected %lld %lld\n",
                 myRank, tag.c_str(),
                 static_cast<long long>(spmd_rt_group_size(ax, na)),
                 static_cast<long long>(spmd_rt_group_index(ax, na)),
                 static_cast<long long>(n), static_cast<long long>(index));
    ++failures;
  }

  const Shape base = {2, 3, 2};

  // all_reduce.
  {
    int64_t count = 7;
    Buffer b = inputOf(myRank, dtype, count);
    allReduce(b.data(), count, dtype, ax, na);
    compare("all_reduce " + tag, b, count, [&](int64_t e) {
      double sum = 0;
      for (int64_t m : members)
        sum += inputValue(m, e);
      return sum;
    });
  }

  for (int32_t dim = 0; dim < 3; ++dim) {
    std::string dtag = tag + " dim " + std::to_string(dim);
    // all_gather: out[.., p, ..] = in_{members[p / L]}[.., p % L, ..].
    {
      Shape local = base;
      Shape outShape = local;
      outShape[dim] *= n;
      Buffer in = inputOf(myRank, dtype, product(local));
      Buffer out(dtype, product(outShape));
      allGather(in.data(), out.data(), 3, local.data(), dim, dtype, ax, na);
      compare("all_gather " + dtag, out, product(outShape), [&](int64_t e) {
        Shape idx = unflatten(e, outShape);
        int64_t m = idx[dim] / local[dim];
        idx[dim] %= local[dim];
        return inputValue(members[m], flatten(idx, local));
      });
    }
    // reduce_scatter: out[.., k, ..] = sum_m in_m[.., index * C + k, ..].
    {
      Shape inShape = base;
      inShape[dim] *= n;
      Shape outShape = base;
      Buffer in = inputOf(myRank, dtype, product(inShape));
      Buffer out(dtype, product(outShape));
      reduceScatter(in.data(), out.data(), 3, inShape.data(), dim, dtype, ax,
                    na);
      compare("reduce_scatter " + dtag, out, product(outShape), [&](int64_t e) {
        Shape idx = unflatten(e, outShape);
        idx[dim] += index * outShape[dim];
        double sum = 0;
        for (int64_t m : members)
          sum += inputValue(m, flatten(idx, inShape));
        return sum;
      });
    }
    // local_slice: out[.., k, ..] = in[.., index * C + k, ..].
    {
      Shape inShape = base;
      inShape[dim] *= n;
      Shape outShape = base;
      Buffer in = inputOf(myRank, dtype, product(inShape));
      Buffer out(dtype, product(outShape));
      localSlice(in.data(), out.data(), 3, inShape.data(), dim, dtype, ax, na);
      compare("local_slice " + dtag, out, product(outShape), [&](int64_t e) {
        Shape idx = unflatten(e, outShape);
        idx[dim] += index * outShape[dim];
        return inputValue(myRank, flatten(idx, inShape));
      });
    }
    // all_to_all: out[.., p, ..] (p along concat) comes from sender
    // members[p / C[concat]], its chunk `index` along split.
    for (int32_t concat = 0; concat < 3; ++concat) {
      int32_t split = dim;
      Shape inShape = base;
      inShape[split] *= n;
      Shape chunk = inShape;
      chunk[split] /= n;
      Shape outShape = chunk;
      outShape[concat] *= n;
      Buffer in = inputOf(myRank, dtype, product(inShape));
      Buffer out(dtype, product(outShape));
      allToAll(in.data(), out.data(), 3, inShape.data(), split, concat, dtype,
               ax, na);
      compare("all_to_all " + tag + " split " + std::to_string(split) +
                  " concat " + std::to_string(concat),
              out, product(outShape), [&](int64_t e) {
                Shape idx = unflatten(e, outShape);
                int64_t sender = idx[concat] / chunk[concat];
                idx[concat] %= chunk[concat];
                idx[split] += index * chunk[split];
                return inputValue(members[sender], flatten(idx, inShape));
              });
    }
  }
}

/// Results written out by hand, for the meshes the tests use.
void checkByHand() {
  auto gather1 = [&](const Axes &axes, std::vector<double> want) {
    int32_t in = myRank;
    std::vector<int32_t> out(want.size(), -1);
    int64_t shape[] = {1};
    allGather(&in, out.data(), 1, shape, 0, SPMD_DTYPE_I32, axes.data(),
              axes.size());
    Buffer b(SPMD_DTYPE_I32, out.size());
    std::memcpy(b.data(), out.data(), out.size() * 4);
    compare("by hand: all_gather of the rank over " + axesText(axes), b,
            want.size(), [&](int64_t e) { return want[e]; });
  };
  if (mesh == Shape{2, 2}) {
    // Rank r sits at (r / 2, r % 2). Over [1, 0] the group index is
    // 2 * coord1 + coord0: ranks 0, 2, 1, 3.
    gather1({0, 1}, {0, 1, 2, 3});
    gather1({1, 0}, {0, 2, 1, 3});
    gather1({0},
            myRank % 2 ? std::vector<double>{1, 3} : std::vector<double>{0, 2});
    gather1({1},
            myRank < 2 ? std::vector<double>{0, 1} : std::vector<double>{2, 3});
    // in_r = {10r, 10r + 1, 10r + 2, 10r + 3}; the sum is {60, 64, 68, 72};
    // over [1, 0], ranks 0, 1, 2, 3 have group index 0, 2, 1, 3.
    std::vector<double> sums = {60, 64, 68, 72};
    int64_t index[] = {0, 2, 1, 3};
    Buffer in(SPMD_DTYPE_F64, 4), out(SPMD_DTYPE_F64, 1);
    for (int i = 0; i < 4; ++i)
      in.set(i, 10 * myRank + i);
    int64_t shape[] = {4};
    int32_t axes[] = {1, 0};
    reduceScatter(in.data(), out.data(), 1, shape, 0, SPMD_DTYPE_F64, axes, 2);
    compare("by hand: reduce_scatter over [1,0]", out, 1,
            [&](int64_t) { return sums[index[myRank]]; });
  }
  if (mesh == Shape{2}) {
    // in_r = [[10r, 10r + 1], [10r + 2, 10r + 3]], split 0, concat 1:
    // rank 0 gets its row 0 and rank 1's row 0 side by side.
    Buffer in(SPMD_DTYPE_F32, 4), out(SPMD_DTYPE_F32, 4);
    for (int i = 0; i < 4; ++i)
      in.set(i, 10 * myRank + i);
    int64_t shape[] = {2, 2};
    int32_t axes[] = {0};
    allToAll(in.data(), out.data(), 2, shape, 0, 1, SPMD_DTYPE_F32, axes, 1);
    std::vector<double> want = myRank == 0 ? std::vector<double>{0, 1, 10, 11}
                                           : std::vector<double>{2, 3, 12, 13};
    compare("by hand: all_to_all split 0 concat 1", out, 4,
            [&](int64_t e) { return want[e]; });
    gather1({0}, {0, 1});
  }
}

/// Starts the CUDA runtime library at `path` on this rank's device and
/// installs its NCCL transport.
bool useCudaTransport(const char *path) {
  void *library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  auto init = library ? reinterpret_cast<decltype(&spmd_cuda_init)>(
                            dlsym(library, "spmd_cuda_init"))
                      : nullptr;
  auto transport = library ? reinterpret_cast<decltype(&spmd_cuda_transport)>(
                                 dlsym(library, "spmd_cuda_transport"))
                           : nullptr;
  char error[256] = "";
  if (!init || !transport) {
    std::fprintf(stderr, "cannot load %s: %s\n", path, dlerror());
    return false;
  }
  const char *local = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK");
  if (init(local ? std::atoi(local) : 0, spmd_rt_fail, error, sizeof error) ||
      spmd_rt_set_transport(
          static_cast<const spmd_rt_transport *>(transport())) != 0) {
    std::fprintf(stderr, "cannot start the CUDA transport: %s\n", error);
    return false;
  }
  return true;
}

int check() {
  int64_t step = 0;
  for (const Axes &axes : orderedAxisLists())
    for (int32_t dtype = 0; dtype < 4; ++dtype) {
      spmd_rt_set_step(++step);
      checkAxes(axes, dtype);
    }
  spmd_rt_set_step(++step);
  checkByHand();
  // Agree on the outcome through the runtime itself.
  int64_t total = failures;
  std::vector<int32_t> all;
  for (int32_t a = 0; a < static_cast<int32_t>(mesh.size()); ++a)
    all.push_back(a);
  spmd_all_reduce(&total, 1, SPMD_DTYPE_I64, all.data(), all.size());
  spmd_rt_finalize();
  if (total != 0) {
    if (myRank == 0)
      std::fprintf(stderr, "collectives FAILED: %lld mismatches\n",
                   static_cast<long long>(total));
    return 1;
  }
  if (myRank == 0)
    std::printf("collectives ok (%lld ranks, %lld checks per rank)\n",
                static_cast<long long>(product(mesh)),
                static_cast<long long>(checks));
  return 0;
}

/// Steps 1, 2, ...: an all_reduce over every axis each step; at `failStep`
/// rank `failRank` does `what` first.
int failing(int failRank, int64_t failStep, const std::function<void()> &what) {
  std::vector<int32_t> all;
  for (int32_t a = 0; a < static_cast<int32_t>(mesh.size()); ++a)
    all.push_back(a);
  for (int64_t step = 1; step <= failStep; ++step) {
    spmd_rt_set_step(step);
    if (step == failStep && myRank == failRank)
      what();
    double x = myRank;
    spmd_all_reduce(&x, 1, SPMD_DTYPE_F64, all.data(), all.size());
  }
  spmd_rt_finalize();
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 3) {
    std::fprintf(stderr,
                 "usage: %s check|check-compiled|check-started|exit|kill|"
                 "stall|bad-dim MESH ...\n",
                 argv[0]);
    return 2;
  }
  std::string mode = argv[1];
  mesh = parseMesh(argv[2]);
  spmd_rt_init(&argc, &argv, mesh.size(), mesh.data());
  myRank = spmd_rt_rank();
  auto arg = [&](int i) {
    if (i >= argc) {
      std::fprintf(stderr, "%s: missing arguments\n", mode.c_str());
      std::exit(2);
    }
    return std::atoll(argv[i]);
  };
  if (mode == "check")
    return check();
  if (mode == "check-compiled" || mode == "check-started") {
    viaCompiledAbi = true;
    viaStarted = mode == "check-started";
    if (argc > 3 && !useCudaTransport(argv[3]))
      return 1;
    return check();
  }
  if (mode == "exit") {
    int code = arg(5);
    return failing(arg(3), arg(4), [&] { std::exit(code); });
  }
  if (mode == "kill")
    return failing(arg(3), arg(4), [] { std::raise(SIGKILL); });
  if (mode == "stall") {
    unsigned seconds = arg(5);
    return failing(arg(3), arg(4), [&] { sleep(seconds); });
  }
  if (mode == "bad-dim") {
    spmd_rt_set_step(1);
    double in[3] = {1, 2, 3}, out[2];
    int64_t shape[] = {3};
    int32_t axes[] = {0};
    spmd_reduce_scatter(in, out, 1, shape, 0, SPMD_DTYPE_F64, axes, 1);
    spmd_rt_finalize();
    return 0;
  }
  std::fprintf(stderr, "unknown mode '%s'\n", mode.c_str());
  return 2;
}
