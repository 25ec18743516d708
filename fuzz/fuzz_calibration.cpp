// The calibration state file on arbitrary bytes: reading it must give the content or the
// reason it cannot be used, never throw or crash, and restoring what it read into an observer
// that estimates every kind of sensor parameter must hold each value in its range (a missing,
// stale, foreign or corrupt file is a warning and the configured values, never a wrong start).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "mbobserver/runtime/calibration_file.hpp"
#include "mbobserver/runtime/daemon.hpp"
#include "shipped_files.hpp"

namespace {
std::filesystem::path g_file;
std::unique_ptr<mbo::est::VehicleObserver> g_observer;
std::string g_sha;
}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  g_file = mbo::fuzz::scratch_folder("calibration", {}) / "calibration.json";
  auto cfg = mbo::runtime::load_daemon_config(std::filesystem::path(MBO_ROOT_DIR) / "config" / "mbobserver.json");
  cfg.observer.imu.gyro_bias = {true, 0.01, 1e-9, -0.1, 0.1};
  cfg.observer.wheels.scale = {true, 0.01, 1e-9, 0.9, 1.1};
  cfg.observer.gnss.latency = {true, 0.05, 1e-6, 0, 0.5};
  g_observer = std::make_unique<mbo::est::VehicleObserver>(cfg.vehicle, cfg.observer, cfg.runtime.step_s);
  g_sha = cfg.vehicle_sha256;
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::ofstream(g_file, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  const auto read = mbo::runtime::read_calibration_file(g_file);
  if (read.file == std::nullopt && read.problem.empty()) __builtin_trap();  // a reason is always given
  mbo::runtime::CalibrationConfig cc;
  // as if it were this vehicle's, so that the values reach the observer
  mbo::runtime::CalibrationRead own = read;
  if (own.file) own.file->vehicle_sha256 = g_sha;
  (void)mbo::runtime::restore_calibration(own, g_sha, own.file ? own.file->saved_at : 0, cc, *g_observer);
  for (std::size_t k = 0; k < g_observer->sensor_parameters().size(); ++k) {
    const auto& p = g_observer->sensor_parameters()[k];
    const double v = g_observer->parameter_value(static_cast<int>(k));
    if (!(v >= p.min && v <= p.max)) __builtin_trap();  // a parameter never leaves its range
  }
  return 0;
}
