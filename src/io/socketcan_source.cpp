#include "mbobserver/io/socketcan_source.hpp"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>

#include <libsocketcan.h>
#include <linux/can/error.h>
#include <linux/can/netlink.h>
#include <linux/can/raw.h>
#include <net/if.h>
#include <sys/time.h>
#include <unistd.h>

namespace mbo::io {

SocketCanOptions SocketCanOptions::from(const CanInterfaceConfig& c, std::uint8_t channel, std::vector<CanId> ids) {
  SocketCanOptions o;
  o.interface = c.name;
  o.channel = channel;
  o.fd = c.fd;
  o.restart_bus_off = c.restart_bus_off;
  o.filter_ids = std::move(ids);
  o.reconnect_initial_s = c.reconnect_initial_s;
  o.reconnect_max_s = c.reconnect_max_s;
  o.state_poll_s = c.state_poll_s;
  return o;
}

std::vector<can_filter> kernel_filters(const std::vector<CanId>& ids) {
  std::vector<can_filter> out;
  for (const CanId& id : ids) {
    can_filter f{};
    if (id.extended) {
      f.can_id = (id.id & CAN_EFF_MASK) | CAN_EFF_FLAG;
      f.can_mask = CAN_EFF_MASK | CAN_EFF_FLAG | CAN_RTR_FLAG;
    } else {
      f.can_id = id.id & CAN_SFF_MASK;
      f.can_mask = CAN_SFF_MASK | CAN_EFF_FLAG | CAN_RTR_FLAG;
    }
    out.push_back(f);
  }
  return out;
}

bool frame_from_record(std::span<const std::uint8_t> record, CanFrame& out) {
  canid_t id;
  std::uint8_t len, flags = 0;
  const std::uint8_t* data;
  bool fd;
  if (record.size() == CAN_MTU) {
    can_frame cf;
    std::memcpy(&cf, record.data(), sizeof cf);
    id = cf.can_id;
    len = cf.len;
    if (len > CAN_MAX_DLEN) return false;
    data = record.data() + offsetof(can_frame, data);
    fd = false;
  } else if (record.size() == CANFD_MTU) {
    canfd_frame cf;
    std::memcpy(&cf, record.data(), sizeof cf);
    id = cf.can_id;
    len = cf.len;
    flags = cf.flags;
    if (len > CANFD_MAX_DLEN) return false;
    data = record.data() + offsetof(canfd_frame, data);
    fd = true;
  } else {
    return false;
  }
  CanFrame f;
  f.t = out.t;
  f.channel = out.channel;
  f.error = (id & CAN_ERR_FLAG) != 0;
  f.extended = !f.error && (id & CAN_EFF_FLAG) != 0;
  f.remote = !f.error && (id & CAN_RTR_FLAG) != 0;
  f.id = f.error ? (id & CAN_ERR_MASK) : (f.extended ? id & CAN_EFF_MASK : id & CAN_SFF_MASK);
  f.fd = fd && !f.error;
  f.brs = f.fd && (flags & CANFD_BRS);
  f.esi = f.fd && (flags & CANFD_ESI);
  f.len = len;
  if (!f.remote) std::memcpy(f.data.data(), data, len);
  out = f;
  return true;
}

RxAncillary parse_ancillary(const msghdr& msg) {
  RxAncillary a;
  for (const cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(const_cast<msghdr*>(&msg), const_cast<cmsghdr*>(c))) {
    if (c->cmsg_level != SOL_SOCKET) continue;
    if (c->cmsg_type == SO_TIMESTAMP && c->cmsg_len >= CMSG_LEN(sizeof(timeval))) {
      timeval tv;
      std::memcpy(&tv, CMSG_DATA(c), sizeof tv);
      a.realtime_s = static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) * 1e-6;
    } else if (c->cmsg_type == SO_RXQ_OVFL && c->cmsg_len >= CMSG_LEN(sizeof(std::uint32_t))) {
      std::uint32_t d;
      std::memcpy(&d, CMSG_DATA(c), sizeof d);
      a.drops = d;
    }
  }
  return a;
}

