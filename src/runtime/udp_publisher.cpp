#include "mbobserver/runtime/udp_publisher.hpp"

#include <cmath>
#include <stdexcept>

#include <net/if.h>
#include <netinet/in.h>
#include <spdlog/spdlog.h>

#include "mbobserver/runtime/fixed_step_clock.hpp"

namespace mbo::runtime {

namespace asio = boost::asio;
using asio::ip::udp;

std::uint64_t decimation_for(double rate_hz, double step_s) noexcept {
  if (!(rate_hz > 0) || !(step_s > 0)) return 1;
  // The small tolerance keeps 100 Hz at a 2 ms step at 5, not 6 through rounding.
  const double n = std::ceil(1.0 / (rate_hz * step_s) - 1e-9);
  return n < 1 ? 1 : static_cast<std::uint64_t>(n);
}

UdpPublisher::UdpPublisher(asio::io_context& io, const PublishConfig& config, double step_s, JsonOptions json)
    : io_(io),
      config_(config),
      json_(json),
      decimation_(decimation_for(config.rate_hz, step_s)),
      status_timer_(io),
      started_(std::chrono::steady_clock::now()) {
  buffer_.reserve(8192);
  if (config_.enabled) open_socket();
}

UdpPublisher::~UdpPublisher() {
  boost::system::error_code ec;
  status_timer_.cancel(ec);
}

void UdpPublisher::open_socket() {
  const std::string where = "publish to " + config_.address + ":" + std::to_string(config_.port);
  boost::system::error_code ec;
  const auto address = asio::ip::make_address(config_.address, ec);
  if (ec) throw std::runtime_error(where + ": not an IP address");
  destination_ = udp::endpoint(address, config_.port);
  socket_ = std::make_unique<udp::socket>(io_);
  socket_->open(destination_.protocol(), ec);
  if (ec) throw std::runtime_error(where + ": socket: " + ec.message());
  // A full send buffer must cost one datagram, never block the I/O thread.
  socket_->non_blocking(true, ec);

  if (address.is_multicast()) {
    socket_->set_option(asio::ip::multicast::hops(config_.multicast.ttl), ec);
    if (ec) throw std::runtime_error(where + ": multicast TTL: " + ec.message());
    socket_->set_option(asio::ip::multicast::enable_loopback(config_.multicast.loopback), ec);
    if (ec) throw std::runtime_error(where + ": multicast loopback: " + ec.message());
    const std::string& itf = config_.multicast.interface;
    if (!itf.empty()) {
      const auto itf_address = asio::ip::make_address(itf, ec);
      if (!ec) {
        socket_->set_option(asio::ip::multicast::outbound_interface(itf_address.to_v4()), ec);
      } else {
        ec.clear();  // not an address: a name
        const unsigned index = ::if_nametoindex(itf.c_str());
        if (index == 0) throw std::runtime_error(where + ": no network interface \"" + itf + "\"");
        if (address.is_v6()) {
          socket_->set_option(asio::ip::multicast::outbound_interface(index), ec);
        } else {
          // Asio's outbound_interface(unsigned) only applies to IPv6; IPv4 by index needs
          // struct ip_mreqn (ip(7), IP_MULTICAST_IF).
          ip_mreqn req{};
          req.imr_ifindex = static_cast<int>(index);
          if (::setsockopt(socket_->native_handle(), IPPROTO_IP, IP_MULTICAST_IF, &req, sizeof req) != 0)
            ec.assign(errno, boost::system::system_category());
        }
      }
      if (ec) throw std::runtime_error(where + ": multicast interface \"" + itf + "\": " + ec.message());
    }
  }
  spdlog::info("publishing to {}:{} ({}), at most {} Hz (one step in {}), status every {} s", config_.address,
               config_.port, address.is_multicast() ? "multicast" : "unicast", config_.rate_hz, decimation_,
               config_.status_period_s);
}

void UdpPublisher::start(EstimateQueue& queue, EventWakeup& wakeup, StatusFiller fill) {
  queue_ = &queue;
  wakeup_ = &wakeup;
  fill_ = std::move(fill);
  running_ = true;
  wakeup.async_watch(io_, [this] { queue_->drain([this](const EstimateRecord& r) { on_record(r); }); });
  // Records pushed before start() are not waiting for a notification: take them now.
  queue.drain([this](const EstimateRecord& r) { on_record(r); });
  next_status_ = std::chrono::steady_clock::now();
  arm_status_timer();
}

void UdpPublisher::start_status(StatusFiller fill) {
  fill_ = std::move(fill);
  running_ = true;
  next_status_ = std::chrono::steady_clock::now();
  arm_status_timer();
}

void UdpPublisher::arm_status_timer() {
  // Absolute schedule: a late timer does not shift the following ones.
  next_status_ += std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(config_.status_period_s));
  status_timer_.expires_at(next_status_);
  status_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || !running_) return;
    send_status();
    arm_status_timer();
  });
}

