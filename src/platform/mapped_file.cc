#include "platform/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "platform/huge_pages.h"

namespace strata {
namespace {

Error io_error(const std::string& what, const std::string& path) {
  return make_error(ErrorCode::kIo, what + " " + path + ": " + std::strerror(errno));
}

}  // namespace

Result<std::unique_ptr<MappedFile>> MappedFile::open(const std::string& path, Mode mode) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return make_error(ErrorCode::kNotFound, "no such file: " + path);
    return io_error("cannot open", path);
  }
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    Error e = io_error("cannot stat", path);
    ::close(fd);
    return e;
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return make_error(ErrorCode::kInvalidArgument, path + " is not a regular file");
  }
  std::unique_ptr<MappedFile> file(new MappedFile());
  file->path_ = path;
  file->size_ = static_cast<size_t>(st.st_size);
  file->mode_ = mode;
  if (file->size_ == 0) {
    ::close(fd);
    return file;  // an empty view; readers report it as truncated
  }
  if (mode == Mode::kMmap) {
    void* p = mmap(nullptr, file->size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      Error e = io_error("cannot mmap", path);
      ::close(fd);
      return e;
    }
    file->data_ = static_cast<const uint8_t*>(p);
    file->owns_mapping_ = true;
  } else {
    // Decode streams every weight once per token (platform/huge_pages.h); the alignment also
    // keeps tensor data as aligned as the file's general.alignment makes it.
    AlignedPtr<unsigned char> buf = allocate_huge_page_backed(file->size_);
    if (buf == nullptr) {
      ::close(fd);
      return make_error(ErrorCode::kOutOfRange, "not enough memory to load " + path +
                                                    " resident; try memory-mapping it instead");
    }
    size_t done = 0;
    while (done < file->size_) {
      ssize_t n = ::pread(fd, buf.get() + done, file->size_ - done, static_cast<off_t>(done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        Error e = io_error("cannot read", path);
        ::close(fd);
        return e;
      }
      done += static_cast<size_t>(n);
    }
    file->data_ = buf.get();
    file->resident_ = {buf.release(), [](uint8_t* q) { std::free(q); }};
  }
  ::close(fd);
  return file;
}

std::unique_ptr<MappedFile> MappedFile::from_memory(const uint8_t* data, size_t size) {
  std::unique_ptr<MappedFile> file(new MappedFile());
  file->path_ = "<memory>";
  file->data_ = data;
  file->size_ = size;
  file->mode_ = Mode::kResident;
  return file;
}

MappedFile::~MappedFile() {
  if (owns_mapping_) munmap(const_cast<uint8_t*>(data_), size_);
}

}  // namespace strata
