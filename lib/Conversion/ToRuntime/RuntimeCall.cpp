//===- RuntimeCall.cpp - a call of the runtime on buffers -----------------===//

#include "RuntimeCall.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/SymbolTable.h"

using namespace mlir;

namespace spmdc {

func::FuncOp getOrDeclareRuntimeFunction(ModuleOp module, StringRef name,
                                         ArrayRef<Type> scalarTypes,
                                         Type element, unsigned numBuffers) {
  if (auto existing = module.lookupSymbol<func::FuncOp>(name))
    return existing;
  SmallVector<Type> inputs(scalarTypes);
  inputs.append(numBuffers, UnrankedMemRefType::get(element, 0));
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  auto function = func::FuncOp::create(b, module.getLoc(), name,
                                       b.getFunctionType(inputs, {}));
  function.setPrivate();
  return function;
}

Value emitRuntimeCall(OpBuilder &b, Location loc, func::FuncOp callee,
                      ValueRange scalars, ValueRange inputs,
                      RankedTensorType resultType) {
  Type element = resultType.getElementType();
  auto unranked = UnrankedMemRefType::get(element, 0);
  SmallVector<Value> operands(scalars);
  for (Value input : inputs) {
    auto type = cast<RankedTensorType>(input.getType());
    Value buffer = bufferization::ToBufferOp::create(
        b, loc, MemRefType::get(type.getShape(), type.getElementType()), input,
        /*read_only=*/true);
    operands.push_back(memref::CastOp::create(b, loc, unranked, buffer));
  }
  Value out = memref::AllocOp::create(
      b, loc, MemRefType::get(resultType.getShape(), element));
  operands.push_back(memref::CastOp::create(b, loc, unranked, out));
  func::CallOp::create(b, loc, callee, operands);
  return bufferization::ToTensorOp::create(b, loc, resultType, out,
                                           /*restrict=*/true,
                                           /*writable=*/true);
}

} // namespace spmdc
