//===- FuzzSupport.h - what the readers' fuzz harnesses share ---*- C++ -*-===//
//
// A harness is one LLVMFuzzerTestOneInput that hands its bytes to one
// reader. The readers must turn any input into a result or an error, never a
// crash, a sanitizer report, a hang or an allocation the input's size does
// not justify; libFuzzer and the sanitizers report the rest.
//
//===----------------------------------------------------------------------===//

#ifndef SPMDC_FUZZ_FUZZSUPPORT_H
#define SPMDC_FUZZ_FUZZSUPPORT_H

#include <cstddef>
#include <cstdint>
#include <string>

#include <sys/mman.h>
#include <unistd.h>

namespace spmdc::fuzz {

/// The input as a file, for readers that open a path: an anonymous
/// in-memory file, named by its /proc/self/fd path, closed on destruction.
class MemoryFile {
public:
  MemoryFile(const uint8_t *data, size_t size) {
    fd = memfd_create("spmdc-fuzz", 0);
    size_t done = 0;
    while (fd >= 0 && done < size) {
      ssize_t n = ::write(fd, data + done, size - done);
      if (n <= 0)
        break;
      done += static_cast<size_t>(n);
    }
  }
  ~MemoryFile() {
    if (fd >= 0)
      ::close(fd);
  }
  bool ok() const { return fd >= 0; }
  std::string path() const { return "/proc/self/fd/" + std::to_string(fd); }

private:
  int fd = -1;
};

} // namespace spmdc::fuzz

#endif // SPMDC_FUZZ_FUZZSUPPORT_H