namespace {

double clock_s(clockid_t id) {
  timespec ts;
  clock_gettime(id, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

class LinuxBackend : public CanSocketBackend {
 public:
  int open(const SocketCanOptions& o) override {
    const std::string& name = o.interface;
    int fd = ::socket(PF_CAN, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, CAN_RAW);
    if (fd < 0) {
      const int e = errno;
      if (e == EAFNOSUPPORT || e == EPROTONOSUPPORT)
        throw CanOpenError(name + ": cannot open a CAN_RAW socket: " + std::strerror(e) +
                               " (this kernel has no SocketCAN support: load the can and can_raw "
                               "modules)",
                           true);
      throw CanOpenError(name + ": cannot open a CAN_RAW socket: " + std::strerror(e), false);
    }
    auto fail = [&](const std::string& what, bool permanent) {
      const int e = errno;
      ::close(fd);
      throw CanOpenError(name + ": " + what + ": " + std::strerror(e), permanent);
    };
    const unsigned index = if_nametoindex(name.c_str());
    if (index == 0) fail("no such network interface", false);
    auto filters = kernel_filters(o.filter_ids);
    if (!filters.empty() && filters.size() <= CAN_RAW_FILTER_MAX &&
        setsockopt(fd, SOL_CAN_RAW, CAN_RAW_FILTER, filters.data(),
                   static_cast<socklen_t>(filters.size() * sizeof(can_filter))) < 0)
      fail("cannot set CAN_RAW_FILTER", true);
    can_err_mask_t err_mask = CAN_ERR_MASK;
    if (setsockopt(fd, SOL_CAN_RAW, CAN_RAW_ERR_FILTER, &err_mask, sizeof err_mask) < 0)
      fail("cannot set CAN_RAW_ERR_FILTER", true);
    const int one = 1;
    if (o.fd && setsockopt(fd, SOL_CAN_RAW, CAN_RAW_FD_FRAMES, &one, sizeof one) < 0)
      fail("cannot enable CAN FD frames (CAN_RAW_FD_FRAMES)", true);
    if (setsockopt(fd, SOL_SOCKET, SO_TIMESTAMP, &one, sizeof one) < 0) fail("cannot enable SO_TIMESTAMP", true);
    if (setsockopt(fd, SOL_SOCKET, SO_RXQ_OVFL, &one, sizeof one) < 0) fail("cannot enable SO_RXQ_OVFL", true);
    sockaddr_can addr{};
    addr.can_family = AF_CAN;
    addr.can_ifindex = static_cast<int>(index);
    if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) < 0) fail("cannot bind", false);
    return fd;
  }

  std::optional<ControllerStatus> controller_status(const std::string& interface) override {
    ControllerStatus s;
    int state = 0;
    if (can_get_state(interface.c_str(), &state) != 0) return std::nullopt;
    s.state = state;
    can_berr_counter bc{};
    if (can_get_berr_counter(interface.c_str(), &bc) == 0) {
      s.tx_errors = bc.txerr;
      s.rx_errors = bc.rxerr;
    }
    return s;
  }

  bool restart(const std::string& interface) override { return can_do_restart(interface.c_str()) == 0; }
};

std::chrono::steady_clock::duration seconds(double s) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(s));
}

}  // namespace

std::unique_ptr<CanSocketBackend> make_socketcan_backend() { return std::make_unique<LinuxBackend>(); }

SocketCanSource::SocketCanSource(boost::asio::io_context& io, SocketCanOptions options, FrameHandler on_frame,
                                 std::unique_ptr<CanSocketBackend> backend)
    : io_(io),
      options_(std::move(options)),
      on_frame_(std::move(on_frame)),
      backend_(std::move(backend)),
      reconnect_timer_(io),
      poll_timer_(io),
      backoff_(options_.reconnect_initial_s, options_.reconnect_max_s) {}

SocketCanSource::~SocketCanSource() {
  alive_.reset();
  stop();
}

void SocketCanSource::start() {
  if (running_) return;
  running_ = true;
  connect();
  if (running_) poll_state();
}

void SocketCanSource::stop() {
  running_ = false;
  ++generation_;
  reconnect_timer_.cancel();
  poll_timer_.cancel();
  socket_.reset();  // cancels the pending wait and closes the socket
  counters_.connected = false;
}

CanHealth SocketCanSource::health() const {
  CanHealth h;
  h.frames = counters_.frames;
  h.error_frames = counters_.error_frames;
  h.kernel_drops = counters_.kernel_drops;
  h.bad_records = counters_.bad_records;
  h.disconnects = counters_.disconnects;
  h.reconnects = counters_.reconnects;
  h.open_failures = counters_.open_failures;
  h.bus_off_restarts = counters_.bus_off_restarts;
  h.controller_state = counters_.controller_state;
  h.tx_errors = counters_.tx_errors;
  h.rx_errors = counters_.rx_errors;
  h.connected = counters_.connected;
  h.failed = counters_.failed;
  std::lock_guard lock(error_mutex_);
  h.last_error = last_error_;
  return h;
}

void SocketCanSource::set_error(const std::string& e) {
  std::lock_guard lock(error_mutex_);
  last_error_ = e;
}

