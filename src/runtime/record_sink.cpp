#include "record_sink.hpp"

#include "mbobserver/core/json_reader.hpp"

namespace mbo::runtime {

RecordSink::RecordSink(UdpPublisher& publisher, const std::optional<std::filesystem::path>& record_file)
    : publisher_(publisher) {
  line_.reserve(4096);
  if (record_file) {
    file_.open(*record_file, std::ios::binary | std::ios::trunc);
    if (!file_) throw ConfigError(record_file->string() + ": cannot write");
  }
}

void RecordSink::on_record(const EstimateRecord& r) {
  if (file_.is_open()) {
    write_estimate_json(r, line_, JsonOptions{false});  // no wall clock: byte-identical replays
    line_ += '\n';
    file_.write(line_.data(), static_cast<std::streamsize>(line_.size()));
    ++records_written_;
  }
  publisher_.on_record(r);
}

}  // namespace mbo::runtime
