//===- GradientCheckTest.cpp - autodiff against finite differences --------===//
//
// For each differentiable primitive (and each composite, through
// --tg-decompose), the gradient --tg-autodiff builds is compared with
// central finite differences of the loss, both computed by the interpreter
// in f64. The loss is sum(op(...) * r) with a fixed random r, so every
// element of the op's result matters.
//
//===----------------------------------------------------------------------===//

#include "spmdc/Dialect/TensorGraph/IR/GraphSignature.h"
#include "spmdc/Dialect/TensorGraph/Transforms/Passes.h"
#include "spmdc/InitAll.h"
#include "spmdc/Interpreter/Interpreter.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

using namespace mlir;
using spmdc::interp::Tensor;

namespace {

struct GradientCase {
  std::string name;
  /// Parameters, `%name: type` each; they get uniform values in [lo, hi).
  std::string params;
  /// The body computing `%y` from the parameters.
  std::string body;
  /// The type of `%y`.
  std::string resultType;
  double lo = -1.0, hi = 1.0;
  /// Run --tg-decompose first (composites).
  bool decompose = false;
};

std::string printCase(const testing::TestParamInfo<GradientCase> &info) {
  return info.param.name;
}

/// `%y` weighted by fixed random values and summed: the scalar loss.
std::string buildModule(const GradientCase &c) {
  std::string args;
  size_t start = 0;
  // Each parameter `%p: T` becomes an argument of role param named p.
  while (start < c.params.size()) {
    size_t end = c.params.find(';', start);
    if (end == std::string::npos)
      end = c.params.size();
    std::string param = c.params.substr(start, end - start);
    size_t colon = param.find(':');
    std::string name = param.substr(param.find('%') + 1,
                                    colon - param.find('%') - 1);
    if (!args.empty())
      args += ", ";
    args += param + " {tg.name = \"" + name + "\", tg.role = #tg.role<param>}";
    start = end + 1;
  }
  int rank = 0;
  for (char ch : c.resultType)
    rank += ch == 'x';
  std::string dims;
  for (int i = 0; i < rank; ++i)
    dims += (i ? ", " : "") + std::to_string(i);
  return "func.func @main(" + args +
         ") -> (tensor<f64> {tg.name = \"loss\", tg.role = #tg.role<loss>}) {\n" +
         c.body + "\n  %r = tg.rand_uniform seed 99 : " + c.resultType +
         "\n  %m = tg.mul %y, %r : " + c.resultType + ", " + c.resultType +
         "\n  %l = tg.sum %m dims [" + dims + "] : " + c.resultType +
         "\n  return %l : tensor<f64>\n}\n";
}

class GradientCheck : public testing::TestWithParam<GradientCase> {
protected:
  GradientCheck() {
    DialectRegistry registry;
    spmdc::registerAllDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }

  double loss(func::FuncOp fn, const std::vector<Tensor> &args) {
    auto results = spmdc::interp::runFunction(fn, args, {/*f64=*/true});
    EXPECT_TRUE(succeeded(results));
    return succeeded(results) ? (*results)[0].data[0] : NAN;
  }

