#include "record_sink.hpp"

#include <cerrno>

#include <spdlog/spdlog.h>

namespace mbo::runtime {

namespace {
// About three records: the file is as far behind the estimator as an ofstream's would be.
constexpr std::size_t kFlushBytes = 8192;
}  // namespace

RecordSink::RecordSink(UdpPublisher& publisher, const std::optional<std::filesystem::path>& record_file,
                       std::uint64_t max_bytes, bool stop_on_failure,
                       std::function<void(const std::string&)> on_failure)
    : publisher_(publisher),
      max_bytes_(max_bytes),
      stop_on_failure_(stop_on_failure),
      on_failure_(std::move(on_failure)) {
  line_.reserve(4096);
  if (record_file) file_ = std::make_unique<OutputFile>(*record_file, "record");  // ConfigError if not writable
}

void RecordSink::failure(const std::string& message, int err) {
  ++write_errors_;
  last_errno_ = err;
  if (stop_on_failure_ ? write_errors_ == 1 : err != logged_errno_) {
    spdlog::error("{}; {}", message,
                  stop_on_failure_ ? "the replay stops (exit code 1)"
                                   : "counted, the estimates lost, publishing goes on (outputs in the status)");
    logged_errno_ = err;
    if (on_failure_) on_failure_(message);
  }
  if (stop_on_failure_) stopped_ = true;
}

bool RecordSink::write_out() {
  if (file_->buffered() == 0) return true;
  if (file_->flush()) {
    records_written_ += pending_;
    pending_ = 0;
    if (logged_errno_ != 0 && !stop_on_failure_) {
      spdlog::info("record {}: writing works again ({} records lost so far)", file_->path().string(), records_lost_);
      logged_errno_ = 0;
    }
    return true;
  }
  records_lost_ += pending_;
  pending_ = 0;
  failure(file_->error_message(), file_->error());
  return false;
}

void RecordSink::on_record(const EstimateRecord& r) {
  if (file_ && stopped_) {
    ++records_lost_;
  } else if (file_) {
    write_estimate_json(r, line_, JsonOptions{false});  // no wall clock: byte-identical replays
    line_ += '\n';
    if (file_->size() + file_->buffered() + line_.size() > max_bytes_) {
      write_out();
      ++records_lost_;
      if (!stopped_)
        failure("record " + file_->path().string() + ": the file would pass --record-max-mb (" +
                    std::to_string(max_bytes_ >> 20) + " MiB): recording stops",
                EFBIG);
      stopped_ = true;  // until a reopen gives a new file
    } else {
      if (file_->buffered() + line_.size() > kFlushBytes) write_out();
      if (!stopped_ && file_->write(line_))
        ++pending_;
      else
        ++records_lost_;
    }
  }
  publisher_.on_record(r);
}

bool RecordSink::flush() { return !file_ || write_out(); }

bool RecordSink::reopen() {
  if (!file_) return true;
  ++reopens_;
  const bool flushed = write_out();
  records_lost_ += pending_;  // none after a write-out; a failed close loses nothing more
  pending_ = 0;
  if (!file_->reopen()) {
    failure(file_->error_message(), file_->error());
    return false;
  }
  if (!stop_on_failure_ || !failed()) stopped_ = false;  // a live daemon records again in the new file
  spdlog::info("record {}: reopened ({} bytes)", file_->path().string(), file_->size());
  return flushed;
}

bool RecordSink::close() {
  if (!file_) return true;
  const bool flushed = (stopped_ && stop_on_failure_) || write_out();
  if (!file_->close()) {
    failure(file_->error_message(), file_->error());
    return false;
  }
  return flushed;
}

}  // namespace mbo::runtime
