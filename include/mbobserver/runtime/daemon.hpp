// mbobserverd: the daemon as it runs in a car, and the same pipeline fed from a log.
//
//   frames (SocketCAN / NMEA serial, or a candump / ASC log) -> decode with the DBC signal map
//   on the I/O side -> typed measurements with their receive time -> bounded SPSC queue ->
//   estimator thread on a fixed step (absolute clock live, log time on replay):
//   VehicleObserver step -> EstimateRecord -> SPSC queue -> I/O thread: --record file and
//   UDP/JSON datagrams, status once a second, systemd notifications.
//
// Replay and live differ only in where frames come from and which clock paces the loop.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "mbobserver/estimation/vehicle_observer.hpp"
#include "mbobserver/io/serial_nmea_source.hpp"
#include "mbobserver/io/signal_map.hpp"
#include "mbobserver/models/vehicle.hpp"
#include "mbobserver/runtime/calibration_file.hpp"
#include "mbobserver/runtime/config.hpp"
#include "mbobserver/runtime/fixed_step_clock.hpp"

namespace mbo::runtime {

// Everything the configuration file says (docs/interfaces.md "Configuration").
struct DaemonConfig {
  std::filesystem::path file;
  std::string log_level = "info";
  std::shared_ptr<const models::Vehicle> vehicle;
  std::string vehicle_sha256;  // of the vehicle file, which a saved calibration must match
  std::shared_ptr<const io::SignalMap> signals;
  std::optional<io::SerialNmeaOptions> gnss_serial;
  est::VehicleObserverConfig observer;
  PublishConfig publish;
  RuntimeConfig runtime;
  CalibrationConfig calibration;
  // start-up lines for the log, once the whole file is read (est::unmeasured_sensor_defaults)
  std::vector<std::string> notices;
};

// Reads and checks the whole file; any error is a ConfigError naming the file and place.
DaemonConfig load_daemon_config(const std::filesystem::path& file);

inline constexpr std::uint64_t kDefaultRecordMaxBytes = std::uint64_t{16384} << 20;  // 16 GiB

struct DaemonOptions {
  std::optional<std::filesystem::path> replay;  // a candump -l or Vector ASC log
  ReplayRate rate{};  // realtime by default
  std::optional<std::filesystem::path> record;  // JSON lines of every estimate
  std::uint64_t record_max_bytes = kDefaultRecordMaxBytes;  // --record-max-mb: recording stops there
  std::optional<std::filesystem::path> summary_json;
  bool progress = true;  // progress line with ETA on stderr (replay)
  double stop_after_s = 0;  // > 0: stop after this much estimator time
  std::optional<std::filesystem::path> calibration;  // --calibration: the state file (overrides the config's)
};

// Runs until the log ends (replay) or SIGTERM/SIGINT; prints the summary. Returns the exit code:
// 0, or 1 when a write of the record, the summary or stdout failed.
int run_daemon(const DaemonConfig& config, const DaemonOptions& options);

}  // namespace mbo::runtime
