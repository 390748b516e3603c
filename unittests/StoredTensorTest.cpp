//===- StoredTensorTest.cpp - tests of tensors read in place --------------===//
//
// A strided view of storage inside a larger file: blocks of it read right,
// as doubles and as f32 (on threads, in pieces), its bytes stream into a
// safetensors section that SafeTensorsReader reads at an offset of another
// file, and storage beyond the file is an error. Also the heap policy's
// zeroing of a block without writing its pages and its heap in huge pages.
//
//===----------------------------------------------------------------------===//

#include "spmdc/Runtime/StoredTensor.h"
#include "spmdc/Runtime/HeapPolicy.h"
#include "spmdc/Runtime/ParallelFor.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

#include <cstdio>
#include <fstream>
#include <unistd.h>

using namespace spmdc::rt;

namespace {

std::string tempPath(const std::string &name) {
  return ::testing::TempDir() + "/storedtensor-" + std::to_string(getpid()) +
         "-" + name;
}

/// A file of `prefix` bytes of padding, then `values` as f32.
std::string writeStorage(const std::string &name, size_t prefix,
                         const std::vector<float> &values) {
  std::string path = tempPath(name);
  std::ofstream os(path, std::ios::binary);
  std::string pad(prefix, 'x');
  os.write(pad.data(), pad.size());
  os.write(reinterpret_cast<const char *>(values.data()),
           values.size() * sizeof(float));
  return path;
}

/// W [2, 3] stored transposed: storage [3, 2] at byte 10, strides [1, 2].
StoredTensor transposed(const std::string &path) {
  StoredTensor t;
  t.path = path;
  t.dataOffset = 10;
  t.dataBytes = 6 * 4;
  t.dtype = DType::F32;
  t.shape = {2, 3};
  t.strides = {1, 2};
  return t;
}

TEST(StoredTensor, ReadsBlocksOfAStridedView) {
  // storage[j * 2 + i] = W[i][j] = 10 i + j.
  std::string path = writeStorage("strided", 10, {0, 10, 1, 11, 2, 12});
  StoredTensor t = transposed(path);
  EXPECT_FALSE(t.isRowMajor());
  EXPECT_EQ(t.bytesNeeded(), 24u);
  std::vector<double> out;
  std::string error;
  ASSERT_TRUE(readStoredBlock(t, {0, 0}, {2, 3}, out, error)) << error;
  EXPECT_EQ(out, (std::vector<double>{0, 1, 2, 10, 11, 12}));
  ASSERT_TRUE(readStoredBlock(t, {1, 1}, {1, 2}, out, error)) << error;
  EXPECT_EQ(out, (std::vector<double>{11, 12}));
  std::remove(path.c_str());
}

TEST(StoredTensor, StreamsIntoASafeTensorsSectionReadAtAnOffset) {
  std::string a = writeStorage("a", 10, {0, 10, 1, 11, 2, 12});
  std::string b = writeStorage("b", 3, {5, 6, 7});
  StoredTensor row;
  row.path = b;
  row.dataOffset = 3;
  row.dataBytes = 12;
  row.shape = {3};
  row.strides = {1};
  EXPECT_TRUE(row.isRowMajor());
  SafeTensorsPlan plan = planSafeTensors({{"w", transposed(a)}, {"v", row}});
  EXPECT_EQ(plan.head.size() % 8, 0u);
  EXPECT_EQ(plan.totalBytes, plan.head.size() + 36);
  // The section follows 5 bytes of something else.
  std::string out = tempPath("section");
  std::string bytes = "head!", error;
  ASSERT_TRUE(writeSafeTensors(
      plan,
      [&](const char *data, size_t size) {
        bytes.append(data, size);
        return true;
      },
      error))
      << error;
  ASSERT_EQ(bytes.size(), 5 + plan.totalBytes);
  std::ofstream(out, std::ios::binary) << bytes;
  auto reader = SafeTensorsReader::open(out, error, 5, plan.totalBytes);
  ASSERT_TRUE(reader) << error;
  std::vector<double> values;
  ASSERT_TRUE(reader->readAsDouble("w", values, error)) << error;
  EXPECT_EQ(values, (std::vector<double>{0, 1, 2, 10, 11, 12}));
  ASSERT_TRUE(reader->readSliceAsDouble("v", {1}, {2}, values, error));
  EXPECT_EQ(values, (std::vector<double>{6, 7}));
  // A section longer than the file is refused.
  EXPECT_FALSE(SafeTensorsReader::open(out, error, 5, plan.totalBytes + 1));
  EXPECT_NE(error.find("was the file truncated?"), std::string::npos);
  for (const std::string &p : {a, b, out})
    std::remove(p.c_str());
}

TEST(StoredTensor, ReadsBlocksAsF32AsTheDoublesWouldBe) {
  std::string path = writeStorage("strided-f32", 10, {0, 10, 1, 11, 2, 12});
  StoredTensor t = transposed(path);
  std::string error;
  for (auto [offsets, sizes] :
       {std::pair<std::vector<int64_t>, std::vector<int64_t>>{{0, 0}, {2, 3}},
        {{1, 1}, {1, 2}},
        {{0, 2}, {2, 1}}}) {
    std::vector<double> doubles;
    ASSERT_TRUE(readStoredBlock(t, offsets, sizes, doubles, error)) << error;
    std::vector<float> floats(doubles.size(), -1);
    ASSERT_TRUE(readStoredBlockF32(t, offsets, sizes, floats.data(), 2, error))
        << error;
    for (size_t i = 0; i < doubles.size(); ++i)
      EXPECT_EQ(floats[i], static_cast<float>(doubles[i])) << i;
  }
  std::remove(path.c_str());
}

TEST(StoredTensor, ReadsLargeRowMajorBlocksInPiecesOnThreads) {
  // [3, 5, 2^18] row-major f32, after 12 bytes: a block of rows 1..2 taken
  // whole is one run of 2.6 M elements (three pieces); a block that cuts
  // the middle dim is six runs.
  const int64_t inner = int64_t(1) << 18;
  std::vector<float> values(static_cast<size_t>(3 * 5 * inner));
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = static_cast<float>(i % 100003) * 0.5f;
  std::string path = writeStorage("rows", 12, values);
  StoredTensor t;
  t.path = path;
  t.dataOffset = 12;
  t.dataBytes = values.size() * 4;
  t.shape = {3, 5, inner};
  t.strides = {5 * inner, inner, 1};
  ASSERT_TRUE(t.isRowMajor());
  spmd_parallel_set_threads(3);
  std::string error;
  for (auto [offsets, sizes] :
       {std::pair<std::vector<int64_t>, std::vector<int64_t>>{
            {1, 0, 0}, {2, 5, inner}},
        {{0, 1, 0}, {3, 2, inner}},
        {{2, 4, 7}, {1, 1, 100}}}) {
    int64_t count = sizes[0] * sizes[1] * sizes[2];
    std::vector<float> out(static_cast<size_t>(count), -1);
    ASSERT_TRUE(readStoredBlockF32(t, offsets, sizes, out.data(), 3, error))
        << error;
    size_t at = 0;
    for (int64_t i = 0; i < sizes[0]; ++i)
      for (int64_t j = 0; j < sizes[1]; ++j)
        for (int64_t k = 0; k < sizes[2]; ++k, ++at) {
          int64_t element = (offsets[0] + i) * 5 * inner +
                            (offsets[1] + j) * inner + offsets[2] + k;
          ASSERT_EQ(out[at], values[static_cast<size_t>(element)])
              << i << " " << j << " " << k;
        }
  }
  spmd_parallel_set_threads(1);
  std::remove(path.c_str());
}

TEST(StoredTensor, ReadsOtherDTypesAsF32) {
  // f64 storage: each value rounded to f32 as a cast from the double.
  std::string path = tempPath("f64");
  std::vector<double> values = {1.0 / 3, -2.5, 1e-40, 16777217.0};
  {
    std::ofstream os(path, std::ios::binary);
    os.write(reinterpret_cast<const char *>(values.data()),
             values.size() * sizeof(double));
  }
  StoredTensor t;
  t.path = path;
  t.dataBytes = values.size() * 8;
  t.dtype = DType::F64;
  t.shape = {2, 2};
  t.strides = {2, 1};
  std::vector<float> out(4);
  std::string error;
  ASSERT_TRUE(readStoredBlockF32(t, {0, 0}, {2, 2}, out.data(), 1, error))
      << error;
  for (size_t i = 0; i < values.size(); ++i)
    EXPECT_EQ(out[i], static_cast<float>(values[i])) << i;
  std::remove(path.c_str());
}

TEST(HeapPolicy, ZeroUntouchedZeroesEveryByteOfLargeAndSmallBlocks) {
  for (size_t bytes : {size_t(100), size_t(3) << 20, (size_t(5) << 20) + 13}) {
    auto *block = static_cast<unsigned char *>(std::malloc(bytes + 64));
    std::memset(block, 0xab, bytes + 64);
    // An odd start: the pages it shares with its neighbours are memset.
    spmd_zero_untouched(block + 3, bytes);
    EXPECT_EQ(block[2], 0xab);
    for (size_t i = 0; i < bytes; ++i)
      ASSERT_EQ(block[3 + i], 0) << bytes << " " << i;
    EXPECT_EQ(block[3 + bytes], 0xab);
    std::free(block);
  }
}

/// The VmFlags of the mapping of /proc/self/smaps that holds `address`.
static std::string mappingFlags(const void *address) {
  std::ifstream smaps("/proc/self/smaps");
  auto at = reinterpret_cast<uintptr_t>(address);
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    unsigned long long first, last;
    if (std::sscanf(line.c_str(), "%llx-%llx ", &first, &last) == 2)
      inside = first <= at && at < last;
    else if (inside && line.rfind("VmFlags:", 0) == 0)
      return line;
  }
  return "";
}

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SPMDC_TEST_ASAN 1
#endif
#endif

