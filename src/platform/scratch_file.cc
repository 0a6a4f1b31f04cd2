#include "platform/scratch_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

namespace strata {
namespace {

Error offload_error(const std::string& dir, const std::string& what) {
  return make_error(ErrorCode::kInvalidArgument,
                    "--kv-offload " + dir + ": " + what +
                        "; name an existing folder on a disk with room for the offloaded pages");
}

// An unlinked file in dir: O_TMPFILE where the file system has it, else a named one removed at
// once.
int open_unlinked(const std::string& dir) {
#ifdef O_TMPFILE
  const int fd = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)) return fd;
#endif
  std::string path = dir + "/strata-kv-XXXXXX";
  const int named = ::mkstemp(path.data());
  if (named >= 0) ::unlink(path.c_str());
  return named;
}

}  // namespace

Result<ScratchMapping> ScratchMapping::create(const std::string& dir, size_t bytes) {
  bytes = std::max<size_t>(bytes, 1);
  const int fd = open_unlinked(dir);
  if (fd < 0)
    return offload_error(dir, std::string("cannot make a file there: ") + std::strerror(errno));
  if (const int err = ::posix_fallocate(fd, 0, static_cast<off_t>(bytes)); err != 0) {
    ::close(fd);
    return offload_error(
        dir, "cannot reserve " + std::to_string(bytes >> 20) + " MiB there: " + std::strerror(err));
  }
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const int map_errno = errno;
  ::close(fd);  // the mapping keeps the file alive
  if (p == MAP_FAILED)
    return offload_error(dir, std::string("cannot map: ") + std::strerror(map_errno));
  ScratchMapping m;
  m.data_ = static_cast<unsigned char*>(p);
  m.size_ = bytes;
  return m;
}

ScratchMapping& ScratchMapping::operator=(ScratchMapping&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) ::munmap(data_, size_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

ScratchMapping::~ScratchMapping() {
  if (data_ != nullptr) ::munmap(data_, size_);
}

}  // namespace strata
