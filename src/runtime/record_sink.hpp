// The I/O thread's end of the estimate queue: every record goes to the --record file before
// the publisher decimates, so that the file holds every step; then to the publisher.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "mbobserver/runtime/udp_publisher.hpp"

namespace mbo::runtime {

class RecordSink {
 public:
  // Opens the record file (truncated); ConfigError if it cannot be written.
  RecordSink(UdpPublisher& publisher, const std::optional<std::filesystem::path>& record_file);

  // I/O thread: takes every record waiting in the queue.
  void drain(EstimateQueue& queue) {
    queue.drain([this](const EstimateRecord& r) { on_record(r); });
  }
  std::uint64_t records_written() const { return records_written_; }

 private:
  void on_record(const EstimateRecord& r);

  UdpPublisher& publisher_;
  std::ofstream file_;
  std::string line_;
  std::uint64_t records_written_ = 0;
};

}  // namespace mbo::runtime
