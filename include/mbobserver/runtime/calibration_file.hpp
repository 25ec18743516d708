// The daemon's memory of what the observer has learned (its self-calibration: sensor biases,
// wheel scales, latency), kept across restarts as chrony keeps its drift file. A small JSON
// file, `mbobserver.calibration/1`:
//   {"schema": "mbobserver.calibration/1", "vehicle_sha256": "<hex of the vehicle file>",
//    "saved_at": <UNIX seconds>, "parameters": {"gyro_bias_z": {"value": v, "std": s}, ...}}
// written atomically (a temporary file beside it, fsync, rename), so that a crash or a power
// cut leaves the old file or the new one, never half of one. Under systemd it lives in the
// unit's StateDirectory (/var/lib/mbobserver).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mbobserver/core/json_reader.hpp"
#include "mbobserver/estimation/vehicle_observer.hpp"

namespace mbo::runtime {

struct SavedParameter {
  std::string name;
  double value = 0, std = 0;
};

struct CalibrationFile {
  std::string vehicle_sha256;
  double saved_at = 0;  // UNIX seconds
  std::vector<SavedParameter> parameters;
};

// The "calibration" section of the daemon's configuration.
struct CalibrationConfig {
  std::optional<std::filesystem::path> file;  // none: nothing is kept
  double save_period_s = 60;
  double max_age_days = 30;  // an older file is stale: defaults instead
  // How much a parked hour counts against an hour of driving in the restored variance's growth
  // (sigma^2 + q age parked_rate_scale): the random walks q model a sensor's wander while it
  // runs and warms (a gyro's bias, a tyre's radius); at rest they hardly move.
  double parked_rate_scale = 0.01;
  // Per kind of parameter, by name prefix as carry_over ("wheel_scale": a tyre's radius moves
  // less while parked than a gyro's bias at turn-on): overrides parked_rate_scale.
  std::vector<std::pair<std::string, double>> parked_rate_scale_by_kind;
  // The scale for parameter `name`.
  double parked_scale_of(const std::string& name) const;
  // Which parameters carry over to the next start, by name prefix ("gyro_bias", "gyro_scale",
  // "accel_bias", "wheel_scale", "gnss_latency", "slip_stiffness", "cornering", "payload"); a
  // load that changes between trips does not by default, the tyres' stiffness (wear, season)
  // does.
  std::vector<std::string> carry_over{"gyro_bias",    "gyro_scale",     "accel_bias", "wheel_scale",
                                      "gnss_latency", "slip_stiffness", "cornering"};
};

// Reads the section; without a "file" key the file is $STATE_DIRECTORY/calibration.json when
// systemd gives the unit a state directory, else none.
CalibrationConfig read_calibration_config(const JsonReader* section);

// SHA-256 of a file's bytes, in hex (the vehicle file a calibration belongs to).
std::string sha256_of_file(const std::filesystem::path& file);

// The file's content, or the reason it cannot be used: missing, unreadable, not JSON, another
// schema, a parameter without a finite value and a positive sigma.
struct CalibrationRead {
  std::optional<CalibrationFile> file;
  std::string problem;
};
CalibrationRead read_calibration_file(const std::filesystem::path& path);

// Writes atomically; throws std::system_error naming the path and errno on failure.
void write_calibration_file(const std::filesystem::path& path, const CalibrationFile& content);

// What the observer publishes of its calibration now, as a file's content.
CalibrationFile calibration_of(const std::array<Calibration, kCalibrationCount>& published, std::string vehicle_sha256,
                               double now_unix);

// Gives the observer the saved values whose parameter it estimates and that carry over, each
// variance grown by its random walk over the time since it was saved (never above the initial
// one). A foreign file (another vehicle file), a stale one or a corrupt one changes nothing.
// Returns one line saying what it did, for the log.
std::string restore_calibration(const CalibrationRead& read, const std::string& vehicle_sha256, double now_unix,
                                const CalibrationConfig& config, est::VehicleObserver& observer);

}  // namespace mbo::runtime
