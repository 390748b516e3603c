//===- SafeTensorsTest.cpp - tests of the safetensors reader and writer ---===//
//
// Round trips of every dtype, the rounding of the narrow float types, slice
// reads, and one test per kind of malformed file, each checking that the
// error names what is wrong.
//
//===----------------------------------------------------------------------===//

#include "spmdc/Runtime/SafeTensors.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <unistd.h>

using namespace spmdc::rt;

namespace {

/// Passes when `text` contains `part`; gmock's HasSubstr without gmock.
::testing::AssertionResult containsText(const char *textExpr, const char *,
                                        const std::string &text,
                                        const std::string &part) {
  if (text.find(part) != std::string::npos)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << textExpr << " is \"" << text << "\"\n  which does not contain \""
         << part << "\"";
}
#define EXPECT_CONTAINS(text, part)                                            \
  EXPECT_PRED_FORMAT2(containsText, text, part)

/// A file path in the test temp directory, unique to this process, removed
/// when the object dies.
struct TempFile {
  std::string path;
  explicit TempFile(const std::string &name)
      : path(::testing::TempDir() + "spmdc_st_" + std::to_string(getpid()) +
             "_" + name) {}
  ~TempFile() { std::remove(path.c_str()); }
};

void writeBytes(const std::string &path, const std::string &bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string readBytes(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

std::string u64le(uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i)
    s[i] = static_cast<char>(v >> (8 * i));
  return s;
}

/// A safetensors file with `header` as its JSON text and `dataBytes` zero
/// bytes of data.
void writeRawFile(const std::string &path, const std::string &header,
                  size_t dataBytes) {
  writeBytes(path,
             u64le(header.size()) + header + std::string(dataBytes, '\0'));
}

/// Opens `path`, expecting failure, and returns the error.
std::string openError(const std::string &path) {
  std::string error;
  auto reader = SafeTensorsReader::open(path, error);
  EXPECT_EQ(reader, nullptr);
  EXPECT_CONTAINS(error, path + ": ");
  return error;
}

std::unique_ptr<SafeTensorsReader> openOrFail(const std::string &path) {
  std::string error;
  auto reader = SafeTensorsReader::open(path, error);
  EXPECT_NE(reader, nullptr) << error;
  return reader;
}

} // namespace

TEST(SafeTensors, DTypeHelpers) {
  EXPECT_EQ(dtypeSize(DType::F64), 8u);
  EXPECT_EQ(dtypeSize(DType::BF16), 2u);
  EXPECT_EQ(dtypeSize(DType::Bool), 1u);
  for (DType d : {DType::F64, DType::F32, DType::F16, DType::BF16, DType::I64,
                  DType::I32, DType::Bool})
    EXPECT_EQ(parseDType(dtypeName(d)), d);
  EXPECT_STREQ(dtypeName(DType::Bool), "BOOL");
  EXPECT_EQ(parseDType("U8"), std::nullopt);
  EXPECT_EQ(parseDType("f32"), std::nullopt);
}

TEST(SafeTensors, RoundTripEveryDType) {
  TempFile file("roundtrip.safetensors");
  std::vector<NamedTensor> tensors = {
      {"f64", DType::F64, {2, 3}, {0.1, -2.5, 1e300, -1e-300, 0, 7}},
      {"f32", DType::F32, {3}, {0.5, -1.25, 0x1p127}},
      {"f16", DType::F16, {2, 2}, {1.5, -0.125, 65504, 6.103515625e-05}},
      {"bf16", DType::BF16, {2}, {-3.0, 1.0078125}},
      {"i64", DType::I64, {2}, {-9007199254740992.0, 42}},
      {"i32", DType::I32, {3}, {-2147483648.0, 2147483647.0, 0}},
      {"bool", DType::Bool, {2, 1}, {1, 0}},
      {"scalar", DType::F32, {}, {4.0}},
      {"empty", DType::F16, {0, 3}, {}},
  };
  std::string error;
  ASSERT_TRUE(writeSafeTensors(file.path, tensors, error)) << error;

  auto reader = openOrFail(file.path);
  ASSERT_NE(reader, nullptr);
  ASSERT_EQ(reader->tensors().size(), tensors.size());
  // tensors() is sorted by name.
  for (size_t i = 1; i < reader->tensors().size(); ++i)
    EXPECT_LT(reader->tensors()[i - 1].name, reader->tensors()[i].name);
  EXPECT_TRUE(reader->metadata().empty());
  EXPECT_EQ(reader->find("missing"), nullptr);
  for (const NamedTensor &t : tensors) {
    const TensorInfo *info = reader->find(t.name);
    ASSERT_NE(info, nullptr) << t.name;
    EXPECT_EQ(info->dtype, t.dtype) << t.name;
    EXPECT_EQ(info->shape, t.shape) << t.name;
    EXPECT_EQ(info->dataEnd - info->dataBegin,
              t.values.size() * dtypeSize(t.dtype));
    std::vector<double> values;
    ASSERT_TRUE(reader->readAsDouble(t.name, values, error)) << error;
    EXPECT_EQ(values, t.values) << t.name;
  }
}

TEST(SafeTensors, LayoutFollowsTheReferenceImplementation) {
  TempFile file("layout.safetensors");
  std::string error;
  ASSERT_TRUE(writeSafeTensors(file.path,
                               {{"b", DType::F16, {3}, {1, 2, 3}},
                                {"a", DType::Bool, {1}, {1}},
                                {"c", DType::F64, {1}, {1}},
                                {"d", DType::I32, {1}, {1}}},
                               error, {{"format", "pt"}}))
      << error;
  std::string bytes = readBytes(file.path);
  ASSERT_GE(bytes.size(), 8u);
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i)
    n |= uint64_t(static_cast<unsigned char>(bytes[i])) << (8 * i);
  // The header is padded with spaces so that the data starts 8-aligned.
  EXPECT_EQ(n % 8, 0u);
  std::string header = bytes.substr(8, n);
  EXPECT_EQ(header.find_first_of('\0'), std::string::npos);
  size_t last = header.find_last_not_of(' ');
  EXPECT_EQ(header[last], '}');
  EXPECT_LT(header.size() - last - 1, 8u);
  // Keys appear in sorted order.
  EXPECT_LT(header.find("\"__metadata__\""), header.find("\"a\""));
  EXPECT_LT(header.find("\"a\""), header.find("\"b\""));
  EXPECT_LT(header.find("\"b\""), header.find("\"c\""));
  EXPECT_LT(header.find("\"c\""), header.find("\"d\""));

