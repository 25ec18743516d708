// The publisher on the I/O thread (docs/architecture.md "Threads in the daemon"): takes every
// EstimateRecord the estimator hands over through the SPSC queue, measures the latencies, and
// sends `mbobserver.estimate/1` datagrams at the configured rate and an `mbobserver.status/1`
// datagram every status period (docs/interfaces.md "UDP/JSON datagram").
//
// A datagram the kernel refuses (no route, EACCES for a broadcast address, a full socket
// buffer, ...) is counted and logged once per kind of error; publishing never throws after
// construction and never stops the daemon.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "mbobserver/core/estimate.hpp"
#include "mbobserver/runtime/asio.hpp"
#include "mbobserver/runtime/config.hpp"
#include "mbobserver/runtime/estimate_json.hpp"
#include "mbobserver/runtime/event_wakeup.hpp"
#include "mbobserver/runtime/latency_histogram.hpp"
#include "mbobserver/runtime/spsc_queue.hpp"
#include "mbobserver/runtime/status_record.hpp"

namespace mbo::runtime {

using EstimateQueue = SpscQueue<EstimateRecord>;

// Estimator thread: hands one record to the I/O thread. No allocation, no lock, no throw;
// a full queue is counted by the queue. Returns false if the record was dropped.
inline bool hand_over(EstimateQueue& queue, EventWakeup& wakeup, const EstimateRecord& r) noexcept {
  const bool accepted = queue.push(r);
  wakeup.notify();
  return accepted;
}

// Send one step in N so that at most `rate_hz` datagrams leave per second of estimator time:
// N = ceil(1 / (rate_hz * step_s)), at least 1 (every step when the step rate is lower).
std::uint64_t decimation_for(double rate_hz, double step_s) noexcept;

class UdpPublisher {
 public:
  // Fills the parts of a status record the publisher cannot know (frames, queues, clock,
  // CAN controllers); called on the I/O thread just before each status datagram.
  using StatusFiller = std::function<void(StatusRecord&)>;

  // Opens the socket (unless disabled). Throws std::runtime_error naming the address and
  // the reason when the socket cannot be set up (e.g. an unknown multicast interface).
  UdpPublisher(boost::asio::io_context& io, const PublishConfig& config, double step_s, JsonOptions json = {});
  ~UdpPublisher();
  UdpPublisher(const UdpPublisher&) = delete;
  UdpPublisher& operator=(const UdpPublisher&) = delete;

  // I/O thread: from now on, drain `queue` whenever `wakeup` fires, and send a status
  // datagram every status_period_s. Both must outlive the publisher or stop().
  void start(EstimateQueue& queue, EventWakeup& wakeup, StatusFiller fill = {});
  // I/O thread: only the status timer; the caller drains its queue and calls on_record()
  // (the daemon does, to write every record to its --record file first).
  void start_status(StatusFiller fill = {});
  // I/O thread: stops the timers, takes what is left in the queue, and sends a final status
  // datagram (so a SIGTERM still leaves the listener with the last counters).
  void stop();

  // One record from the estimator: latencies, validity and faults counted, datagram sent if
  // not decimated.
  void on_record(const EstimateRecord& r);
  // Sends a status datagram now. Returns false if it could not be sent (counted).
  bool send_status();
  // The status record that send_status() would send.
  StatusRecord make_status();

  const PublisherCounters& counters() const { return counters_; }
  std::uint64_t decimation() const { return decimation_; }
  const boost::asio::ip::udp::endpoint& destination() const { return destination_; }
  const LatencyHistogram& frame_to_step() const { return frame_to_step_; }
  const LatencyHistogram& step_compute() const { return step_compute_; }
  const LatencyHistogram& step_to_send() const { return step_to_send_; }
  const LatencyHistogram& wakeup_lateness() const { return wakeup_lateness_; }

 private:
  void open_socket();
  bool send(const std::string& datagram);
  void arm_status_timer();

  boost::asio::io_context& io_;
  PublishConfig config_;
  JsonOptions json_;
  std::uint64_t decimation_;
  boost::asio::ip::udp::endpoint destination_;
  std::unique_ptr<boost::asio::ip::udp::socket> socket_;
  boost::asio::steady_timer status_timer_;
  std::chrono::steady_clock::time_point next_status_;
  std::chrono::steady_clock::time_point started_;

  EstimateQueue* queue_ = nullptr;
  EventWakeup* wakeup_ = nullptr;
  StatusFiller fill_;
  bool running_ = false;

  PublisherCounters counters_;
  std::uint64_t status_seq_ = 0;
  bool have_last_ = false;
  EstimateRecord last_{};
  std::uint64_t valid_steps_ = 0;  // records that were valid
  std::array<std::uint64_t, kFaultNames.size()> faults_steps_{};  // records with each fault bit
  LatencyHistogram frame_to_step_, step_compute_, step_to_send_, wakeup_lateness_;
  std::string buffer_;
  int logged_errno_ = 0;  // the errno last logged, so a persistent failure logs once
};

}  // namespace mbo::runtime
