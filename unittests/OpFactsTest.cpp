//===- OpFactsTest.cpp - every tg op states what each stage needs ---------===//
//
// Walks every registered tg op and checks that it states, or the project
// provides, what each stage asks of it: a sharding rule that fits its
// operand and result shapes, a derivative (or a NoDerivative or Composite
// mark), a cost, an interpreter kernel, and a lowering (composites through
// --tg-decompose). The instances come from test/Dialect/TensorGraph/ops.mlir,
// which must hold at least one of every op: a new op without an example
// fails here first.
//
//===----------------------------------------------------------------------===//

#include "spmdc/Conversion/Passes.h"
#include "spmdc/Dialect/TensorGraph/Transforms/Passes.h"
#include "spmdc/InitAll.h"
#include "spmdc/Interpreter/Interpreter.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringMap.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

using namespace mlir;

namespace {

class OpFacts : public testing::Test {
protected:
  void SetUp() override {
    DialectRegistry registry;
    spmdc::registerAllDialects(registry);
    registry.insert<arith::ArithDialect, linalg::LinalgDialect,
                    math::MathDialect, tensor::TensorDialect>();
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
    context.printOpOnDiagnostic(false);
    corpus = parseSourceFile<ModuleOp>(
        SPMDC_SOURCE_DIR "/test/Dialect/TensorGraph/ops.mlir", &context);
    ASSERT_TRUE(corpus) << "cannot parse ops.mlir";
    corpus->walk([&](Operation *op) {
      if (op->getDialect() && op->getDialect()->getNamespace() == "tg")
        examples.try_emplace(op->getName().getStringRef().str(), op);
    });
  }

  /// A module of one function `@main` that applies a copy of `op` to its
  /// arguments and returns the result.
  OwningOpRef<ModuleOp> isolate(Operation *op) {
    OpBuilder b(&context);
    OwningOpRef<ModuleOp> module = ModuleOp::create(b.getUnknownLoc());
    b.setInsertionPointToEnd(module->getBody());
    auto fn = func::FuncOp::create(
        b, op->getLoc(), "main",
        b.getFunctionType(op->getOperandTypes(), op->getResultTypes()));
    Block *body = fn.addEntryBlock();
    b.setInsertionPointToEnd(body);
    IRMapping mapping;
    mapping.map(op->getOperands(), body->getArguments());
    Operation *copy = b.clone(*op, mapping);
    func::ReturnOp::create(b, op->getLoc(), copy->getResults());
    return module;
  }

