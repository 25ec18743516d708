// What the daemon reports about itself once a second in `mbobserver.status/1`
// (docs/interfaces.md; docs/status.schema.json). Plain data of fixed size: the I/O thread fills
// one from the counters of every part (sources, queues, clock, publisher) and serialises it.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <string_view>

#include "mbobserver/core/estimate.hpp"
#include "mbobserver/runtime/fixed_step_clock.hpp"
#include "mbobserver/runtime/latency_histogram.hpp"
#include "mbobserver/runtime/spsc_queue.hpp"

namespace mbo::runtime {

// A short name stored inline (interface names are at most IFNAMSIZ - 1 = 15 characters).
using ShortName = std::array<char, 16>;
inline void set_name(ShortName& dst, std::string_view src) {
  dst.fill('\0');
  std::copy_n(src.begin(), std::min(src.size(), dst.size() - 1), dst.begin());
}
inline std::string_view name_of(const ShortName& n) {
  return {n.data(), static_cast<std::size_t>(std::find(n.begin(), n.end(), '\0') - n.begin())};
}

// SocketCAN controller state as libsocketcan's can_get_state() reports it
// (linux/can/netlink.h enum can_state), plus "unknown" when it cannot be read (replay).
enum class CanState : std::uint8_t { error_active, error_warning, error_passive, bus_off, stopped, sleeping, unknown };
inline constexpr std::array<std::string_view, 7> kCanStateNames = {
    "error_active", "error_warning", "error_passive", "bus_off", "stopped", "sleeping", "unknown"};

struct CanControllerStatus {
  ShortName name{};  // interface, e.g. "can0"
  CanState state = CanState::unknown;
  std::uint32_t tx_errors = 0;  // transmit error counter (TEC)
  std::uint32_t rx_errors = 0;  // receive error counter (REC)
  std::uint64_t error_frames = 0;  // CAN error frames received
  std::uint64_t restarts = 0;  // bus-off recoveries
};

struct QueueStatus {
  ShortName name{};
  QueueCounters counters{};
};

struct FrameCounters {
  std::uint64_t received = 0;  // frames read from the bus or the log
  std::uint64_t decoded = 0;  // frames decoded into measurements
  std::uint64_t unknown = 0;  // ids not in any DBC
  std::uint64_t rejected = 0;  // NaN / out-of-range signal values, bad lengths
  std::uint64_t bad_log_lines = 0;  // replay: garbage or truncated lines
  std::uint64_t timestamp_backwards = 0;  // frames older than their predecessor
  std::uint64_t time_jumps = 0;  // replay: forward jumps past runtime.max_time_gap_s (resynchronised)
  std::uint64_t time_shifts = 0;  // replay: the log's clock stepped back (the rest shifted forward)
  std::uint64_t known_unmapped = 0;  // ids in a DBC with no signal mapped to a measurement
  std::uint64_t error_frames = 0;  // CAN error frames
};

// Deadline-miss episodes (DeadlineMisses): consecutive missed steps, by what delayed the first.
struct MissEpisodes {
  std::uint64_t total = 0;
  std::array<std::uint64_t, kMissCauseNames.size()> by_cause{};
};

// The observer's own counters since start.
struct ObserverStatus {
  std::uint64_t model_step_failures = 0;  // steps whose Newton iteration did not converge
  std::uint64_t correction_failures = 0;  // filter corrections refused (not positive definite)
  std::uint64_t stale_samples = 0;  // samples older than the previous step
  std::uint64_t invalid_samples = 0;  // NaN / out of range
};

struct PublisherCounters {
  std::uint64_t records = 0;  // estimate records taken from the queue
  std::uint64_t estimates_sent = 0;
  std::uint64_t status_sent = 0;
  std::uint64_t decimated = 0;  // records not sent because of the rate limit
  std::uint64_t send_errors = 0;  // datagrams the kernel refused (counted, never fatal)
  int last_send_errno = 0;  // errno of the most recent failure, 0 if none
};

// The daemon's output files (--record, --summary-json, the calibration file): a write that
// fails is an error.
struct OutputStatus {
  std::uint64_t record_bytes = 0;  // the --record file's size
  std::uint64_t records_lost = 0;  // estimates that did not reach the --record file
  std::uint64_t write_errors = 0;  // failed writes of the record, the summary and the calibration file
  int last_write_errno = 0;  // errno of the most recent failure, 0 if none
  std::uint64_t reopens = 0;  // SIGHUP: the files opened again at their paths
};

// The serial NMEA receiver (the "gnss" section), when there is one.
struct GnssSerialStatus {
  bool present = false;  // false: no serial receiver configured (replay, or GNSS over CAN)
  bool connected = false;
  std::uint64_t lines = 0, parsed = 0;
  std::uint64_t unsupported = 0;  // valid sentences of other types (GSV, GSA, ...)
  std::uint64_t rejected = 0;  // bad checksum, malformed fields
  std::uint64_t overlong = 0, read_errors = 0, reconnects = 0;
  // "stamp": "fix_time": sentences stamped at their fix; dropped because their age said the
  // host clock is not on GNSS time, or untimed (VTG) with no timed sentence of their epoch;
  // the last age found (NaN: none)
  std::uint64_t fix_time_stamped = 0, fix_time_unsynchronised = 0, fix_time_untimed = 0;
  double last_fix_age_s = std::numeric_limits<double>::quiet_NaN();
};

inline constexpr std::size_t kMaxStatusQueues = 4;
inline constexpr std::size_t kMaxCanControllers = 4;

struct StatusRecord {
  std::uint64_t seq = 0;
  double t = 0;  // estimator time of the newest step, s
  double t_wall = 0;  // UNIX seconds when the status was made
  double uptime_s = 0;

  FrameCounters frames{};
  std::array<QueueStatus, kMaxStatusQueues> queues{};
  std::size_t queue_count = 0;

  std::uint64_t steps = 0;
  std::uint64_t deadline_misses = 0;
  std::uint64_t skipped_steps = 0;
  MissEpisodes deadline_miss_episodes{};
  LatencySummary frame_to_step{}, step_compute{}, step_to_send{}, wakeup_lateness{};

  std::uint64_t resets = 0;
  ObserverStatus observer{};
  bool valid = false;  // of the newest estimate
  std::uint32_t faults = 0;  // of the newest estimate (EstimateRecord::faults bits)
  std::uint64_t valid_steps = 0;  // estimates taken from the queue that were valid
  std::array<std::uint64_t, kFaultNames.size()> faults_steps{};  // estimates with each fault

  PublisherCounters publisher{};
  OutputStatus outputs{};
  std::array<CanControllerStatus, kMaxCanControllers> can{};
  std::size_t can_count = 0;
  GnssSerialStatus gnss_serial{};
  std::array<SensorHealth, kSensorKindCount> sensors{};
  std::array<Calibration, kCalibrationCount> calibration{};  // of the last estimate

  // Append helpers; an entry beyond the fixed capacity is dropped (false).
  bool add_queue(std::string_view name, const QueueCounters& c) {
    if (queue_count == queues.size()) return false;
    set_name(queues[queue_count].name, name);
    queues[queue_count++].counters = c;
    return true;
  }
  bool add_can(const CanControllerStatus& c) {
    if (can_count == can.size()) return false;
    can[can_count++] = c;
    return true;
  }
};

}  // namespace mbo::runtime