  // Data: widest first, contiguous, each tensor naturally aligned.
  auto j = nlohmann::json::parse(header);
  EXPECT_EQ(j["c"]["data_offsets"], nlohmann::json({0, 8}));
  EXPECT_EQ(j["d"]["data_offsets"], nlohmann::json({8, 12}));
  EXPECT_EQ(j["b"]["data_offsets"], nlohmann::json({12, 18}));
  EXPECT_EQ(j["a"]["data_offsets"], nlohmann::json({18, 19}));
  EXPECT_EQ(bytes.size(), 8 + n + 19);

  auto reader = openOrFail(file.path);
  ASSERT_NE(reader, nullptr);
  EXPECT_EQ(reader->metadata(),
            (std::map<std::string, std::string>{{"format", "pt"}}));
}

TEST(SafeTensors, NarrowFloatRoundingOfOneThird) {
  double third = 1.0 / 3.0;
  // f16: 1.0101010101|0101... x 2^-2 rounds down to 1365 / 4096.
  EXPECT_EQ(roundToDType(third, DType::F16), 1365.0 / 4096.0);
  // bf16: 1.0101010|1010... x 2^-2 rounds up to 171 / 512.
  EXPECT_EQ(roundToDType(third, DType::BF16), 171.0 / 512.0);
  EXPECT_EQ(roundToDType(third, DType::F32),
            static_cast<double>(static_cast<float>(third)));

  // The stored bits are the IEEE encodings, little-endian.
  TempFile file("third.safetensors");
  std::string error;
  ASSERT_TRUE(writeSafeTensors(
      file.path,
      {{"h", DType::F16, {1}, {third}}, {"b", DType::BF16, {1}, {third}}},
      error))
      << error;
  std::string bytes = readBytes(file.path);
  // Both are 2 bytes wide, so data is ordered by name: b, then h.
  std::string data = bytes.substr(bytes.size() - 4);
  EXPECT_EQ(static_cast<unsigned char>(data[0]), 0xAB);
  EXPECT_EQ(static_cast<unsigned char>(data[1]), 0x3E);
  EXPECT_EQ(static_cast<unsigned char>(data[2]), 0x55);
  EXPECT_EQ(static_cast<unsigned char>(data[3]), 0x35);

  auto reader = openOrFail(file.path);
  ASSERT_NE(reader, nullptr);
  std::vector<double> v;
  ASSERT_TRUE(reader->readAsDouble("h", v, error)) << error;
  EXPECT_EQ(v, std::vector<double>{1365.0 / 4096.0});
  ASSERT_TRUE(reader->readAsDouble("b", v, error)) << error;
  EXPECT_EQ(v, std::vector<double>{171.0 / 512.0});
}

