#include "live_inputs.hpp"

#include <spdlog/spdlog.h>

namespace mbo::runtime {

LiveInputs::LiveInputs(boost::asio::io_context& io, const DaemonConfig& cfg, FrameDecoder& decoder) {
  std::uint8_t ch = 0;
  for (const auto& ic : cfg.signals->interfaces()) {
    auto o = io::SocketCanOptions::from(ic, ch, cfg.signals->filter_ids(static_cast<int>(ch)));
    ++ch;
    auto src = std::make_unique<io::SocketCanSource>(
        io, o, [&decoder](const io::CanFrame& f) { decoder.on_frame(f, monotonic_ns()); });
    src->on_fatal = [](const std::string& why) { spdlog::error("{}", why); };
    can_.push_back(std::move(src));
  }
  if (cfg.gnss_serial)
    nmea_ = std::make_unique<io::SerialNmeaSource>(io, *cfg.gnss_serial, [&decoder](std::span<const Measurement> ms) {
      const auto now = monotonic_ns();
      for (const auto& m : ms) decoder.push(m, now);
    });
  if (nmea_) nmea_->on_warning = [](const std::string& why) { spdlog::warn("{}", why); };
  if (can_.empty() && !nmea_)
    throw ConfigError(cfg.file.string() +
                      ": /can/interfaces: live operation needs at least one CAN interface or a \"gnss\" serial port");
}

void LiveInputs::start() {
  for (auto& s : can_) s->start();
  if (nmea_) nmea_->start();
}

void LiveInputs::stop() {
  for (auto& s : can_) s->stop();
  if (nmea_) nmea_->stop();
}

void LiveInputs::add_can_status(StatusRecord& s) const {
  for (const auto& src : can_) {
    const auto h = src->health();
    CanControllerStatus c;
    set_name(c.name, "can");
    c.state = h.controller_state >= 0 && h.controller_state <= 5 ? static_cast<CanState>(h.controller_state)
                                                                 : CanState::unknown;
    c.tx_errors = h.tx_errors;
    c.rx_errors = h.rx_errors;
    c.error_frames = h.error_frames;
    c.restarts = h.bus_off_restarts;
    s.add_can(c);
  }
}

void LiveInputs::add_gnss_status(StatusRecord& s) const {
  if (!nmea_) return;
  const auto h = nmea_->health();
  auto& g = s.gnss_serial;
  g.present = true;
  g.connected = h.connected;
  g.lines = h.lines;
  g.parsed = h.parsed;
  g.unsupported = h.unsupported;
  g.rejected = h.rejected;
  g.overlong = h.overlong;
  g.read_errors = h.read_errors;
  g.reconnects = h.reconnects;
  g.fix_time_stamped = h.fix_time_stamped;
  g.fix_time_unsynchronised = h.fix_time_unsynchronised;
  g.fix_time_untimed = h.fix_time_untimed;
  g.last_fix_age_s = h.last_fix_age_s;
}

}  // namespace mbo::runtime
