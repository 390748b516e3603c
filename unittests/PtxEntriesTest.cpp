//===- PtxEntriesTest.cpp - tests of the PTX entry parser -----------------===//
//
// ptxEntries must find every .entry of a module with each parameter's size
// and pointer-ness, as the runtime's profile and the fake driver rely on.
//
//===----------------------------------------------------------------------===//

#include "spmdc/Runtime/PtxEntries.h"

#include <gtest/gtest.h>

namespace {

TEST(PtxEntries, KernelsAndTheirParameters) {
  const char *ptx = R"(//
.version 8.0
.target sm_90
.address_size 64

.visible .entry backward_kernel_7(
	.param .u64 backward_kernel_7_param_0,
	.param .f32 backward_kernel_7_param_1,
	.param .u64 .ptr .align 1 backward_kernel_7_param_2,
	.param .u32 backward_kernel_7_param_3
)
{
	ret;
}

.visible .entry other()
{
	ret;
}
)";
  auto entries = spmdc::rt::ptxEntries(ptx);
  ASSERT_EQ(entries.size(), 2u);
  const auto &params = entries.at("backward_kernel_7");
  ASSERT_EQ(params.size(), 4u);
  EXPECT_EQ(params[0].bytes, 8u);
  EXPECT_FALSE(params[0].pointer);
  EXPECT_EQ(params[1].bytes, 4u);
  EXPECT_FALSE(params[1].pointer);
  EXPECT_EQ(params[2].bytes, 8u);
  EXPECT_TRUE(params[2].pointer);
  EXPECT_EQ(params[3].bytes, 4u);
  EXPECT_FALSE(params[3].pointer);
  EXPECT_TRUE(entries.at("other").empty());
}

TEST(PtxEntries, NoEntriesOrMalformed) {
  EXPECT_TRUE(spmdc::rt::ptxEntries("// nothing here").empty());
  EXPECT_TRUE(
      spmdc::rt::ptxEntries(".visible .entry broken(.param .u64 x").empty());
}

} // namespace
