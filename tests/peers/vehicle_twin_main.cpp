// The full comparison of the vehicle built twice (vehicle_twin.hpp): every shipped vehicle
// manoeuvre, ours at the scenario's 2 ms and at 0.5 ms against Simbody, largest differences.
//   build/tests/peers/mbo_vehicle_twin [--accuracy A] [scenario.json ...]
// (Simbody's RK-Merson accuracy A, default 1e-7; its own distance from a 1e-9 run is printed.)
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "vehicle_twin.hpp"

using namespace mbo::peers;

int main(int argc, char** argv) {
  std::vector<std::string> files;
  double accuracy = 1e-7;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--accuracy" && i + 1 < argc)
      accuracy = std::atof(argv[++i]);
    else
      files.push_back(argv[i]);
  }
  if (files.empty())
    for (const char* s :
         {"vehicle_double_lane_change", "vehicle_straight", "vehicle_circle", "vehicle_braking", "vehicle_gnss_jump"})
      files.push_back(std::string(MBO_SOURCE_DIR) + "/scenarios/" + s + ".json");
  std::printf(
      "| scenario | ours (or Simbody at 1e-7 against) | position (m) | yaw (rad) | pitch/roll (rad) | velocity (m/s) | "
      "yaw rate (rad/s) | "
      "travel (m) | tyre load (N) | spin rate (rad/s) | spin angle (rad) | Simbody steps |\n"
      "|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  int status = 0;
  for (const auto& f : files) {
    for (double dt : {0.002, 0.0005, 0.0}) {
      try {
        // dt 0: Simbody at `accuracy` against Simbody at 1e-9 (ours replaced by it).
        TwinRun r = run_twin(f, 0, dt > 0 ? dt : 0.002, dt > 0 ? accuracy : 1e-9);
        if (dt == 0) r.ours = run_twin(f, 0, 0.002, accuracy).simbody;
        const TwinDifference d = difference(r.ours, r.simbody);
        const std::string ours = dt > 0 ? std::to_string(dt * 1e3).substr(0, 3) + " ms" : "Simbody at 1e-9";
        std::printf(
            "| %s (%.0f s) | %s | %.2e | %.2e | %.2e | %.2e | %.2e | %.2e | %.2f of %.0f | %.3f of %.0f | %.2e | %ld "
            "|\n",
            r.scenario.c_str(), r.duration, ours.c_str(), d.position, d.yaw, d.pitch_roll, d.velocity, d.yaw_rate,
            d.travel, d.load, d.load_scale, d.spin_rate, d.spin_rate_scale, d.spin, r.simbody_steps);
      } catch (const std::exception& e) {
        std::printf("| %s | %g ms | failed: %s |\n", f.c_str(), dt * 1e3, e.what());
        status = 1;
      }
      std::fflush(stdout);
    }
  }
  return status;
}
