#include "output_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "mbobserver/core/json_reader.hpp"
#include "mbobserver/runtime/estimate_json.hpp"

namespace mbo::runtime {

namespace {
constexpr std::size_t kBufferBytes = 1 << 16;
}

OutputFile::OutputFile(std::filesystem::path path, std::string what) : path_(std::move(path)), what_(std::move(what)) {
  buf_.reserve(kBufferBytes);
  if (!open(true)) throw ConfigError(path_.string() + ": cannot write: " + std::strerror(errno_));
}

OutputFile::~OutputFile() {
  if (fd_ >= 0) ::close(fd_);
}

bool OutputFile::open(bool truncate) {
  const int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (truncate ? O_TRUNC : O_APPEND);
  fd_ = ::open(path_.c_str(), flags, 0644);
  if (fd_ < 0) return fail(errno, "open");
  struct stat st {};
  size_ = ::fstat(fd_, &st) == 0 && S_ISREG(st.st_mode) ? static_cast<std::uint64_t>(st.st_size) : 0;
  return true;
}

bool OutputFile::fail(int err, const char* op) {
  errno_ = err;
  failed_op_ = op;
  return false;
}

std::string OutputFile::error_message() const {
  if (errno_ == 0) return "";
  return what_ + " " + path_.string() + ": " + failed_op_ + " failed: " + std::strerror(errno_) + " (" +
         std::string(errno_name(errno_)) + ")";
}

bool OutputFile::write_all(std::string_view data) {
  if (fd_ < 0) return fail(EBADF, "write");
  while (!data.empty()) {
    const ssize_t n = ::write(fd_, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail(errno, "write");
    }
    if (n == 0) return fail(EIO, "write");
    data.remove_prefix(static_cast<std::size_t>(n));
    size_ += static_cast<std::uint64_t>(n);
  }
  return true;
}

bool OutputFile::write(std::string_view data) {
  if (buf_.size() + data.size() > kBufferBytes && !flush()) return false;
  if (data.size() >= kBufferBytes) return write_all(data);
  buf_.append(data);
  return true;
}

bool OutputFile::flush() {
  if (buf_.empty()) return fd_ >= 0 || fail(EBADF, "write");
  // What could not be written is dropped: the caller counts it lost, and the next write
  // starts clean (a disk that has room again gets whole lines, not the tail of an old one).
  const bool ok = write_all(buf_);
  buf_.clear();
  return ok;
}

bool OutputFile::replace(std::string_view text) {
  buf_.clear();
  if (fd_ < 0) return fail(EBADF, "write");
  if (::ftruncate(fd_, 0) != 0 && errno != EINVAL) return fail(errno, "truncate");  // EINVAL: not a regular file
  if (::lseek(fd_, 0, SEEK_SET) < 0 && errno != ESPIPE) return fail(errno, "seek");
  size_ = 0;
  return write_all(text);
}

bool OutputFile::close() {
  const bool flushed = fd_ < 0 || buf_.empty() || flush();
  if (fd_ < 0) return flushed;
  // close(2) reports what a network file system could not write before
  const int rc = ::close(fd_);
  fd_ = -1;
  return flushed && (rc == 0 || errno == EINTR || fail(errno, "close"));
}

bool OutputFile::reopen() {
  const bool closed = close();
  const bool opened = open(false);
  return closed && opened;
}

}  // namespace mbo::runtime
