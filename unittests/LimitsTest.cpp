//===- LimitsTest.cpp - the readers' limits and whole-file writes ---------===//
//
// Limits.h (byte counts, tensor sizes, JSON depth) and AtomicFile.h (a
// failed or abandoned write leaves the previous file and no temporary one).
//
//===----------------------------------------------------------------------===//

#include "spmdc/Runtime/AtomicFile.h"
#include "spmdc/Runtime/Limits.h"
#include "spmdc/Runtime/SafeTensors.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include <dirent.h>
#include <unistd.h>

using namespace spmdc::rt;

namespace {

std::string readBytes(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

/// The names in `dir` that start with `prefix`.
std::vector<std::string> filesStartingWith(const std::string &dir,
                                           const std::string &prefix) {
  std::vector<std::string> names;
  if (DIR *d = opendir(dir.c_str())) {
    while (dirent *e = readdir(d))
      if (std::string(e->d_name).rfind(prefix, 0) == 0)
        names.push_back(e->d_name);
    closedir(d);
  }
  return names;
}

/// Restores the default limit when a test ends.
struct LimitGuard {
  ~LimitGuard() { setMaxTensorBytes(kDefaultMaxTensorBytes); }
};

TEST(Limits, ParsesByteCounts) {
  EXPECT_EQ(parseByteCount("0"), 0u);
  EXPECT_EQ(parseByteCount("1048576"), 1048576u);
  EXPECT_EQ(parseByteCount("1K"), 1024u);
  EXPECT_EQ(parseByteCount("16G"), uint64_t(16) << 30);
  EXPECT_EQ(parseByteCount("2GiB"), uint64_t(2) << 30);
  EXPECT_EQ(parseByteCount("3mb"), uint64_t(3) << 20);
  EXPECT_EQ(parseByteCount("1T"), uint64_t(1) << 40);
  EXPECT_FALSE(parseByteCount(""));
  EXPECT_FALSE(parseByteCount("-1"));
  EXPECT_FALSE(parseByteCount("1X"));
  EXPECT_FALSE(parseByteCount("G"));
  EXPECT_FALSE(parseByteCount("99999999999999999999"));
  EXPECT_FALSE(parseByteCount("9000000T"));
}

TEST(Limits, FormatsBytes) {
  EXPECT_EQ(formatBytes(12), "12 bytes");
  EXPECT_EQ(formatBytes(1024), "1 KiB");
  EXPECT_EQ(formatBytes(uint64_t(16) << 30), "16 GiB");
}

TEST(Limits, ChecksTensorSizes) {
  LimitGuard guard;
  uint64_t bytes = 0;
  std::string error;
  EXPECT_TRUE(checkTensorSize({2, 3}, 4, bytes, error));
  EXPECT_EQ(bytes, 24u);
  EXPECT_TRUE(checkTensorSize({}, 8, bytes, error));
  EXPECT_EQ(bytes, 8u);
  EXPECT_FALSE(checkTensorSize({2, -1}, 4, bytes, error));
  EXPECT_NE(error.find("negative dimension"), std::string::npos) << error;
  EXPECT_FALSE(checkTensorSize({int64_t(1) << 32, int64_t(1) << 32}, 4, bytes,
                               error));
  EXPECT_NE(error.find("more elements than a 64-bit count holds"),
            std::string::npos)
      << error;
  EXPECT_FALSE(checkTensorSize({int64_t(1) << 62}, 4, bytes, error));
  EXPECT_NE(error.find("more bytes than a 64-bit count holds"),
            std::string::npos)
      << error;
  // A zero dim makes any shape empty, however large the others.
  EXPECT_TRUE(checkTensorSize({0, int64_t(1) << 62}, 8, bytes, error));
  EXPECT_EQ(bytes, 0u);
  setMaxTensorBytes(1024);
  EXPECT_TRUE(checkTensorSize({256}, 4, bytes, error));
  EXPECT_FALSE(checkTensorSize({257}, 4, bytes, error));
  EXPECT_EQ(error, "shape [257] of 4-byte elements is 1.004 KiB, more than "
                   "--max-tensor-bytes (1 KiB)");
}

TEST(Limits, FindsJsonNestedTooDeep) {
  std::string shallow = "{\"a\": [[1], {\"b\": [2]}]}";
  EXPECT_EQ(findJsonDepthExcess(shallow.data(), shallow.size(), 4),
            std::string::npos);
  EXPECT_EQ(findJsonDepthExcess(shallow.data(), shallow.size(), 3), 18u);
  EXPECT_EQ(findJsonDepthExcess(shallow.data(), shallow.size(), 2), 7u);
  // Brackets inside strings, escaped quotes included, do not count.
  std::string quoted = "[\"[[[\\\"[[\"]";
  EXPECT_EQ(findJsonDepthExcess(quoted.data(), quoted.size(), 1),
            std::string::npos);
  std::string deep(100000, '[');
  EXPECT_EQ(findJsonDepthExcess(deep.data(), deep.size()), kMaxJsonDepth);
}

TEST(Limits, SafeTensorsReaderRefusesTensorsOverTheLimit) {
  LimitGuard guard;
  std::string path = ::testing::TempDir() + "spmdc_limits_" +
                     std::to_string(getpid()) + ".safetensors";
  std::string error;
  ASSERT_TRUE(writeSafeTensors(
      path, {{"w", DType::F32, {300}, std::vector<double>(300, 1.0)}}, error))
      << error;
  EXPECT_TRUE(SafeTensorsReader::open(path, error)) << error;
  setMaxTensorBytes(1024);
  EXPECT_FALSE(SafeTensorsReader::open(path, error));
  EXPECT_NE(error.find("tensor 'w': shape [300] of 4-byte elements is 1.172 "
                       "KiB, more than --max-tensor-bytes (1 KiB)"),
            std::string::npos)
      << error;
  std::remove(path.c_str());
}

TEST(AtomicFile, ReplacesTheFileOnlyWhenCommitted) {
  std::string dir = ::testing::TempDir();
  std::string name = "spmdc_atomic_" + std::to_string(getpid());
  std::string path = dir + name;
  {
    std::ofstream(path) << "old";
  }
  std::string error;
  {
    AtomicFile file;
    ASSERT_TRUE(file.open(path, error)) << error;
    ASSERT_TRUE(file.write("new", 3, error)) << error;
    // Abandoned before commit: as a crash or a failed write would.
  }
  EXPECT_EQ(readBytes(path), "old");
  EXPECT_EQ(filesStartingWith(dir, name).size(), 1u);
  {
    AtomicFile file;
    ASSERT_TRUE(file.open(path, error)) << error;
    EXPECT_NE(file.temporaryPath(), "");
    ASSERT_TRUE(file.write("new", 3, error)) << error;
    ASSERT_TRUE(file.commit(error)) << error;
  }
  EXPECT_EQ(readBytes(path), "new");
  EXPECT_EQ(filesStartingWith(dir, name).size(), 1u);
  std::remove(path.c_str());
}

TEST(AtomicFile, ReportsWhereItCannotCreate) {
  AtomicFile file;
  std::string error;
  EXPECT_FALSE(file.open("/nonexistent-dir/x.safetensors", error));
  EXPECT_EQ(error, "/nonexistent-dir/x.safetensors: cannot create a temporary "
                   "file beside it: No such file or directory");
}

TEST(AtomicFile, WritesDevicesInPlace) {
  AtomicFile file;
  std::string error;
  ASSERT_TRUE(file.open("/dev/null", error)) << error;
  EXPECT_EQ(file.temporaryPath(), "");
  EXPECT_TRUE(file.write("x", 1, error)) << error;
  EXPECT_TRUE(file.commit(error)) << error;
}

TEST(AtomicFile, FullDeviceFailsWithoutReplacing) {
  // /dev/full: every write fails with ENOSPC.
  AtomicFile file;
  std::string error;
  ASSERT_TRUE(file.open("/dev/full", error)) << error;
  EXPECT_FALSE(file.write("x", 1, error));
  EXPECT_EQ(error, "/dev/full: write failed: No space left on device");
}

} // namespace
