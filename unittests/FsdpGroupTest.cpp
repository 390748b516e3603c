//===- FsdpGroupTest.cpp - --fsdp-group's values --------------------------===//
//
// FsdpGroup::parse and str() (PassOptions.h), which spmdc's --fsdp-group and
// --dist-fsdp-group's `by` both read: layer, tensor or a bucket size in MiB.
//
//===----------------------------------------------------------------------===//

#include "spmdc/Dialect/Dist/Transforms/PassOptions.h"

#include <gtest/gtest.h>

using spmdc::dist::FsdpGroup;

namespace {

TEST(FsdpGroup, ReadsThePoliciesAndSizes) {
  EXPECT_EQ(FsdpGroup::parse("layer"), FsdpGroup::layer());
  EXPECT_EQ(FsdpGroup::parse("tensor"), FsdpGroup::tensor());
  EXPECT_EQ(FsdpGroup::parse("25"), FsdpGroup::size(25));
  EXPECT_EQ(FsdpGroup::parse("0.5"), FsdpGroup::size(0.5));
  EXPECT_EQ(FsdpGroup::parse("1e-3"), FsdpGroup::size(0.001));
  EXPECT_EQ(FsdpGroup{}, FsdpGroup::layer());
}

TEST(FsdpGroup, RefusesWhatIsNotAPositiveSize) {
  for (const char *bad : {"", "0", "0.0", "-25", "-0.5", "12x", "x12", " 25",
                          "25 ", "+25", "inf", "nan", "Layer", "block"})
    EXPECT_FALSE(FsdpGroup::parse(bad)) << "'" << bad << "'";
}

TEST(FsdpGroup, PrintsWhatItReads) {
  for (const char *text : {"layer", "tensor", "25", "0.5", "0.0001220703125"})
    EXPECT_EQ(FsdpGroup::parse(text)->str(), text);
  EXPECT_EQ(FsdpGroup::size(1.0 / 3).str(), "0.3333333333333333");
}

} // namespace