TEST(SafeTensors, NarrowFloatTiesAndEdges) {
  double inf = std::numeric_limits<double>::infinity();
  // Ties go to even.
  EXPECT_EQ(roundToDType(1 + std::ldexp(1, -11), DType::F16), 1.0);
  EXPECT_EQ(roundToDType(1 + 3 * std::ldexp(1, -11), DType::F16),
            1 + std::ldexp(1, -9));
  EXPECT_EQ(roundToDType(1 + std::ldexp(1, -8), DType::BF16), 1.0);
  // Just above a bf16 tie: rounding through f32 first would make it a tie
  // and round down; rounding directly from the double rounds up.
  EXPECT_EQ(
      roundToDType(1 + std::ldexp(1, -8) + std::ldexp(1, -40), DType::BF16),
      1 + std::ldexp(1, -7));
  // Overflow: 65520 is the tie between 65504 and 65536 (= inf in f16).
  EXPECT_EQ(roundToDType(65519, DType::F16), 65504);
  EXPECT_EQ(roundToDType(65520, DType::F16), inf);
  EXPECT_EQ(roundToDType(-1e10, DType::F16), -inf);
  EXPECT_EQ(roundToDType(1e300, DType::BF16), inf);
  EXPECT_EQ(roundToDType(1e300, DType::F32), inf);
  EXPECT_EQ(roundToDType(inf, DType::F16), inf);
  // Subnormals.
  EXPECT_EQ(roundToDType(std::ldexp(1, -24), DType::F16), std::ldexp(1, -24));
  EXPECT_EQ(roundToDType(std::ldexp(1, -25), DType::F16), 0.0);
  EXPECT_EQ(roundToDType(std::ldexp(3, -26), DType::F16), std::ldexp(1, -24));
  EXPECT_EQ(roundToDType(std::ldexp(1, -133), DType::BF16),
            std::ldexp(1, -133));
  // Rounding up out of the subnormals gives the smallest normal.
  EXPECT_EQ(roundToDType(std::ldexp(1, -14) - std::ldexp(1, -30), DType::F16),
            std::ldexp(1, -14));
  // Sign of zero and NaN survive.
  EXPECT_TRUE(std::signbit(roundToDType(-0.0, DType::F16)));
  EXPECT_TRUE(std::signbit(roundToDType(-1e-30, DType::F16)));
  EXPECT_TRUE(std::isnan(roundToDType(std::nan(""), DType::F16)));
  EXPECT_TRUE(std::isnan(roundToDType(std::nan(""), DType::BF16)));
}

TEST(SafeTensors, IntegerAndBoolConversions) {
  EXPECT_EQ(roundToDType(2.9, DType::I32), 2);
  EXPECT_EQ(roundToDType(-2.9, DType::I32), -2);
  EXPECT_EQ(roundToDType(-2.9, DType::I64), -2);
  EXPECT_EQ(roundToDType(0.5, DType::Bool), 1);
  EXPECT_EQ(roundToDType(-3, DType::Bool), 1);
  EXPECT_EQ(roundToDType(0, DType::Bool), 0);

  TempFile file("ints.safetensors");
  std::string error;
  EXPECT_FALSE(writeSafeTensors(
      file.path, {{"labels", DType::I32, {2}, {1, std::nan("")}}}, error));
  EXPECT_CONTAINS(error, "tensor 'labels'");
  EXPECT_CONTAINS(error, "element 1");
  EXPECT_CONTAINS(error, "not representable as I32");
  EXPECT_FALSE(
      writeSafeTensors(file.path, {{"x", DType::I32, {1}, {3e9}}}, error));
  EXPECT_CONTAINS(error, "not representable as I32");
  // Nothing is written when validation fails.
  EXPECT_FALSE(std::ifstream(file.path).good());
}