  MLIRContext context;
  OwningOpRef<ModuleOp> corpus;
  std::map<std::string, Operation *> examples;
};

/// The registered tg ops, by name.
std::vector<std::string> tgOps(MLIRContext &context) {
  std::vector<std::string> names;
  for (RegisteredOperationName name : context.getRegisteredOperations())
    if (name.getDialectNamespace() == "tg")
      names.push_back(name.getStringRef().str());
  return names;
}

TEST_F(OpFacts, EveryOpHasAnExample) {
  std::vector<std::string> names = tgOps(context);
  EXPECT_GT(names.size(), 40u);
  for (const std::string &name : names)
    EXPECT_TRUE(examples.count(name))
        << name << " has no example in test/Dialect/TensorGraph/ops.mlir";
}

TEST_F(OpFacts, ShardingRuleFitsTheShapes) {
  for (auto &example : examples) {
    const std::string &name = example.first;
    Operation *op = example.second;
    auto ruleOp = dyn_cast<spmdc::tg::ShardingRuleOpInterface>(op);
    ASSERT_TRUE(ruleOp) << name << " states no sharding rule";
    spmdc::tg::ShardingRule rule = ruleOp.getShardingRule();
    ASSERT_EQ(rule.operands.size(), op->getNumOperands()) << name;
    ASSERT_EQ(rule.results.size(), op->getNumResults()) << name;
    ASSERT_EQ(rule.replicatedOnly.size(), rule.factorSizes.size()) << name;
    // A dim is the product of the factors it spans (1 where it spans none).
    auto check = [&](Type type, const auto &dims, const std::string &what) {
      auto shape = cast<RankedTensorType>(type).getShape();
      ASSERT_EQ(dims.size(), shape.size()) << name << " " << what;
      for (auto [size, factors] : llvm::zip(shape, dims)) {
        int64_t product = 1;
        for (int f : factors) {
          ASSERT_LT(f, static_cast<int>(rule.factorSizes.size())) << name;
          product *= rule.factorSizes[f];
        }
        EXPECT_EQ(product, size) << name << " " << what;
      }
    };
    for (auto [i, operand] : llvm::enumerate(op->getOperands()))
      check(operand.getType(), rule.operands[i],
            "operand " + std::to_string(i));
    for (auto [i, result] : llvm::enumerate(op->getResults()))
      check(result.getType(), rule.results[i], "result " + std::to_string(i));
    // The printed rule parses back to the same attribute.
    spmdc::tg::ShardingRuleAttr attr = rule.toAttr(&context);
    std::string text;
    llvm::raw_string_ostream os(text);
    os << attr;
    EXPECT_EQ(parseAttribute(text, &context), attr) << name << ": " << text;
  }
}

TEST_F(OpFacts, DerivativeOrMark) {
  for (auto &[name, op] : examples)
    EXPECT_TRUE(isa<spmdc::tg::VJPOpInterface>(op) ||
                op->hasTrait<spmdc::tg::OpTrait::NoDerivative>() ||
                op->hasTrait<spmdc::tg::OpTrait::Composite>())
        << name << " has no VJP and no NoDerivative or Composite mark";
}

TEST_F(OpFacts, Cost) {
  for (auto &[name, op] : examples) {
    auto cost = dyn_cast<spmdc::tg::CostOpInterface>(op);
    ASSERT_TRUE(cost) << name << " states no cost";
    EXPECT_GE(cost.getFlops(), 0) << name;
    EXPECT_GT(cost.getBytesAccessed(), 0) << name;
    // An elementwise op does at least one operation per result element.
    if (op->hasTrait<spmdc::tg::OpTrait::Elementwise>())
      EXPECT_GE(cost.getFlops(),
                cast<RankedTensorType>(op->getResult(0).getType())
                    .getNumElements())
          << name;
  }
}

TEST_F(OpFacts, InterpreterKernel) {
  for (auto &[name, op] : examples) {
    OwningOpRef<ModuleOp> module = isolate(op);
    auto fn = cast<func::FuncOp>(module->getBody()->front());
    std::vector<spmdc::interp::Tensor> args;
    for (Type type : fn.getArgumentTypes()) {
      auto shape = cast<RankedTensorType>(type).getShape();
      // Small positive values: valid as indices (0) and in every domain.
      bool integer = cast<RankedTensorType>(type).getElementType().isInteger();
      args.emplace_back(spmdc::interp::Shape(shape.begin(), shape.end()),
                        integer ? 0.0 : 0.5);
    }
    auto results = spmdc::interp::runFunction(fn, args, {});
    EXPECT_TRUE(succeeded(results)) << name << " has no interpreter kernel";
  }
}

TEST_F(OpFacts, Lowering) {
  for (auto &[name, op] : examples) {
    OwningOpRef<ModuleOp> module = isolate(op);
    PassManager pm(&context);
    if (op->hasTrait<spmdc::tg::OpTrait::Composite>())
      pm.addPass(spmdc::tg::createTgDecompose());
    pm.addNestedPass<func::FuncOp>(spmdc::createConvertTgToLinalg());
    ASSERT_TRUE(succeeded(pm.run(*module))) << name << " does not lower";
    bool left = false;
    module->walk([&](Operation *inner) {
      left |= inner->getDialect() &&
              inner->getDialect()->getNamespace() == "tg";
    });
    EXPECT_FALSE(left) << name << " leaves tg ops after the lowering";
  }
}

} // namespace
