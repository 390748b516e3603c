//===- JsonDocument.cpp - reading the project's JSON inputs ---------------===//

#include "spmdc/Support/JsonDocument.h"
#include "spmdc/Runtime/Limits.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;

namespace spmdc {

/// The line:col of byte `offset` of `text` in `fileName`.
static Location offsetLoc(MLIRContext &context, StringRef fileName,
                          StringRef text, size_t offset) {
  StringRef before = text.take_front(offset);
  unsigned line = 1 + before.count('\n');
  size_t lastNewline = before.rfind('\n');
  unsigned column =
      1 + (lastNewline == StringRef::npos ? offset : offset - lastNewline - 1);
  return FileLineColLoc::get(&context, fileName, line, column);
}

std::optional<nlohmann::json> parseJsonDocument(StringRef text,
                                                StringRef fileName,
                                                MLIRContext &context) {
  // Deeper documents would overflow the stack of whatever walks them
  // recursively (printing a value in a message, comparing two).
  size_t deep = rt::findJsonDepthExcess(text.data(), text.size());
  if (deep != std::string::npos) {
    emitError(offsetLoc(context, fileName, text, deep))
        << "JSON nested deeper than " << rt::kMaxJsonDepth << " levels";
    return std::nullopt;
  }
  try {
    return nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::parse_error &e) {
    // Turn the byte offset into line:col so the diagnostic shows the line.
    size_t offset = std::min<size_t>(e.byte ? e.byte - 1 : 0, text.size());
    // nlohmann prefixes "[json.exception.parse_error.101] parse error at
    // line 1, column 2: "; the location is ours to print.
    std::string message = e.what();
    size_t colon = message.find(": ");
    emitError(offsetLoc(context, fileName, text, offset))
        << "malformed JSON: "
        << (colon == std::string::npos ? message : message.substr(colon + 2));
    return std::nullopt;
  }
}

Location jsonPointerLoc(MLIRContext &context, StringRef fileName,
                        const std::string &pointer) {
  return NameLoc::get(StringAttr::get(&context, pointer),
                      FileLineColLoc::get(&context, fileName, 0, 0));
}

LogicalResult checkJsonKeys(MLIRContext &context, StringRef fileName,
                            const nlohmann::json &object,
                            const std::string &pointer,
                            std::initializer_list<const char *> allowed,
                            std::initializer_list<const char *> required) {
  if (!object.is_object())
    return emitError(jsonPointerLoc(context, fileName, pointer))
           << "expected an object, got " << object.type_name();
  for (const char *key : required)
    if (!object.contains(key))
      return emitError(jsonPointerLoc(context, fileName, pointer))
             << "missing field '" << key << "'";
  for (auto it = object.begin(); it != object.end(); ++it)
    if (!llvm::is_contained(allowed, StringRef(it.key())))
      return emitError(jsonPointerLoc(context, fileName, pointer + "/" + it.key()))
             << "unknown field '" << it.key() << "'";
  return success();
}

} // namespace spmdc