void UdpPublisher::stop() {
  if (!running_) return;
  running_ = false;
  boost::system::error_code ec;
  status_timer_.cancel(ec);
  if (wakeup_) wakeup_->cancel();
  if (queue_) queue_->drain([this](const EstimateRecord& r) { on_record(r); });
  send_status();
}

void UdpPublisher::on_record(const EstimateRecord& record) {
  ++counters_.records;
  frame_to_step_.record_us(record.frame_to_step_us);
  step_compute_.record_us(record.step_compute_us);
  wakeup_lateness_.record_us(record.wakeup_lateness_us);
  valid_steps_ += record.valid;
  for (std::size_t b = 0; b < faults_steps_.size(); ++b) faults_steps_[b] += (record.faults >> b) & 1u;
  last_ = record;
  have_last_ = true;
  if (record.seq % decimation_ != 0) {
    ++counters_.decimated;
    return;
  }
  if (!socket_) return;  // publishing disabled: records are still counted and measured
  EstimateRecord r = record;
  if (r.step_end_mono_ns > 0) {
    const std::int64_t ns = monotonic_ns() - r.step_end_mono_ns;
    r.step_to_send_us = static_cast<double>(ns) * 1e-3;
    step_to_send_.record_ns(ns);
  }
  write_estimate_json(r, buffer_, json_);
  if (send(buffer_)) ++counters_.estimates_sent;
}

StatusRecord UdpPublisher::make_status() {
  StatusRecord s;
  s.seq = status_seq_;
  s.t_wall = wall_clock_s();
  s.uptime_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  if (have_last_) {
    s.t = last_.t;
    s.resets = last_.resets;
    s.valid = last_.valid;
    s.faults = last_.faults;
    s.sensors = last_.sensors;
    s.calibration = last_.calibration;
  }
  s.valid_steps = valid_steps_;
  s.faults_steps = faults_steps_;
  s.frame_to_step = frame_to_step_.summary();
  s.step_compute = step_compute_.summary();
  s.step_to_send = step_to_send_.summary();
  s.wakeup_lateness = wakeup_lateness_.summary();
  if (queue_) s.add_queue("estimates", queue_->counters());
  if (fill_) fill_(s);
  s.publisher = counters_;  // last, so the daemon cannot overwrite what the publisher counted
  return s;
}

bool UdpPublisher::send_status() {
  if (!socket_) return false;
  const StatusRecord s = make_status();
  ++status_seq_;
  write_status_json(s, buffer_, json_);
  if (!send(buffer_)) return false;
  ++counters_.status_sent;
  return true;
}

bool UdpPublisher::send(const std::string& datagram) {
  boost::system::error_code ec;
  socket_->send_to(asio::buffer(datagram), destination_, 0, ec);
  if (!ec) {
    if (logged_errno_ != 0) {
      spdlog::info("publish to {}:{}: sending works again ({} datagrams failed so far)", config_.address, config_.port,
                   counters_.send_errors);
      logged_errno_ = 0;
    }
    return true;
  }
  ++counters_.send_errors;
  counters_.last_send_errno = ec.value();
  if (ec.value() != logged_errno_) {
    // One line per kind of failure, not one per datagram; the count is in every status.
    spdlog::warn("publish to {}:{}: send failed: {} ({}); counted, publishing continues", config_.address, config_.port,
                 ec.message(), errno_name(ec.value()));
    logged_errno_ = ec.value();
  }
  return false;
}

}  // namespace mbo::runtime
