// GNSS measurements from NMEA 0183 on a serial port (Boost.Asio serial_port, 8N1, no flow
// control, configurable baud). Sentences are assembled from the byte stream, parsed and
// turned into measurements stamped with CLOCK_MONOTONIC at the end of the line's read; the
// receiver's own latency (position valid at the UTC time inside the sentence, sent later) is
// then the estimator's to model (observer.gnss.latency_s or its estimate). With "stamp":
// "fix_time" and the host clock on GNSS time, each is stamped at its fix instead
// (NmeaFixTimeStamper). A device that disappears is reopened with back-off.
//
// Config ("gnss" section of the daemon config):
//   {"device": "/dev/ttyACM0", "baud": 115200, "require_checksum": true,
//    "position_from": "gga" | "rmc", "velocity_from": "rmc" | "vtg",
//    "stamp": "arrival" | "fix_time", "max_fix_age_s": 1.0,
//    "reconnect_initial_s": 0.5, "reconnect_max_s": 5.0}
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "mbobserver/core/json_reader.hpp"
#include "mbobserver/core/measurement.hpp"
#include "mbobserver/io/asio.hpp"
#include "mbobserver/io/backoff.hpp"
#include "mbobserver/io/nmea.hpp"

namespace mbo::io {

struct SerialNmeaOptions {
  std::string device;
  unsigned baud = 9600;
  NmeaOptions nmea;
  NmeaChannelOptions channels;
  double reconnect_initial_s = 0.5;
  double reconnect_max_s = 5.0;
  bool stamp_fix_time = false;  // "stamp": "fix_time"
  double max_fix_age_s = 1.0;  // s: an older (or negative) age says the clocks disagree
  std::size_t max_line = 256;  // longer lines are dropped (a receiver's lines are < 100)
};

// Reads the "gnss" section; ConfigError naming file and pointer on any mistake.
SerialNmeaOptions read_gnss_serial_config(const JsonReader& gnss);

struct NmeaHealth {
  std::uint64_t lines = 0;
  std::uint64_t parsed = 0;
  std::uint64_t unsupported = 0;  // valid sentences of other types (GSV, GSA, ...)
  std::uint64_t rejected = 0;  // bad checksum, malformed fields, ...
  std::uint64_t overlong = 0;
  std::uint64_t read_errors = 0;
  std::uint64_t reconnects = 0;
  std::uint64_t open_failures = 0;
  bool connected = false;
  // "stamp": "fix_time": timed sentences stamped at their fix; those dropped because their age
  // said the host clock is not on GNSS time, and untimed ones (VTG) dropped with no timed
  // sentence of their epoch before them; the last age found (NaN: none yet)
  std::uint64_t fix_time_stamped = 0;
  std::uint64_t fix_time_unsynchronised = 0;
  std::uint64_t fix_time_untimed = 0;
  double last_fix_age_s = std::numeric_limits<double>::quiet_NaN();
  std::string last_error;
  std::string last_rejected;  // "reason: sentence"
};

// Splits a byte stream into lines and feeds them to the NMEA parser; separate from the port
// so that the assembly and counting are testable byte by byte.
class NmeaLineAssembler {
 public:
  using LineHandler = std::function<void(std::string_view)>;
  NmeaLineAssembler(std::size_t max_line, LineHandler on_line) : max_line_(max_line), on_line_(std::move(on_line)) {}
  void feed(std::span<const char> bytes);
  void reset();
  std::uint64_t overlong() const { return overlong_; }

 private:
  std::size_t max_line_;
  LineHandler on_line_;
  std::string line_;
  bool discarding_ = false;
  std::uint64_t overlong_ = 0;
};

class SerialNmeaSource {
 public:
  using MeasurementHandler = std::function<void(std::span<const Measurement>)>;
  SerialNmeaSource(boost::asio::io_context& io, SerialNmeaOptions options, MeasurementHandler on_measurements);
  ~SerialNmeaSource();

  void start();
  void stop();
  NmeaHealth health() const;
  // Told when the fixes' time stops or starts agreeing with the host clock ("stamp": "fix_time"):
  // once per change, not per sentence.
  std::function<void(const std::string&)> on_warning;

 private:
  void open();
  void schedule_reopen();
  void read();
  void on_line(std::string_view line);
  std::optional<double> stamp_at_fix(const NmeaSentence& s);

  SerialNmeaOptions options_;
  MeasurementHandler on_measurements_;
  boost::asio::serial_port port_;
  boost::asio::steady_timer timer_;
  Backoff backoff_;
  NmeaLineAssembler assembler_;
  std::array<char, 512> buf_{};
  std::shared_ptr<int> alive_ = std::make_shared<int>(0);
  bool running_ = false;
  bool ever_open_ = false;
  double line_time_ = 0, line_utc_ = 0;  // the line's read: CLOCK_MONOTONIC and CLOCK_REALTIME
  NmeaFixTimeStamper stamper_;
  int clock_agreement_ = 0;  // +1: the last timed sentence's age was plausible, -1: it was not
  mutable std::mutex mutex_;  // guards health_ (read from other threads)
  NmeaHealth health_;
};

}  // namespace mbo::io
