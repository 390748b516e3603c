//===- AtomicFile.h - write a file whole or not at all ----------*- C++ -*-===//
//
// Every file spmdc and spmd-run write (--save-params, --save-outputs,
// modules, reports) is written to a temporary file beside it, flushed to
// disk and renamed over the target only when every byte is written: a full
// disk, a crash or a kill leaves the previous file as it was and no partial
// one (docs/reliability.md). A target that exists and is not a regular file
// (/dev/null, a pipe) is written in place. MLIR-free.
//
//===----------------------------------------------------------------------===//

#ifndef SPMDC_RUNTIME_ATOMICFILE_H
#define SPMDC_RUNTIME_ATOMICFILE_H

#include <cstddef>
#include <string>

namespace spmdc::rt {

class AtomicFile {
public:
  /// Creates the temporary file for `path`; false with `error` set (the
  /// path, and what failed) if it cannot.
  bool open(const std::string &path, std::string &error);
  /// Appends `size` bytes; false with `error` set on the first failure
  /// (later writes then fail too).
  bool write(const void *data, size_t size, std::string &error);
  /// Flushes, closes and renames over the target; false with `error` set,
  /// and the temporary file removed, if any step fails.
  bool commit(std::string &error);
  /// Removes the temporary file unless committed.
  ~AtomicFile();

  /// The temporary file's name ("" when writing in place or not open).
  const std::string &temporaryPath() const { return temporary; }

private:
  void discard();
  std::string target, temporary;
  int fd = -1;
  bool failed = false;
};

} // namespace spmdc::rt

#endif // SPMDC_RUNTIME_ATOMICFILE_H
