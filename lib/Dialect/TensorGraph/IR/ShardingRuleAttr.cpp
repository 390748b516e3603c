//===- ShardingRuleAttr.cpp - a sharding rule as text and attribute -------===//
//
// #tg.sharding_rule prints a ShardingRule in Shardy's factor notation and
// parses it back:
//   ([i, k], [k, j])->([i, j]) {i=8, j=2, k=4} reduction={k} linear={0, 1}
// Factors are named i, j, ..., z, then z_1, z_2, ...; a dim spanning
// several factors lists them major first (`ij`), one spanning none is `1`.
//
//===----------------------------------------------------------------------===//

#include "spmdc/Dialect/TensorGraph/IR/TensorGraph.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;

namespace spmdc::tg {

namespace {
using Dims = SmallVector<SmallVector<int>>;

std::string factorName(int factor) {
  constexpr int kLetters = 'z' - 'i' + 1;
  if (factor < kLetters)
    return std::string(1, static_cast<char>('i' + factor));
  return "z_" + std::to_string(factor - kLetters + 1);
}

/// The factor named at the front of `text` (consumed), or -1.
int takeFactorName(StringRef &text) {
  constexpr int kLetters = 'z' - 'i' + 1;
  if (text.empty() || text.front() < 'i' || text.front() > 'z')
    return -1;
  char letter = text.front();
  text = text.drop_front();
  if (letter != 'z' || !text.starts_with("_"))
    return letter - 'i';
  StringRef digits = text.drop_front().take_while(llvm::isDigit);
  unsigned n;
  if (digits.empty() || digits.getAsInteger(10, n) || n == 0)
    return -1;
  text = text.drop_front(1 + digits.size());
  return kLetters + n - 1;
}

void printTensors(llvm::raw_ostream &os, ArrayRef<Dims> tensors) {
  os << "(";
  llvm::interleaveComma(tensors, os, [&](const Dims &dims) {
    os << "[";
    llvm::interleaveComma(dims, os, [&](const SmallVector<int> &factors) {
      if (factors.empty())
        os << "1";
      for (int f : factors)
        os << factorName(f);
    });
    os << "]";
  });
  os << ")";
}

void printSet(llvm::raw_ostream &os, StringRef name, ArrayRef<int> items,
              bool factors) {
  os << " " << name << "={";
  llvm::interleaveComma(items, os, [&](int i) {
    os << (factors ? factorName(i) : std::to_string(i));
  });
  os << "}";
}

Attribute dimsToAttr(MLIRContext *context, const Dims &dims) {
  SmallVector<Attribute> attrs;
  for (const auto &factors : dims)
    attrs.push_back(DenseI32ArrayAttr::get(
        context, SmallVector<int32_t>(factors.begin(), factors.end())));
  return ArrayAttr::get(context, attrs);
}

Dims dimsFromAttr(Attribute attr) {
  Dims dims;
  for (Attribute d : cast<ArrayAttr>(attr)) {
    ArrayRef<int32_t> factors = cast<DenseI32ArrayAttr>(d).asArrayRef();
    dims.emplace_back(factors.begin(), factors.end());
  }
  return dims;
}
} // namespace

void ShardingRule::print(llvm::raw_ostream &os) const {
  printTensors(os, operands);
  os << "->";
  printTensors(os, results);
  os << " {";
  llvm::interleaveComma(llvm::enumerate(factorSizes), os, [&](auto f) {
    os << factorName(f.index()) << "=" << f.value();
  });
  os << "}";
  SmallVector<int> reduction, replication, linear;
  for (int f = 0, e = factorSizes.size(); f < e; ++f) {
    if (isContraction(f))
      reduction.push_back(f);
    if (replicatedOnly[f])
      replication.push_back(f);
  }
  if (!reduction.empty())
    printSet(os, "reduction", reduction, true);
  if (!replication.empty())
    printSet(os, "need_replication", replication, true);
  if (partial == Partial::All)
    os << " partial=all";
  if (partial == Partial::Each) {
    for (auto [i, isLinear] : llvm::enumerate(linearIn))
      if (isLinear)
        linear.push_back(i);
    printSet(os, "linear", linear, false);
  }
  if (combine == Combine::Max)
    os << " combine=max";
  if (!indexed.empty()) {
    os << " indexed={";
    llvm::interleaveComma(indexed, os, [&](std::pair<int, int> entry) {
      os << factorName(entry.first) << "=" << entry.second;
    });
    os << "}";
  }
}

ShardingRuleAttr ShardingRule::toAttr(MLIRContext *context) const {
  SmallVector<Attribute> operandAttrs, resultAttrs;
  for (const Dims &dims : operands)
    operandAttrs.push_back(dimsToAttr(context, dims));
  for (const Dims &dims : results)
    resultAttrs.push_back(dimsToAttr(context, dims));
  SmallVector<int32_t> replication, linear;
  for (auto [f, only] : llvm::enumerate(replicatedOnly))
    if (only)
      replication.push_back(f);
  for (auto [i, isLinear] : llvm::enumerate(linearIn))
    if (isLinear && partial == Partial::Each)
      linear.push_back(i);
  SmallVector<int32_t> indexedPairs;
  for (auto [factor, operand] : indexed)
    indexedPairs.append({factor, operand});
  return ShardingRuleAttr::get(context, factorSizes,
                               ArrayAttr::get(context, operandAttrs),
                               ArrayAttr::get(context, resultAttrs),
                               replication, partial, linear, combine,
                               indexedPairs);
}

ShardingRule ShardingRule::fromAttr(ShardingRuleAttr attr) {
  ShardingRule rule;
  rule.factorSizes.assign(attr.getFactorSizes().begin(),
                          attr.getFactorSizes().end());
  rule.replicatedOnly.assign(rule.factorSizes.size(), false);
  for (int32_t f : attr.getNeedReplication())
    rule.replicatedOnly[f] = true;
  for (Attribute operand : attr.getOperands())
    rule.operands.push_back(dimsFromAttr(operand));
  rule.results.clear();
  for (Attribute result : attr.getResults())
    rule.results.push_back(dimsFromAttr(result));
  rule.partial = attr.getPartial();
  if (rule.partial == Partial::Each) {
    rule.linearIn.assign(rule.operands.size(), false);
    for (int32_t i : attr.getLinearIn())
      rule.linearIn[i] = true;
  }
  rule.combine = attr.getCombine();
  ArrayRef<int32_t> pairs = attr.getIndexed();
  for (size_t i = 0; i + 1 < pairs.size(); i += 2)
    rule.indexed.push_back({pairs[i], pairs[i + 1]});
  return rule;
}

//===----------------------------------------------------------------------===//
// The attribute's text form
//===----------------------------------------------------------------------===//

void ShardingRuleAttr::print(AsmPrinter &printer) const {
  printer << "<";
  ShardingRule::fromAttr(*this).print(printer.getStream());
  printer << ">";
}

namespace {
/// Parses `([i, k], ...)` into `tensors`, counting the factors named.
ParseResult parseTensors(AsmParser &parser, SmallVectorImpl<Dims> &tensors,
                         int &numFactors) {
  auto parseDim = [&](SmallVector<int> &factors) -> ParseResult {
    int64_t one;
    OptionalParseResult number = parser.parseOptionalInteger(one);
    if (number.has_value()) {
      if (failed(*number) || one != 1)
        return parser.emitError(parser.getCurrentLocation(),
                                "expected 1 for a dim that spans no factor");
      return success();
    }
    StringRef word;
    SMLoc loc = parser.getCurrentLocation();
    if (parser.parseKeyword(&word))
      return failure();
    while (!word.empty()) {
      int f = takeFactorName(word);
      if (f < 0)
        return parser.emitError(loc, "expected factor names (i..z, z_1, ...)");
      factors.push_back(f);
      numFactors = std::max(numFactors, f + 1);
    }
    return success();
  };
  return parser.parseCommaSeparatedList(
      AsmParser::Delimiter::Paren, [&]() -> ParseResult {
        Dims &dims = tensors.emplace_back();
        return parser.parseCommaSeparatedList(
            AsmParser::Delimiter::Square,
            [&]() { return parseDim(dims.emplace_back()); });
      });
}

/// Parses `={a, b}` of factor names (or of integers when `factors` is
/// false).
ParseResult parseSet(AsmParser &parser, int numFactors, bool factors,
                     SmallVectorImpl<int> &items) {
  if (parser.parseEqual())
    return failure();
  return parser.parseCommaSeparatedList(
      AsmParser::Delimiter::Braces, [&]() -> ParseResult {
        SMLoc loc = parser.getCurrentLocation();
        if (!factors) {
          int64_t i;
          if (parser.parseInteger(i))
            return failure();
          items.push_back(i);
          return success();
        }
        StringRef word;
        if (parser.parseKeyword(&word))
          return failure();
        int f = takeFactorName(word);
        if (f < 0 || !word.empty() || f >= numFactors)
          return parser.emitError(loc, "expected a factor of the rule");
        items.push_back(f);
        return success();
      });
}
/// Parses `f=N`: a factor name and an integer. `factor` is -1 if the name
/// is not one of the rule's `numFactors` factors.
ParseResult parseFactorIs(AsmParser &parser, int numFactors, int &factor,
                          int64_t &value) {
  StringRef word;
  if (parser.parseKeyword(&word) || parser.parseEqual() ||
      parser.parseInteger(value))
    return failure();
  factor = takeFactorName(word);
  if (!word.empty() || factor >= numFactors)
    factor = -1;
  return success();
}
} // namespace

Attribute ShardingRuleAttr::parse(AsmParser &parser, Type) {
  ShardingRule rule;
  rule.results.clear();
  int numFactors = 0;
  if (parser.parseLess() || parseTensors(parser, rule.operands, numFactors) ||
      parser.parseArrow() || parseTensors(parser, rule.results, numFactors))
    return {};
  rule.factorSizes.assign(numFactors, -1);
  rule.replicatedOnly.assign(numFactors, false);
  SMLoc sizesLoc = parser.getCurrentLocation();
  auto parseSize = [&]() -> ParseResult {
    int f;
    int64_t size;
    SMLoc loc = parser.getCurrentLocation();
    if (parseFactorIs(parser, numFactors, f, size))
      return failure();
    if (f < 0 || size < 1)
      return parser.emitError(loc, "expected factor=size for a factor of "
                                   "the rule, with a positive size");
    rule.factorSizes[f] = size;
    return success();
  };
  if (parser.parseCommaSeparatedList(AsmParser::Delimiter::Braces, parseSize))
    return {};
  if (llvm::is_contained(rule.factorSizes, -1)) {
    parser.emitError(sizesLoc, "expected a size for every factor");
    return {};
  }
  StringRef clause;
  while (succeeded(parser.parseOptionalKeyword(&clause))) {
    SMLoc loc = parser.getCurrentLocation();
    SmallVector<int> items;
    if (clause == "reduction") {
      // Derived from the results; checked.
      if (parseSet(parser, numFactors, true, items))
        return {};
      for (int f = 0; f < numFactors; ++f)
        if (rule.isContraction(f) != llvm::is_contained(items, f)) {
          parser.emitError(loc, "reduction must list exactly the factors no "
                                "result spans");
          return {};
        }
    } else if (clause == "need_replication") {
      if (parseSet(parser, numFactors, true, items))
        return {};
      for (int f : items)
        rule.replicatedOnly[f] = true;
    } else if (clause == "partial") {
      if (parser.parseEqual() || parser.parseKeyword("all"))
        return {};
      rule.partial = ShardingRule::Partial::All;
    } else if (clause == "linear") {
      if (parseSet(parser, numFactors, false, items))
        return {};
      rule.partial = ShardingRule::Partial::Each;
      rule.linearIn.assign(rule.operands.size(), false);
      for (int i : items) {
        if (i < 0 || i >= static_cast<int>(rule.operands.size())) {
          parser.emitError(loc, "linear names operand ")
              << i << " of an op with " << rule.operands.size();
          return {};
        }
        rule.linearIn[i] = true;
      }
    } else if (clause == "combine") {
      if (parser.parseEqual() || parser.parseKeyword("max"))
        return {};
      rule.combine = ShardingRule::Combine::Max;
    } else if (clause == "indexed") {
      auto parseEntry = [&]() -> ParseResult {
        int f;
        int64_t operand;
        SMLoc entryLoc = parser.getCurrentLocation();
        if (parseFactorIs(parser, numFactors, f, operand))
          return failure();
        if (f < 0 || operand < 0 ||
            operand >= static_cast<int64_t>(rule.operands.size()))
          return parser.emitError(entryLoc, "expected factor=operand for a "
                                            "factor and an operand of the "
                                            "rule");
        rule.indexed.push_back({f, static_cast<int>(operand)});
        return success();
      };
      if (parser.parseEqual() ||
          parser.parseCommaSeparatedList(AsmParser::Delimiter::Braces,
                                         parseEntry))
        return {};
    } else {
      parser.emitError(loc, "unknown clause '")
          << clause
          << "' (expected reduction, need_replication, partial, linear, "
             "combine or indexed)";
      return {};
    }
  }
  if (parser.parseGreater())
    return {};
  return rule.toAttr(parser.getContext());
}

} // namespace spmdc::tg
