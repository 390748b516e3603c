//===- StripGraphAttributes.cpp - plain IR for MLIR's tools ---------------===//
//
// --strip-graph-attributes: once the lower stage starts, the step's
// signature has been read, and the attributes that carried it (values of
// the tg and dist dialects) would keep MLIR's own tools from reading the
// lowered program.
//
//===----------------------------------------------------------------------===//

#include "spmdc/Conversion/Passes.h"

namespace spmdc {
#define GEN_PASS_DEF_STRIPGRAPHATTRIBUTES
#include "spmdc/Conversion/Passes.h.inc"
} // namespace spmdc

using namespace mlir;

namespace {

bool isGraphAttribute(NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  return name.starts_with("tg.") || name.starts_with("dist.");
}

struct StripGraphAttributesPass
    : spmdc::impl::StripGraphAttributesBase<StripGraphAttributesPass> {
  void runOnOperation() override {
    auto kept = [](DictionaryAttr attrs) {
      SmallVector<NamedAttribute> others;
      if (attrs)
        llvm::copy_if(attrs.getValue(), std::back_inserter(others),
                      [](NamedAttribute a) { return !isGraphAttribute(a); });
      return others;
    };
    for (auto fn : getOperation().getOps<func::FuncOp>()) {
      for (unsigned i = 0; i < fn.getNumArguments(); ++i)
        fn.setArgAttrs(i, kept(fn.getArgAttrDict(i)));
      for (unsigned i = 0; i < fn.getNumResults(); ++i)
        fn.setResultAttrs(i, kept(fn.getResultAttrDict(i)));
    }
  }
};

} // namespace
