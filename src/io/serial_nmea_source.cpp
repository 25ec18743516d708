#include "mbobserver/io/serial_nmea_source.hpp"

#include <chrono>
#include <cstdio>
#include <ctime>

namespace mbo::io {

namespace {

double clock_s(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

}  // namespace

SerialNmeaOptions read_gnss_serial_config(const JsonReader& gnss) {
  SerialNmeaOptions o;
  o.device = gnss.string("device");
  if (o.device.empty()) gnss.at("device").fail("must not be empty");
  // It may be plugged in later (the source reconnects), but a folder never becomes a port.
  std::error_code ec;
  if (std::filesystem::is_directory(o.device, ec))
    gnss.at("device").fail(o.device + ": is a folder, not a serial port");
  const long long b = gnss.integer("baud", 1, 4'000'000, 9600);
  switch (b) {
    case 4800:
    case 9600:
    case 19200:
    case 38400:
    case 57600:
    case 115200:
    case 230400:
    case 460800:
    case 921600:
      break;
    default:
      gnss.at("baud").fail(
          "not a standard rate (4800, 9600, 19200, 38400, 57600, 115200, "
          "230400, 460800, 921600)");
  }
  o.baud = static_cast<unsigned>(b);
  o.nmea.require_checksum = gnss.boolean("require_checksum", true);
  o.channels.position_from_rmc = gnss.choice("position_from", {"gga", "rmc"}, "gga") == "rmc";
  o.channels.velocity_from_vtg = gnss.choice("velocity_from", {"rmc", "vtg"}, "rmc") == "vtg";
  o.stamp_fix_time = gnss.choice("stamp", {"arrival", "fix_time"}, "arrival") == "fix_time";
  o.max_fix_age_s = gnss.positive_up_to("max_fix_age_s", 10, o.max_fix_age_s);
  o.reconnect_initial_s = gnss.positive_up_to("reconnect_initial_s", 3600, 0.5);
  o.reconnect_max_s = gnss.positive_up_to("reconnect_max_s", 3600, 5.0);
  gnss.finish();
  return o;
}

void NmeaLineAssembler::feed(std::span<const char> bytes) {
  for (char c : bytes) {
    if (c == '\n') {
      if (discarding_) {
        discarding_ = false;
      } else {
        on_line_(line_);
      }
      line_.clear();
      continue;
    }
    if (discarding_) continue;
    if (line_.size() >= max_line_) {
      ++overlong_;
      discarding_ = true;
      line_.clear();
      continue;
    }
    line_.push_back(c);
  }
}

void NmeaLineAssembler::reset() {
  line_.clear();
  discarding_ = false;
}

SerialNmeaSource::SerialNmeaSource(boost::asio::io_context& io, SerialNmeaOptions options,
                                   MeasurementHandler on_measurements)
    : options_(std::move(options)),
      on_measurements_(std::move(on_measurements)),
      port_(io),
      timer_(io),
      backoff_(options_.reconnect_initial_s, options_.reconnect_max_s),
      assembler_(options_.max_line, [this](std::string_view l) { on_line(l); }),
      stamper_(options_.max_fix_age_s) {
  line_time_ = 0;
}

SerialNmeaSource::~SerialNmeaSource() {
  alive_.reset();
  stop();
}

void SerialNmeaSource::start() {
  if (running_) return;
  running_ = true;
  open();
}

void SerialNmeaSource::stop() {
  running_ = false;
  timer_.cancel();
  boost::system::error_code ignored;
  port_.close(ignored);
  std::lock_guard lock(mutex_);
  health_.connected = false;
}

NmeaHealth SerialNmeaSource::health() const {
  std::lock_guard lock(mutex_);
  NmeaHealth h = health_;
  h.overlong = assembler_.overlong();
  return h;
}

void SerialNmeaSource::open() {
  namespace asio = boost::asio;
  boost::system::error_code ec;
  port_.open(options_.device, ec);
  if (!ec) port_.set_option(asio::serial_port_base::baud_rate(options_.baud), ec);
  if (!ec) port_.set_option(asio::serial_port_base::character_size(8), ec);
  if (!ec) port_.set_option(asio::serial_port_base::parity(asio::serial_port_base::parity::none), ec);
  if (!ec) port_.set_option(asio::serial_port_base::stop_bits(asio::serial_port_base::stop_bits::one), ec);
  if (!ec) port_.set_option(asio::serial_port_base::flow_control(asio::serial_port_base::flow_control::none), ec);
  {
    std::lock_guard lock(mutex_);
    if (ec) {
      ++health_.open_failures;
      health_.last_error = options_.device + ": cannot open: " + ec.message();
    } else {
      if (ever_open_ || health_.open_failures > 0) ++health_.reconnects;
      health_.connected = true;
    }
  }
  if (ec) {
    boost::system::error_code ignored;
    port_.close(ignored);
    schedule_reopen();
    return;
  }
  ever_open_ = true;
  backoff_.reset();
  assembler_.reset();
  read();
}

void SerialNmeaSource::schedule_reopen() {
  if (!running_) return;
  timer_.expires_after(
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(backoff_.next())));
  timer_.async_wait([this, alive = std::weak_ptr<int>(alive_)](boost::system::error_code ec) {
    if (alive.expired() || ec || !running_) return;
    open();
  });
}

void SerialNmeaSource::read() {
  port_.async_read_some(boost::asio::buffer(buf_),
                        [this, alive = std::weak_ptr<int>(alive_)](boost::system::error_code ec, std::size_t n) {
                          if (alive.expired() || !running_) return;
                          if (ec) {
                            {
                              std::lock_guard lock(mutex_);
                              ++health_.read_errors;
                              health_.connected = false;
                              health_.last_error = options_.device + ": read failed: " + ec.message();
                            }
                            boost::system::error_code ignored;
                            port_.close(ignored);
                            schedule_reopen();
                            return;
                          }
                          line_time_ = clock_s(CLOCK_MONOTONIC);
                          line_utc_ = clock_s(CLOCK_REALTIME);
                          assembler_.feed(std::span<const char>(buf_.data(), n));
                          if (running_) read();
                        });
}

void SerialNmeaSource::on_line(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (line.empty()) return;
  NmeaSentence s;
  const NmeaResult r = parse_nmea(line, s, options_.nmea);
  {
    std::lock_guard lock(mutex_);
    ++health_.lines;
    switch (r.status) {
      case NmeaStatus::parsed:
        ++health_.parsed;
        break;
      case NmeaStatus::unsupported:
        ++health_.unsupported;
        break;
      case NmeaStatus::rejected:
        ++health_.rejected;
        health_.last_rejected = std::string(r.reason) + ": " + std::string(line.substr(0, 100));
        break;
    }
  }
  if (r.status != NmeaStatus::parsed) return;
  double stamp = line_time_;
  if (options_.stamp_fix_time) {
    const auto at_fix = stamp_at_fix(s);
    if (!at_fix) return;  // its time cannot be had: counted, not fused as if on time
    stamp = *at_fix;
  }
  std::array<Measurement, 8> m;
  const std::size_t n = nmea_measurements(s, stamp, options_.channels, m);
  if (n > 0 && on_measurements_) on_measurements_(std::span<const Measurement>(m.data(), n));
}

std::optional<double> SerialNmeaSource::stamp_at_fix(const NmeaSentence& s) {
  const auto stamp = stamper_.stamp(s, line_time_, line_utc_);
  if (!nmea_fix_time_of_day(s)) {
    std::lock_guard lock(mutex_);
    health_.fix_time_untimed = stamper_.untimed();
    return stamp;
  }
  const double age = stamper_.last_age_s();
  const bool agrees = stamper_.last_agreed();
  std::string warning;
  {
    std::lock_guard lock(mutex_);
    health_.fix_time_stamped = stamper_.stamped();
    health_.fix_time_unsynchronised = stamper_.unsynchronised();
    health_.fix_time_untimed = stamper_.untimed();
    health_.last_fix_age_s = age;
    if (agrees != (clock_agreement_ > 0)) {
      char buf[200];
      if (agrees)
        std::snprintf(buf, sizeof buf, "%s: fixes stamped at their own time again (age %.3f s)",
                      options_.device.c_str(), age);
      else
        std::snprintf(buf, sizeof buf,
                      "%s: a fix's UTC time is %.3f s from the system clock's, outside [0, %g] s: the "
                      "receiver's sentences are dropped while it lasts (is the host clock on GNSS time? "
                      "chrony with gpsd)",
                      options_.device.c_str(), age, options_.max_fix_age_s);
      warning = buf;
      if (!agrees) health_.last_error = warning;
    }
  }
  const int was = clock_agreement_;
  clock_agreement_ = agrees ? 1 : -1;
  // the first agreement is the normal start, not worth a warning
  if (!warning.empty() && !(agrees && was == 0) && on_warning) on_warning(warning);
  return stamp;
}

}  // namespace mbo::io
