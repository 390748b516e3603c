//===- StoredTensorTest.cpp - tests of tensors read in place --------------===//
//
// A strided view of storage inside a larger file: blocks of it read right,
// its bytes stream into a safetensors section that SafeTensorsReader reads
// at an offset of another file, and storage beyond the file is an error.
//
//===----------------------------------------------------------------------===//

#include "spmdc/Runtime/StoredTensor.h"

#include <gtest/gtest.h>

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
