//===- PtxEntries.h - a PTX text's kernels and parameters -------*- C++ -*-===//
//
// The .entry functions of a PTX module, with each parameter's size and
// whether it is a pointer: what the CUDA runtime's profile needs to find
// the buffers a launch touches, and what the test's fake driver checks.
// Header-only, no CUDA or MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef SPMDC_RUNTIME_PTXENTRIES_H
#define SPMDC_RUNTIME_PTXENTRIES_H

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace spmdc::rt {

struct PtxParam {
  size_t bytes;
  bool pointer;
};

/// Kernel name -> parameters, for every `.entry name(...)` of `ptx`; empty
/// if the text has none (or is malformed).
inline std::map<std::string, std::vector<PtxParam>>
ptxEntries(const char *ptx) {
  std::map<std::string, std::vector<PtxParam>> entries;
  for (const char *at = ptx; (at = std::strstr(at, ".entry "));) {
    at += 7;
    const char *open = std::strchr(at, '(');
    const char *close = open ? std::strchr(open, ')') : nullptr;
    if (!close)
      return {};
    std::vector<PtxParam> &params = entries[std::string(at, open)];
    // ".param .u64 .ptr .align 1 name," or ".param .f32 name"
    std::string list(open + 1, close);
    for (size_t pos = 0; (pos = list.find(".param", pos)) != std::string::npos;
         pos += 6) {
      size_t typeStart = list.find('.', pos + 1);
      size_t typeEnd = list.find_first_of(" \t", typeStart);
      std::string type = list.substr(typeStart, typeEnd - typeStart);
      size_t bits = type.size() > 2 ? std::atoi(type.c_str() + 2) : 8;
      size_t end = list.find(',', pos);
      bool pointer =
          list.substr(pos,
                      end == std::string::npos ? std::string::npos : end - pos)
              .find(".ptr") != std::string::npos;
      params.push_back({bits ? bits / 8 : 1, pointer});
    }
    at = close;
  }
  return entries;
}

} // namespace spmdc::rt

#endif // SPMDC_RUNTIME_PTXENTRIES_H