  MLIRContext context;
};

TEST_P(GradientCheck, MatchesCentralDifferences) {
  const GradientCase &c = GetParam();
  std::string source = buildModule(c);
  OwningOpRef<ModuleOp> forward = parseSourceString<ModuleOp>(source, &context);
  ASSERT_TRUE(forward) << source;
  OwningOpRef<ModuleOp> joint = forward->clone();
  PassManager pm(&context);
  if (c.decompose)
    pm.addPass(spmdc::tg::createTgDecompose());
  pm.addPass(spmdc::tg::createTgAutodiff());
  ASSERT_TRUE(succeeded(pm.run(*joint)));

  func::FuncOp forwardFn = spmdc::tg::getEntryFunction(*forward);
  func::FuncOp jointFn = spmdc::tg::getEntryFunction(*joint);
  std::vector<Tensor> args;
  for (auto [i, arg] : llvm::enumerate(forwardFn.getArguments())) {
    auto type = llvm::cast<RankedTensorType>(arg.getType());
    Tensor t(std::vector<int64_t>(type.getShape().begin(),
                                  type.getShape().end()));
    for (int64_t j = 0; j < t.numel(); ++j)
      t.data[j] = c.lo + (c.hi - c.lo) * spmdc::interp::uniformBits(i + 1, j);
    args.push_back(std::move(t));
  }

  auto results = spmdc::interp::runFunction(jointFn, args, {/*f64=*/true});
  ASSERT_TRUE(succeeded(results));
  const double h = 1e-6;
  for (size_t p = 0; p < args.size(); ++p) {
    const Tensor &grad = (*results)[1 + p];
    ASSERT_EQ(grad.shape, args[p].shape);
    for (int64_t j = 0; j < args[p].numel(); ++j) {
      std::vector<Tensor> plus = args, minus = args;
      plus[p].data[j] += h;
      minus[p].data[j] -= h;
      double fd = (loss(forwardFn, plus) - loss(forwardFn, minus)) / (2 * h);
      // Relative error, against 1 for gradients near zero, where central
      // differences carry ~1e-10 of rounding noise.
      double error = std::fabs(grad.data[j] - fd) / std::max(1.0, std::fabs(fd));
      EXPECT_LT(error, 1e-6) << c.name << ": parameter #" << p << " element "
                             << j << ": autodiff " << grad.data[j]
                             << ", finite difference " << fd;
    }
  }
}

// Inputs stay away from kinks (abs, relu, max ties) where the derivative is
// not defined and central differences straddle it.
const GradientCase kPrimitiveCases[] = {
    {"neg", "%a: tensor<3xf64>", "%y = tg.neg %a : tensor<3xf64>", "tensor<3xf64>"},
    {"abs", "%a: tensor<4xf64>",
     "%s = tg.full 0.5 : tensor<f64>\n%b = tg.sub %a, %s : tensor<4xf64>, tensor<f64>\n"
     "%y = tg.abs %b : tensor<4xf64>", "tensor<4xf64>", 0.6, 0.9},
    {"exp", "%a: tensor<3xf64>", "%y = tg.exp %a : tensor<3xf64>", "tensor<3xf64>"},
    {"log", "%a: tensor<3xf64>", "%y = tg.log %a : tensor<3xf64>", "tensor<3xf64>", 0.5, 2.0},
    {"sqrt", "%a: tensor<3xf64>", "%y = tg.sqrt %a : tensor<3xf64>", "tensor<3xf64>", 0.5, 2.0},
    {"rsqrt", "%a: tensor<3xf64>", "%y = tg.rsqrt %a : tensor<3xf64>", "tensor<3xf64>", 0.5, 2.0},
    {"reciprocal", "%a: tensor<3xf64>", "%y = tg.reciprocal %a : tensor<3xf64>", "tensor<3xf64>", 0.5, 2.0},
    {"tanh", "%a: tensor<3xf64>", "%y = tg.tanh %a : tensor<3xf64>", "tensor<3xf64>"},
    {"erf", "%a: tensor<3xf64>", "%y = tg.erf %a : tensor<3xf64>", "tensor<3xf64>"},
    {"sigmoid", "%a: tensor<3xf64>", "%y = tg.sigmoid %a : tensor<3xf64>", "tensor<3xf64>"},
    {"sin", "%a: tensor<3xf64>", "%y = tg.sin %a : tensor<3xf64>", "tensor<3xf64>"},
    {"cos", "%a: tensor<3xf64>", "%y = tg.cos %a : tensor<3xf64>", "tensor<3xf64>"},
    {"relu", "%a: tensor<4xf64>",
     "%s = tg.full 0.75 : tensor<f64>\n%b = tg.sub %a, %s : tensor<4xf64>, tensor<f64>\n"
     "%y = tg.relu %b : tensor<4xf64>", "tensor<4xf64>", 0.0, 0.5},
    {"add_broadcast", "%a: tensor<2x3xf64>;%b: tensor<3xf64>",
     "%y = tg.add %a, %b : tensor<2x3xf64>, tensor<3xf64>", "tensor<2x3xf64>"},
    {"sub_broadcast", "%a: tensor<2x1xf64>;%b: tensor<2x3xf64>",
     "%y = tg.sub %a, %b : tensor<2x1xf64>, tensor<2x3xf64>", "tensor<2x3xf64>"},
    {"mul_broadcast", "%a: tensor<2x3xf64>;%b: tensor<f64>",
     "%y = tg.mul %a, %b : tensor<2x3xf64>, tensor<f64>", "tensor<2x3xf64>"},
    {"div_broadcast", "%a: tensor<2x3xf64>;%b: tensor<1x3xf64>",
     "%y = tg.div %a, %b : tensor<2x3xf64>, tensor<1x3xf64>", "tensor<2x3xf64>", 0.5, 2.0},
    // Dividends of both signs, quotients away from whole numbers (where
    // rem jumps).
    {"rem", "%a: tensor<4xf64>;%b: tensor<4xf64>",
     "%s = tg.full -7.3 : tensor<4xf64>\n%c = tg.mul %a, %s : tensor<4xf64>, tensor<4xf64>\n"
     "%d = tg.constant dense<[1.0, -1.0, 1.0, -1.0]> : tensor<4xf64>\n"
     "%e = tg.mul %c, %d : tensor<4xf64>, tensor<4xf64>\n"
     "%y = tg.rem %e, %b : tensor<4xf64>, tensor<4xf64>", "tensor<4xf64>", 0.5, 0.9},
    {"pow", "%a: tensor<3xf64>;%b: tensor<3xf64>",
     "%y = tg.pow %a, %b : tensor<3xf64>, tensor<3xf64>", "tensor<3xf64>", 0.5, 2.0},
    {"maximum", "%a: tensor<4xf64>;%b: tensor<4xf64>",
     "%y = tg.maximum %a, %b : tensor<4xf64>, tensor<4xf64>", "tensor<4xf64>"},
    {"minimum", "%a: tensor<4xf64>;%b: tensor<4xf64>",
     "%y = tg.minimum %a, %b : tensor<4xf64>, tensor<4xf64>", "tensor<4xf64>"},
    {"select", "%a: tensor<2x2xf64>;%b: tensor<2xf64>",
     "%c = tg.constant dense<[[true, false], [false, true]]> : tensor<2x2xi1>\n"
     "%y = tg.select %c, %a, %b : tensor<2x2xi1>, tensor<2x2xf64>, tensor<2xf64>",
     "tensor<2x2xf64>"},
    {"convert", "%a: tensor<3xf64>",
     "%c = tg.convert %a : tensor<3xf64> to tensor<3xf32>\n"
     "%y = tg.convert %c : tensor<3xf32> to tensor<3xf64>", "tensor<3xf64>"},
    {"sum_keepdim", "%a: tensor<2x3x4xf64>",
     "%y = tg.sum %a dims [0, 2] keepdim : tensor<2x3x4xf64>", "tensor<1x3x1xf64>"},
    {"sum", "%a: tensor<2x3xf64>", "%y = tg.sum %a dims [1] : tensor<2x3xf64>", "tensor<2xf64>"},
    {"max", "%a: tensor<3x4xf64>", "%y = tg.max %a dims [1] : tensor<3x4xf64>", "tensor<3xf64>"},
    {"matmul_batch_broadcast", "%a: tensor<2x3x4xf64>;%b: tensor<4x2xf64>",
     "%y = tg.matmul %a, %b : tensor<2x3x4xf64>, tensor<4x2xf64>", "tensor<2x3x2xf64>"},
    {"reshape", "%a: tensor<2x3xf64>",
     "%y = tg.reshape %a : tensor<2x3xf64> to tensor<3x2xf64>", "tensor<3x2xf64>"},
    {"transpose", "%a: tensor<2x3x4xf64>",
     "%y = tg.transpose %a perm [2, 0, 1] : tensor<2x3x4xf64>", "tensor<4x2x3xf64>"},
    {"broadcast", "%a: tensor<3x1xf64>",
     "%y = tg.broadcast %a : tensor<3x1xf64> to tensor<2x3x4xf64>", "tensor<2x3x4xf64>"},
    {"slice", "%a: tensor<2x5xf64>",
     "%y = tg.slice %a dim 1 start 1 end 4 step 1 : tensor<2x5xf64>", "tensor<2x3xf64>"},
    {"concat", "%a: tensor<2x2xf64>;%b: tensor<2x3xf64>",
     "%y = tg.concat %a, %b dim 1 : tensor<2x2xf64>, tensor<2x3xf64>", "tensor<2x5xf64>"},
    {"embedding", "%w: tensor<4x3xf64>",
     "%i = tg.constant dense<[[1, 3], [1, 0]]> : tensor<2x2xi64>\n"
     "%y = tg.embedding %w, %i : tensor<4x3xf64>, tensor<2x2xi64>", "tensor<2x2x3xf64>"},
    {"embedding_backward", "%g: tensor<2x2x3xf64>",
     "%i = tg.constant dense<[[1, 3], [1, 0]]> : tensor<2x2xi64>\n"
     "%y = tg.embedding_backward %g, %i : tensor<2x2x3xf64>, tensor<2x2xi64> to tensor<4x3xf64>",
     "tensor<4x3xf64>"},
    {"gather", "%a: tensor<3x4xf64>",
     "%i = tg.constant dense<[[0, 3], [2, 2], [1, 0]]> : tensor<3x2xi64>\n"
     "%y = tg.gather %a, %i dim 1 : tensor<3x4xf64>, tensor<3x2xi64>", "tensor<3x2xf64>"},
    {"scatter_add", "%s: tensor<3x2xf64>",
     "%i = tg.constant dense<[[0, 3], [2, 2], [1, 0]]> : tensor<3x2xi64>\n"
     "%y = tg.scatter_add %i, %s dim 1 : tensor<3x2xi64>, tensor<3x2xf64> to tensor<3x4xf64>",
     "tensor<3x4xf64>"},
};

GradientCase composite(GradientCase c) {
  c.decompose = true;
  return c;
}

const GradientCase kCompositeCases[] = {
    composite({"linear", "%x: tensor<2x3x4xf64>;%w: tensor<5x4xf64>;%b: tensor<5xf64>",
               "%y = tg.linear %x, %w, %b : tensor<2x3x4xf64>, tensor<5x4xf64>, tensor<5xf64>",
               "tensor<2x3x5xf64>"}),
    composite({"mean", "%a: tensor<3x4xf64>", "%y = tg.mean %a dims [0] : tensor<3x4xf64>",
               "tensor<4xf64>"}),
    composite({"softmax", "%a: tensor<3x4xf64>", "%y = tg.softmax %a dim 1 : tensor<3x4xf64>",
               "tensor<3x4xf64>", -3.0, 3.0}),
    composite({"log_softmax", "%a: tensor<3x4xf64>",
               "%y = tg.log_softmax %a dim 0 : tensor<3x4xf64>", "tensor<3x4xf64>", -3.0, 3.0}),
    composite({"layer_norm", "%x: tensor<2x6xf64>;%g: tensor<6xf64>;%b: tensor<6xf64>",
               "%y = tg.layer_norm %x, %g, %b eps 1.0e-5 : tensor<2x6xf64>, tensor<6xf64>, tensor<6xf64>",
               "tensor<2x6xf64>"}),
    composite({"rms_norm", "%x: tensor<2x6xf64>;%g: tensor<6xf64>",
               "%y = tg.rms_norm %x, %g eps 1.0e-6 : tensor<2x6xf64>, tensor<6xf64>",
               "tensor<2x6xf64>"}),
    composite({"gelu", "%a: tensor<5xf64>", "%y = tg.gelu %a : tensor<5xf64>", "tensor<5xf64>",
               -2.0, 2.0}),
    composite({"gelu_tanh", "%a: tensor<5xf64>",
               "%y = tg.gelu %a approximate \"tanh\" : tensor<5xf64>", "tensor<5xf64>", -2.0, 2.0}),
    composite({"silu", "%a: tensor<5xf64>", "%y = tg.silu %a : tensor<5xf64>", "tensor<5xf64>",
               -2.0, 2.0}),
    composite({"cross_entropy", "%a: tensor<2x3x5xf64>",
               "%t = tg.constant dense<[[0, 4, 2], [1, 1, 3]]> : tensor<2x3xi64>\n"
               "%c = tg.cross_entropy %a, %t : tensor<2x3x5xf64>, tensor<2x3xi64>\n"
               "%y = tg.reshape %c : tensor<f64> to tensor<1xf64>",
               "tensor<1xf64>", -2.0, 2.0}),
    composite({"sdpa_causal_gqa", "%q: tensor<1x4x3x2xf64>;%k: tensor<1x2x3x2xf64>;%v: tensor<1x2x3x2xf64>",
               "%y = tg.sdpa %q, %k, %v causal : tensor<1x4x3x2xf64>, tensor<1x2x3x2xf64>, tensor<1x2x3x2xf64>",
               "tensor<1x4x3x2xf64>"}),
    composite({"sdpa_scale", "%q: tensor<1x1x3x2xf64>;%k: tensor<1x1x4x2xf64>;%v: tensor<1x1x4x3xf64>",
               "%y = tg.sdpa %q, %k, %v scale 0.3 : tensor<1x1x3x2xf64>, tensor<1x1x4x2xf64>, tensor<1x1x4x3xf64>",
               "tensor<1x1x3x3xf64>"}),
    composite({"dropout", "%a: tensor<3x4xf64>", "%y = tg.dropout %a p 0.3 seed 5 : tensor<3x4xf64>",
               "tensor<3x4xf64>"}),
};

INSTANTIATE_TEST_SUITE_P(Primitives, GradientCheck,
                         testing::ValuesIn(kPrimitiveCases), printCase);
INSTANTIATE_TEST_SUITE_P(Composites, GradientCheck,
                         testing::ValuesIn(kCompositeCases), printCase);

} // namespace