void SocketCanSource::connect() {
  int fd;
  try {
    fd = backend_->open(options_);
  } catch (const CanOpenError& e) {
    ++counters_.open_failures;
    set_error(e.what());
    if (e.permanent()) {
      counters_.failed = true;
      stop();
      if (on_fatal) on_fatal(e.what());
      return;
    }
    schedule_reconnect();
    return;
  }
  socket_.emplace(io_, fd);
  ++generation_;
  drops_.new_socket();  // the kernel's counter starts again with each socket
  if (ever_connected_ || counters_.open_failures > 0) ++counters_.reconnects;
  ever_connected_ = true;
  counters_.connected = true;
  backoff_.reset();
  arm();
}

void SocketCanSource::schedule_reconnect() {
  if (!running_) return;
  reconnect_timer_.expires_after(seconds(backoff_.next()));
  reconnect_timer_.async_wait([this, alive = std::weak_ptr<int>(alive_)](boost::system::error_code ec) {
    if (alive.expired() || ec || !running_) return;
    connect();
  });
}

void SocketCanSource::disconnect(const std::string& why) {
  ++counters_.disconnects;
  counters_.connected = false;
  set_error(options_.interface + ": " + why);
  ++generation_;
  socket_.reset();
  schedule_reconnect();
}

void SocketCanSource::arm() {
  socket_->async_wait(boost::asio::posix::stream_descriptor::wait_read,
                      [this, alive = std::weak_ptr<int>(alive_), gen = generation_](boost::system::error_code ec) {
                        if (alive.expired() || !running_ || gen != generation_) return;
                        if (ec) {
                          disconnect(ec.message());
                          return;
                        }
                        drain();
                      });
}

void SocketCanSource::drain() {
  const int fd = socket_->native_handle();
  // Kernel timestamps are CLOCK_REALTIME; measurements use CLOCK_MONOTONIC. One offset per
  // wake-up is enough: the two clocks drift apart by microseconds per second at most.
  const double realtime_to_monotonic = clock_s(CLOCK_MONOTONIC) - clock_s(CLOCK_REALTIME);
  alignas(canfd_frame) std::uint8_t buf[CANFD_MTU + 1];
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(timeval)) + CMSG_SPACE(sizeof(std::uint32_t)) + 64];
  const std::uint64_t gen = generation_;
  // A bounded batch per wake-up keeps other handlers on this io_context responsive.
  for (int i = 0; i < 256; ++i) {
    iovec iov{buf, sizeof buf};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    const ssize_t n = ::recvmsg(fd, &msg, MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      if (errno == EINTR) continue;
      disconnect(std::string("read failed: ") + std::strerror(errno));  // ENETDOWN, ENODEV, ...
      return;
    }
    if (n == 0) {
      disconnect("socket closed");
      return;
    }
    const RxAncillary anc = parse_ancillary(msg);
    if (anc.drops) {
      drops_.update(*anc.drops);
      counters_.kernel_drops = drops_.total();
    }
    CanFrame f;
    f.channel = options_.channel;
    f.t = anc.realtime_s ? *anc.realtime_s + realtime_to_monotonic : clock_s(CLOCK_MONOTONIC);
    if ((msg.msg_flags & MSG_TRUNC) || !frame_from_record(std::span(buf, static_cast<std::size_t>(n)), f)) {
      ++counters_.bad_records;
      continue;
    }
    ++counters_.frames;
    if (f.error) ++counters_.error_frames;
    if (on_frame_) on_frame_(f);
    if (!running_ || gen != generation_) return;  // the handler stopped us
  }
  arm();
}

void SocketCanSource::poll_state() {
  if (!running_) return;
  // Only while the socket is open: for an interface that is not there, libsocketcan has
  // nothing to say (and says so on stderr).
  if (!counters_.connected) {
    counters_.controller_state = -1;
  } else if (auto s = backend_->controller_status(options_.interface)) {
    counters_.controller_state = s->state;
    counters_.tx_errors = s->tx_errors;
    counters_.rx_errors = s->rx_errors;
    if (s->state == CAN_STATE_BUS_OFF && options_.restart_bus_off && backend_->restart(options_.interface))
      ++counters_.bus_off_restarts;
  } else {
    counters_.controller_state = -1;
  }
  poll_timer_.expires_after(seconds(options_.state_poll_s));
  poll_timer_.async_wait([this, alive = std::weak_ptr<int>(alive_)](boost::system::error_code ec) {
    if (alive.expired() || ec || !running_) return;
    poll_state();
  });
}

}  // namespace mbo::io
