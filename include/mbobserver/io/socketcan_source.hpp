// Live CAN frames from a SocketCAN CAN_RAW socket, read with Boost.Asio.
//
// The socket gets kernel receive filters built from the configured ids (CAN_RAW_FILTER), all
// error frames (CAN_RAW_ERR_FILTER), CAN FD frames when enabled (CAN_RAW_FD_FRAMES), a kernel
// receive timestamp per frame (SO_TIMESTAMP, converted to CLOCK_MONOTONIC) and the socket's
// drop counter (SO_RXQ_OVFL). libsocketcan reports the controller state and bus error
// counters, and restarts a bus-off controller when asked to. When the interface goes away
// (USB adapter unplugged, link down) the source closes the socket and reopens it with
// exponential back-off; a kernel without SocketCAN is a permanent failure reported once.
//
// The operating-system side sits behind CanSocketBackend so that tests drive the reading and
// error paths over a socketpair carrying raw struct can_frame / canfd_frame records.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include <linux/can.h>
#include <sys/socket.h>

#include "mbobserver/io/asio.hpp"
#include "mbobserver/io/backoff.hpp"
#include "mbobserver/io/frame_source.hpp"
#include "mbobserver/io/signal_map.hpp"

namespace mbo::io {

struct SocketCanOptions {
  std::string interface;
  std::uint8_t channel = 0;  // stamped into CanFrame::channel
  bool fd = false;
  bool restart_bus_off = false;
  std::vector<CanId> filter_ids;  // empty: every frame
  double reconnect_initial_s = 0.1;
  double reconnect_max_s = 5.0;
  double state_poll_s = 1.0;

  static SocketCanOptions from(const CanInterfaceConfig& c, std::uint8_t channel, std::vector<CanId> ids);
};

// Counters since start(); read them from any thread with SocketCanSource::health().
struct CanHealth {
  std::uint64_t frames = 0;  // delivered, error frames included
  std::uint64_t error_frames = 0;
  std::uint64_t kernel_drops = 0;  // SO_RXQ_OVFL: frames the socket queue dropped
  std::uint64_t bad_records = 0;  // records of a size that is no CAN frame
  std::uint64_t disconnects = 0;
  std::uint64_t reconnects = 0;  // successful opens after a disconnect or failure
  std::uint64_t open_failures = 0;
  std::uint64_t bus_off_restarts = 0;
  int controller_state = -1;  // CAN_STATE_* (linux/can/netlink.h), -1 unknown
  std::uint16_t tx_errors = 0, rx_errors = 0;  // bus error counters
  bool connected = false;
  bool failed = false;  // permanent failure: the source gave up
  std::string last_error;
};

class CanOpenError : public std::runtime_error {
 public:
  CanOpenError(const std::string& message, bool permanent) : std::runtime_error(message), permanent_(permanent) {}
  bool permanent() const { return permanent_; }

 private:
  bool permanent_;
};

struct ControllerStatus {
  int state = -1;
  std::uint16_t tx_errors = 0, rx_errors = 0;
};

class CanSocketBackend {
 public:
  virtual ~CanSocketBackend() = default;
  // A bound, configured, non-blocking socket; throws CanOpenError.
  virtual int open(const SocketCanOptions& options) = 0;
  virtual std::optional<ControllerStatus> controller_status(const std::string& interface) = 0;
  virtual bool restart(const std::string& interface) = 0;
};

// The real thing: socket(PF_CAN, SOCK_RAW, CAN_RAW) and libsocketcan.
std::unique_ptr<CanSocketBackend> make_socketcan_backend();

// Kernel filters for `ids`: exact id match, data frames only, 11/29-bit kept apart.
std::vector<can_filter> kernel_filters(const std::vector<CanId>& ids);

// One record as the kernel delivers it (struct can_frame, CAN_MTU = 16 bytes, or struct
// canfd_frame, CANFD_MTU = 72 bytes) into a CanFrame (t and channel left alone); false for any
// other size or an impossible length.
bool frame_from_record(std::span<const std::uint8_t> record, CanFrame& out);

// SO_TIMESTAMP (CLOCK_REALTIME seconds) and SO_RXQ_OVFL (cumulative drops) of one recvmsg.
struct RxAncillary {
  std::optional<double> realtime_s;
  std::optional<std::uint32_t> drops;
};
RxAncillary parse_ancillary(const msghdr& msg);

// SO_RXQ_OVFL reports a cumulative 32-bit count per socket; this keeps the running total
// across the counter's wrap and across sockets.
class DropCounter {
 public:
  void update(std::uint32_t cumulative) {
    total_ += static_cast<std::uint32_t>(cumulative - last_);  // modulo 2^32
    last_ = cumulative;
  }
  void new_socket() { last_ = 0; }
  std::uint64_t total() const { return total_; }

 private:
  std::uint64_t total_ = 0;
  std::uint32_t last_ = 0;
};

class SocketCanSource : public FrameSource {
 public:
  SocketCanSource(boost::asio::io_context& io, SocketCanOptions options, FrameHandler on_frame,
                  std::unique_ptr<CanSocketBackend> backend = make_socketcan_backend());
  ~SocketCanSource() override;

  void start() override;
  void stop() override;
  CanHealth health() const;

  // Called once, on the io thread, when the source gives up (no SocketCAN in the kernel).
  std::function<void(const std::string&)> on_fatal;

 private:
  void connect();
  void schedule_reconnect();
  void disconnect(const std::string& why);
  void arm();
  void drain();
  void poll_state();
  void set_error(const std::string& e);

  boost::asio::io_context& io_;
  SocketCanOptions options_;
  FrameHandler on_frame_;
  std::unique_ptr<CanSocketBackend> backend_;
  std::optional<boost::asio::posix::stream_descriptor> socket_;
  boost::asio::steady_timer reconnect_timer_;
  boost::asio::steady_timer poll_timer_;
  Backoff backoff_;
  std::shared_ptr<int> alive_ = std::make_shared<int>(0);  // handlers check it first
  std::uint64_t generation_ = 0;  // per socket: stale completions are ignored
  bool running_ = false;
  bool ever_connected_ = false;
  DropCounter drops_;

  struct Counters {
    std::atomic<std::uint64_t> frames{0}, error_frames{0}, kernel_drops{0}, bad_records{0}, disconnects{0},
        reconnects{0}, open_failures{0}, bus_off_restarts{0};
    std::atomic<int> controller_state{-1};
    std::atomic<std::uint16_t> tx_errors{0}, rx_errors{0};
    std::atomic<bool> connected{false}, failed{false};
  } counters_;
  mutable std::mutex error_mutex_;
  std::string last_error_;
};

}  // namespace mbo::io
