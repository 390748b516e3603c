//===- Passes.h - sharding passes -------------------------------*- C++ -*-===//

#ifndef SPMDC_DIALECT_DIST_TRANSFORMS_PASSES_H
#define SPMDC_DIALECT_DIST_TRANSFORMS_PASSES_H

#include "spmdc/Dialect/Dist/IR/Dist.h"
#include "spmdc/Dialect/Dist/Transforms/PassOptions.h"
#include "spmdc/Dialect/TensorGraph/IR/TensorGraph.h"
#include "spmdc/Sharding/ShardSpec.h"

#include "mlir/Pass/Pass.h"

namespace llvm::cl {
/// Reads --dist-fsdp-group's `by`: layer, tensor or a bucket size in MiB.
template <>
class parser<spmdc::dist::FsdpGroup>
    : public basic_parser<spmdc::dist::FsdpGroup> {
public:
  parser(Option &option) : basic_parser(option) {}

  bool parse(Option &option, StringRef, StringRef arg,
             spmdc::dist::FsdpGroup &value) {
    std::optional<spmdc::dist::FsdpGroup> parsed =
        spmdc::dist::FsdpGroup::parse(arg);
    if (!parsed)
      return option.error(Twine("takes ") + spmdc::dist::kFsdpGroupExpected +
                          ", got '" + arg + "'");
    value = *parsed;
    return false;
  }
  StringRef getValueName() const override { return "layer|tensor|MiB"; }
  void printOptionDiff(const Option &option,
                       const spmdc::dist::FsdpGroup &value, OptVal,
                       size_t width) const {
    printOptionName(option, width);
    outs() << "= " << value.str() << "\n";
  }
  static void print(raw_ostream &os, const spmdc::dist::FsdpGroup &value) {
    os << value.str();
  }
};
} // namespace llvm::cl

namespace spmdc::dist {

#define GEN_PASS_DECL
#include "spmdc/Dialect/Dist/Transforms/Passes.h.inc"

/// --dist-apply-spec with an already parsed spec (the driver's way).
std::unique_ptr<mlir::Pass> createDistApplySpec(ShardSpec spec);

/// The shard stage: apply the spec, propagate, and (unless `partition` is
/// false: --emit=propagate) partition, group ZeRO-3's parameter
/// collectives and put the others' gradient collectives in buckets of
/// `bucketMiB` (0: none). Reduce-scatters and all-gathers of `aloneMiB` or
/// more stay out of both (0: none does): a rank-major buffer copies every
/// byte in and out, which the host's memory pays for and a GPU's barely.
void addShardPasses(mlir::OpPassManager &pm, ShardSpec spec,
                    bool partition = true,
                    FsdpGroup fsdpGroup = FsdpGroup::layer(),
                    double bucketMiB = kDefaultBucketMiB,
                    double aloneMiB = kDefaultAloneMiB);

#define GEN_PASS_REGISTRATION
#include "spmdc/Dialect/Dist/Transforms/Passes.h.inc"

} // namespace spmdc::dist

#endif // SPMDC_DIALECT_DIST_TRANSFORMS_PASSES_H
