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

namespace {
/// nlohmann's DOM builder that records the first error (its byte and
/// message) rather than throwing it.
class RecordingParser
    : public nlohmann::detail::json_sax_dom_parser<nlohmann::json> {
public:
  explicit RecordingParser(nlohmann::json &document)
      : json_sax_dom_parser(document, /*allow_exceptions=*/false) {}
  template <class Exception>
  bool parse_error(std::size_t position, const std::string &,
                   const Exception &error) {
    if (!failed) {
      failed = true;
      errorByte = position;
      message = error.what();
    }
    return false;
  }
  bool failed = false;
  std::size_t errorByte = 0;
  std::string message;
};
} // namespace

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
  // Parsed through a SAX handler that records the first error instead of
  // throwing it: nlohmann's exceptions are not all caught where they pass
  // through code built without exceptions (a number past a double's range,
  // 1e400, terminated spmdc; found by fuzz/json-graph-fuzzer.cpp).
  nlohmann::json document;
  RecordingParser parser(document);
  bool parsed = nlohmann::json::sax_parse(text.begin(), text.end(), &parser);
  if (parsed && !parser.failed)
    return document;
  // Turn the byte offset into line:col so the diagnostic shows the line.
  size_t offset = std::min<size_t>(
      parser.errorByte ? parser.errorByte - 1 : 0, text.size());
  // nlohmann prefixes "[json.exception.parse_error.101] parse error at
  // line 1, column 2: " or "[json.exception.out_of_range.406] "; the
  // location is ours to print.
  std::string message = parser.message;
  size_t cut = message.find("parse error at ");
  cut = cut != std::string::npos ? message.find(": ", cut) : message.find("] ");
  emitError(offsetLoc(context, fileName, text, offset))
      << "malformed JSON: "
      << (cut == std::string::npos ? message : message.substr(cut + 2));
  return std::nullopt;
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