TEST(SafeTensors, SliceOfA3DTensorMatchesTheFullRead) {
  TempFile file("slice.safetensors");
  const std::vector<int64_t> shape = {4, 5, 6};
  std::vector<double> values(4 * 5 * 6);
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = static_cast<double>(i) - 7;
  std::string error;
  ASSERT_TRUE(writeSafeTensors(file.path,
                               {{"t", DType::F32, shape, values},
                                {"h", DType::F16, shape, values},
                                {"s", DType::F64, {}, {2.5}}},
                               error))
      << error;
  auto reader = openOrFail(file.path);
  ASSERT_NE(reader, nullptr);
  std::vector<double> full;
  ASSERT_TRUE(reader->readAsDouble("t", full, error)) << error;
  ASSERT_EQ(full, values);

  struct Block {
    std::vector<int64_t> offsets, sizes;
  };
  std::vector<Block> blocks = {
      {{0, 0, 0}, {4, 5, 6}}, // Whole tensor: one run.
      {{1, 0, 0}, {2, 5, 6}}, // Leading-dim shard: one run.
      {{0, 2, 0}, {4, 2, 6}}, // Middle-dim shard: one run per row.
      {{0, 0, 3}, {4, 5, 3}}, // Last-dim shard: one run per (i, j).
      {{1, 2, 1}, {2, 3, 4}}, // Interior block.
      {{3, 4, 5}, {1, 1, 1}}, // Single element.
      {{2, 1, 0}, {0, 3, 6}}, // Empty.
  };
  for (const char *name : {"t", "h"}) {
    for (const Block &b : blocks) {
      std::vector<double> expected;
      for (int64_t i = 0; i < b.sizes[0]; ++i)
        for (int64_t j = 0; j < b.sizes[1]; ++j)
          for (int64_t k = 0; k < b.sizes[2]; ++k)
            expected.push_back(
                full[((b.offsets[0] + i) * 5 + (b.offsets[1] + j)) * 6 +
                     (b.offsets[2] + k)]);
      std::vector<double> got = {123}; // Must be replaced, not appended to.
      ASSERT_TRUE(
          reader->readSliceAsDouble(name, b.offsets, b.sizes, got, error))
          << error;
      EXPECT_EQ(got, expected)
          << name << " at offsets " << ::testing::PrintToString(b.offsets)
          << " sizes " << ::testing::PrintToString(b.sizes);
    }
  }
  std::vector<double> scalar;
  ASSERT_TRUE(reader->readSliceAsDouble("s", {}, {}, scalar, error)) << error;
  EXPECT_EQ(scalar, std::vector<double>{2.5});
}

TEST(SafeTensors, SliceRejectsBadArguments) {
  TempFile file("badslice.safetensors");
  std::string error;
  ASSERT_TRUE(writeSafeTensors(
      file.path, {{"w", DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6}}}, error))
      << error;
  auto reader = openOrFail(file.path);
  ASSERT_NE(reader, nullptr);
  std::vector<double> out;
  EXPECT_FALSE(reader->readSliceAsDouble("w", {0}, {1}, out, error));
  EXPECT_CONTAINS(error, "tensor 'w'");
  EXPECT_CONTAINS(error, "rank 2");
  EXPECT_FALSE(reader->readSliceAsDouble("w", {1, 1}, {2, 1}, out, error));
  EXPECT_CONTAINS(error, "dimension 0");
  EXPECT_FALSE(reader->readSliceAsDouble("w", {0, -1}, {1, 1}, out, error));
  EXPECT_CONTAINS(error, "dimension 1");
  EXPECT_FALSE(reader->readSliceAsDouble("nope", {0}, {1}, out, error));
  EXPECT_CONTAINS(error, "no tensor 'nope'");
  EXPECT_FALSE(reader->readAsDouble("nope", out, error));
  EXPECT_CONTAINS(error, "no tensor 'nope'");
}

TEST(SafeTensors, ReadOfAFileTruncatedAfterOpenFails) {
  TempFile file("truncated.safetensors");
  std::string error;
  ASSERT_TRUE(writeSafeTensors(file.path,
                               {{"w", DType::F64, {4}, {1, 2, 3, 4}}}, error))
      << error;
  auto reader = openOrFail(file.path);
  ASSERT_NE(reader, nullptr);
  std::string bytes = readBytes(file.path);
  writeBytes(file.path, bytes.substr(0, bytes.size() - 8));
  std::vector<double> out;
  EXPECT_FALSE(reader->readAsDouble("w", out, error));
  EXPECT_CONTAINS(error, "tensor 'w'");
  EXPECT_CONTAINS(error, "truncated");
}

//===----------------------------------------------------------------------===//
// Malformed files: one test per defect.
//===----------------------------------------------------------------------===//

TEST(SafeTensorsMalformed, MissingFile) {
  std::string path = ::testing::TempDir() + "spmdc_st_no_such_dir/x.st";
  EXPECT_CONTAINS(openError(path), "cannot open");
}