TEST(HeapPolicy, ReservedHeapIsAdvisedHugePages) {
  if (access("/sys/kernel/mm/transparent_hugepage/enabled", F_OK) != 0)
    GTEST_SKIP() << "this kernel has no transparent huge pages";
  spmd_keep_freed_memory();
  EXPECT_EQ(spmd_reserve_heap(uint64_t(1) << 20), 0u) << "a small heap";
  size_t bytes = size_t(128) << 20;
  EXPECT_GE(spmd_reserve_heap(bytes), bytes - (size_t(4) << 20));
#if defined(SPMDC_TEST_ASAN) || defined(__SANITIZE_ADDRESS__)
  // ASan's allocator is not glibc's heap: mallopt does not keep the
  // reserved block for the next malloc.
  GTEST_SKIP() << "the heap policy is glibc malloc's; ASan replaces it";
#endif
  // The next large block is carved from the reserved top of the heap.
  auto *block = static_cast<char *>(std::malloc(bytes / 2));
  ASSERT_NE(block, nullptr);
  std::string flags = mappingFlags(block + bytes / 4);
  EXPECT_NE(flags.find(" hg"), std::string::npos) << flags;
  std::free(block);
}

TEST(StoredTensor, StorageBeyondTheFileIsAnError) {
  std::string path = writeStorage("short", 10, {0, 10, 1});
  std::vector<double> out;
  std::string error;
  EXPECT_FALSE(readStoredBlock(transposed(path), {0, 0}, {2, 3}, out, error));
  EXPECT_NE(error.find("was it changed or truncated?"), std::string::npos)
      << error;
  std::remove(path.c_str());
}

} // namespace
