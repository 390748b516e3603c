//===- AtomicFile.cpp - write a file whole or not at all ------------------===//

#include "spmdc/Runtime/AtomicFile.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace spmdc::rt {

namespace {
std::string because(const char *what) {
  return std::string(what) + ": " + std::strerror(errno);
}
} // namespace

bool AtomicFile::open(const std::string &path, std::string &error) {
  target = path;
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    fd = ::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
    if (fd < 0) {
      error = path + ": " + because("cannot open for writing");
      return false;
    }
    return true;
  }
  // Beside the target, so that the rename stays on one file system.
  std::string pattern = path + ".tmp-XXXXXX";
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  fd = ::mkostemp(name.data(), O_CLOEXEC);
  if (fd < 0) {
    error = path + ": " + because("cannot create a temporary file beside it");
    return false;
  }
  temporary = name.data();
  // mkstemp makes it 0600; give it the mode a plain create would.
  mode_t mask = ::umask(0);
  ::umask(mask);
  ::fchmod(fd, 0666 & ~mask);
  return true;
}

bool AtomicFile::write(const void *data, size_t size, std::string &error) {
  if (fd < 0 || failed) {
    error = target + ": the file is not open for writing";
    return false;
  }
  const char *p = static_cast<const char *>(data);
  while (size > 0) {
    ssize_t n = ::write(fd, p, size);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      if (n == 0)
        errno = EIO;
      error = target + ": " + because("write failed") +
              (temporary.empty() ? "" : " (the previous file is unchanged)");
      failed = true;
      discard();
      return false;
    }
    p += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

bool AtomicFile::commit(std::string &error) {
  if (fd < 0 || failed) {
    error = target + ": the file is not open for writing";
    return false;
  }
  bool inPlace = temporary.empty();
  // fsync fails with EINVAL on pipes and character devices: not an error.
  if (::fsync(fd) != 0 && !(inPlace && (errno == EINVAL || errno == EROFS))) {
    error = target + ": " + because("cannot flush to disk") +
            " (the previous file is unchanged)";
    discard();
    return false;
  }
  int rc = ::close(fd);
  fd = -1;
  if (rc != 0) {
    error = target + ": " + because("write failed") +
            (inPlace ? "" : " (the previous file is unchanged)");
    discard();
    return false;
  }
  if (!inPlace && ::rename(temporary.c_str(), target.c_str()) != 0) {
    error = target + ": " + because("cannot rename the temporary file over it") +
            " (the previous file is unchanged)";
    discard();
    return false;
  }
  temporary.clear();
  return true;
}

void AtomicFile::discard() {
  if (fd >= 0) {
    ::close(fd);
    fd = -1;
  }
  if (!temporary.empty()) {
    ::unlink(temporary.c_str());
    temporary.clear();
  }
}

AtomicFile::~AtomicFile() { discard(); }

} // namespace spmdc::rt