TEST(SafeTensorsMalformed, ShorterThanTheLengthField) {
  TempFile file("short.safetensors");
  writeBytes(file.path, std::string("\x05\0\0\0\0", 5));
  std::string error = openError(file.path);
  EXPECT_CONTAINS(error, "file is 5 bytes");
  EXPECT_CONTAINS(error, "8-byte header length");
}

TEST(SafeTensorsMalformed, EmptyFile) {
  TempFile file("empty.safetensors");
  writeBytes(file.path, "");
  EXPECT_CONTAINS(openError(file.path), "file is 0 bytes");
}

TEST(SafeTensorsMalformed, HeaderLengthBeyondTheFile) {
  TempFile file("longheader.safetensors");
  writeBytes(file.path, u64le(1000) + "{}");
  EXPECT_CONTAINS(openError(file.path),
                  "header length 1000 exceeds the 2 bytes");
  // A length near 2^64 must not overflow the check.
  writeBytes(file.path, u64le(~uint64_t(0)) + "{}");
  EXPECT_CONTAINS(openError(file.path), "header length");
}

TEST(SafeTensorsMalformed, HeaderNotJSON) {
  TempFile file("notjson.safetensors");
  writeRawFile(file.path, "{\"a\": {\"dtype\": ", 0);
  EXPECT_CONTAINS(openError(file.path), "header is not valid JSON");
}

TEST(SafeTensorsMalformed, HeaderNotAnObject) {
  TempFile file("array.safetensors");
  writeRawFile(file.path, "[1, 2]", 0);
  std::string error = openError(file.path);
  EXPECT_CONTAINS(error, "header is not a JSON object");
  EXPECT_CONTAINS(error, "array");
}

TEST(SafeTensorsMalformed, EntryNotAnObject) {
  TempFile file("entry.safetensors");
  writeRawFile(file.path, R"({"w": 3})", 0);
  std::string error = openError(file.path);
  EXPECT_CONTAINS(error, "tensor 'w'");
  EXPECT_CONTAINS(error, "not a JSON object");
}

TEST(SafeTensorsMalformed, UnknownDType) {
  TempFile file("dtype.safetensors");
  writeRawFile(file.path,
               R"({"w": {"dtype": "F8_E4M3", "shape": [2],)"
               R"( "data_offsets": [0, 2]}})",
               2);
  std::string error = openError(file.path);
  EXPECT_CONTAINS(error, "tensor 'w'");
  EXPECT_CONTAINS(error, "unsupported dtype 'F8_E4M3'");
}

TEST(SafeTensorsMalformed, MissingDType) {
  TempFile file("nodtype.safetensors");
  writeRawFile(file.path, R"({"w": {"shape": [2], "data_offsets": [0, 8]}})",
               8);
  EXPECT_CONTAINS(openError(file.path), "tensor 'w': missing");
}

TEST(SafeTensorsMalformed, NegativeDimension) {
  TempFile file("negdim.safetensors");
  writeRawFile(file.path,
               R"({"w": {"dtype": "F32", "shape": [2, -3],)"
               R"( "data_offsets": [0, 0]}})",
               0);
  std::string error = openError(file.path);
  EXPECT_CONTAINS(error, "tensor 'w'");
  EXPECT_CONTAINS(error, "shape [2, -3] has a negative dimension");
}

TEST(SafeTensorsMalformed, NonIntegerShape) {
  TempFile file("floatdim.safetensors");
  writeRawFile(file.path,
               R"({"w": {"dtype": "F32", "shape": [2.5],)"
               R"( "data_offsets": [0, 8]}})",
               8);
  EXPECT_CONTAINS(openError(file.path), "not a list of 64-bit integers");
}

TEST(SafeTensorsMalformed, DataOffsetsDoNotMatchTheShape) {
  TempFile file("params.safetensors");
  writeRawFile(file.path,
               R"({"fc1.weight": {"dtype": "F32", "shape": [2, 4],)"
               R"( "data_offsets": [0, 12]}})",
               32);
  EXPECT_EQ(openError(file.path),
            file.path + ": tensor 'fc1.weight': data_offsets [0, 12] hold 12 "
                        "bytes but shape [2, 4] of F32 needs 32");
}

