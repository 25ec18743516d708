// A file the daemon writes (--record, --summary-json): opened at start-up so that a path that
// cannot be written stops the daemon before it runs (exit 2), written through its own buffer
// with write(2) so that every failure is seen with its errno (ENOSPC on a full disk or
// /dev/full, EIO, EFBIG, ...), and reopened at the same path on SIGHUP (logrotate moves the
// file away and asks for a new one).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace mbo::runtime {

class OutputFile {
 public:
  // Opens `path` for writing, truncated; ConfigError ("PATH: cannot write: <strerror>") if it
  // cannot be opened. `what` names the file in messages ("record", "summary").
  OutputFile(std::filesystem::path path, std::string what);
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  // Appends to the buffer, writing it out when it is full. False on a failed write (errno()).
  bool write(std::string_view data);
  // Writes out what is buffered. False on a failed write.
  bool flush();
  // Replaces the file's whole content with `text` (the summary, written at the end).
  bool replace(std::string_view text);
  // Flushes and closes. False if either failed.
  bool close();
  // Flushes, closes and opens the path again, appending (a new file if logrotate moved the old
  // one away). False if the flush or the open failed; the file is then closed.
  bool reopen();

  bool is_open() const { return fd_ >= 0; }
  // Bytes in the file as far as this process knows: its size when (re)opened plus what has
  // been written since (buffered bytes not counted).
  std::uint64_t size() const { return size_; }
  std::size_t buffered() const { return buf_.size(); }
  // errno of the last failure, 0 if none, and the failure as one line: "record PATH: write
  // failed: No space left on device (ENOSPC)".
  int error() const { return errno_; }
  std::string error_message() const;
  const std::filesystem::path& path() const { return path_; }
  const std::string& what() const { return what_; }

 private:
  bool open(bool truncate);
  bool write_all(std::string_view data);
  bool fail(int err, const char* op);

  std::filesystem::path path_;
  std::string what_;
  int fd_ = -1;
  std::string buf_;
  std::uint64_t size_ = 0;
  int errno_ = 0;
  const char* failed_op_ = "";
};

}  // namespace mbo::runtime
