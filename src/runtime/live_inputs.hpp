// Live operation's inputs, on the I/O thread: the SocketCAN interfaces of the signal map and
// the optional NMEA serial GNSS, each frame decoded as it arrives (FrameDecoder).
#pragma once

#include <memory>
#include <vector>

#include "frame_decoder.hpp"
#include "mbobserver/io/serial_nmea_source.hpp"
#include "mbobserver/io/socketcan_source.hpp"
#include "mbobserver/runtime/asio.hpp"
#include "mbobserver/runtime/daemon.hpp"

namespace mbo::runtime {

class LiveInputs {
 public:
  // ConfigError when the configuration names no input at all.
  LiveInputs(boost::asio::io_context& io, const DaemonConfig& config, FrameDecoder& decoder);
  void start();
  void stop();
  // The CAN controllers' states and error counters.
  void add_can_status(StatusRecord& s) const;
  // The serial NMEA receiver's counters (nothing when there is none).
  void add_gnss_status(StatusRecord& s) const;

 private:
  std::vector<std::unique_ptr<io::SocketCanSource>> can_;
  std::unique_ptr<io::SerialNmeaSource> nmea_;
};

}  // namespace mbo::runtime