TEST(SafeTensorsMalformed, DataOffsetsReversed) {
  TempFile file("reversed.safetensors");
  writeRawFile(file.path,
               R"({"w": {"dtype": "F32", "shape": [1],)"
               R"( "data_offsets": [8, 4]}})",
               8);
  EXPECT_CONTAINS(openError(file.path),
                  "tensor 'w': data_offsets [8, 4] end before");
}

TEST(SafeTensorsMalformed, DataOffsetsNotTwoIntegers) {
  TempFile file("offsets.safetensors");
  writeRawFile(file.path,
               R"({"w": {"dtype": "F32", "shape": [1],)"
               R"( "data_offsets": [0]}})",
               4);
  EXPECT_CONTAINS(openError(file.path),
                  "tensor 'w': 'data_offsets' must be two");
}

TEST(SafeTensorsMalformed, DataOffsetsBeyondTheFile) {
  TempFile file("beyond.safetensors");
  writeRawFile(file.path,
               R"({"w": {"dtype": "F32", "shape": [2, 4],)"
               R"( "data_offsets": [16, 48]}})",
               40);
  std::string error = openError(file.path);
  EXPECT_CONTAINS(error, "tensor 'w': data_offsets [16, 48]");
  EXPECT_CONTAINS(error, "beyond the end of the file");
  EXPECT_CONTAINS(error, "holds only 40 bytes");
}

TEST(SafeTensorsMalformed, HugeShapeOverflows) {
  TempFile file("huge.safetensors");
  writeRawFile(file.path,
               R"({"w": {"dtype": "F64", "shape": [4294967296, 4294967296],)"
               R"( "data_offsets": [0, 0]}})",
               0);
  EXPECT_CONTAINS(openError(file.path),
                  "more elements than a 64-bit count holds");
}

TEST(SafeTensorsMalformed, MetadataNotStrings) {
  TempFile file("meta.safetensors");
  writeRawFile(file.path, R"({"__metadata__": {"step": 3}})", 0);
  EXPECT_CONTAINS(openError(file.path),
                  "__metadata__ entry 'step' is not a string");
}

TEST(SafeTensorsMalformed, OverlappingTensorsAreAccepted) {
  // Overlap is not checked: both tensors read the same bytes.
  TempFile file("overlap.safetensors");
  writeRawFile(
      file.path,
      R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},)"
      R"( "b": {"dtype": "I32", "shape": [1], "data_offsets": [0, 4]}})",
      4);
  auto reader = openOrFail(file.path);
  ASSERT_NE(reader, nullptr);
  EXPECT_EQ(reader->tensors().size(), 2u);
}

//===----------------------------------------------------------------------===//
// Writer errors
//===----------------------------------------------------------------------===//

TEST(SafeTensorsWriter, RejectsBadTensors) {
  TempFile file("bad.safetensors");
  std::string error;
  EXPECT_FALSE(writeSafeTensors(
      file.path, {{"w", DType::F32, {1}, {1}}, {"w", DType::F32, {1}, {2}}},
      error));
  EXPECT_CONTAINS(error, "tensor 'w': duplicate");
  EXPECT_FALSE(
      writeSafeTensors(file.path, {{"w", DType::F32, {2, 2}, {1, 2}}}, error));
  EXPECT_CONTAINS(error, "tensor 'w': 2 values but shape [2, 2] has 4");
  EXPECT_FALSE(
      writeSafeTensors(file.path, {{"w", DType::F32, {-1}, {}}}, error));
  EXPECT_CONTAINS(error, "negative dimension");
  EXPECT_FALSE(writeSafeTensors(
      file.path, {{"__metadata__", DType::F32, {1}, {1}}}, error));
  EXPECT_CONTAINS(error, "reserved");
  EXPECT_FALSE(std::ifstream(file.path).good());
}

TEST(SafeTensorsWriter, ReportsAnUnwritablePath) {
  std::string path = ::testing::TempDir() + "spmdc_st_no_such_dir/out.st";
  std::string error;
  EXPECT_FALSE(writeSafeTensors(path, {{"w", DType::F32, {1}, {1}}}, error));
  EXPECT_CONTAINS(error, path + ": cannot create a temporary file beside it");
}

TEST(SafeTensorsWriter, EmptyFileRoundTrips) {
  TempFile file("none.safetensors");
  std::string error;
  ASSERT_TRUE(writeSafeTensors(file.path, {}, error)) << error;
  EXPECT_EQ(readBytes(file.path).size(), 16u); // Length + "{}" + 6 spaces.
  auto reader = openOrFail(file.path);
  ASSERT_NE(reader, nullptr);
  EXPECT_TRUE(reader->tensors().empty());
}
