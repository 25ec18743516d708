// The I/O thread's end of the estimate queue: every record goes to the --record file before
// the publisher decimates, so that the file holds every step; then to the publisher.
//
// A record that cannot be written (a failed write(2), or the file past --record-max-mb) is
// counted lost and logged with the path and errno, once per kind of failure, and `on_failure`
// gets the message. A replay then stops (the daemon exits 1); a live daemon goes on
// publishing, shows the failure in its status datagrams (`outputs`) and tries again with the
// next records (never past the size limit, until SIGHUP gives it a new file).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "mbobserver/runtime/udp_publisher.hpp"
#include "output_file.hpp"

namespace mbo::runtime {

class RecordSink {
 public:
  // Opens the record file (truncated); ConfigError if it cannot be written. `stop_on_failure`:
  // a replay, whose record must hold every step.
  RecordSink(UdpPublisher& publisher, const std::optional<std::filesystem::path>& record_file, std::uint64_t max_bytes,
             bool stop_on_failure, std::function<void(const std::string&)> on_failure);

  // I/O thread: takes every record waiting in the queue.
  void drain(EstimateQueue& queue) {
    queue.drain([this](const EstimateRecord& r) { on_record(r); });
  }
  // I/O thread: writes out what is buffered (the end of the run, a reopen).
  bool flush();
  // I/O thread, SIGHUP: writes out what is buffered and opens the path again, appending (a new
  // file if logrotate moved the old one). False if that failed (counted and logged).
  bool reopen();
  // I/O thread, at the end: flush and close. False if that failed.
  bool close();

  bool recording() const { return file_ != nullptr; }
  std::uint64_t records_written() const { return records_written_; }  // lines that reached the file
  std::uint64_t records_lost() const { return records_lost_; }
  std::uint64_t write_errors() const { return write_errors_; }
  int last_errno() const { return last_errno_; }
  std::uint64_t bytes() const { return file_ ? file_->size() : 0; }
  std::uint64_t reopens() const { return reopens_; }
  bool failed() const { return write_errors_ > 0; }

 private:
  void on_record(const EstimateRecord& r);
  bool write_out();
  void failure(const std::string& message, int err);

  UdpPublisher& publisher_;
  std::unique_ptr<OutputFile> file_;
  std::uint64_t max_bytes_;
  bool stop_on_failure_;
  std::function<void(const std::string&)> on_failure_;
  bool stopped_ = false;  // replay after a failure, or past the size limit: nothing more written
  std::string line_;
  std::uint64_t pending_ = 0;  // records in the file's buffer
  std::uint64_t records_written_ = 0, records_lost_ = 0, write_errors_ = 0, reopens_ = 0;
  int last_errno_ = 0, logged_errno_ = 0;
};

}  // namespace mbo::runtime
