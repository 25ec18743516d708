// The vehicle built twice (issue 22): a shipped vehicle scenario's truth driven by its
// closed-loop driver in mbobserver's engine, its inputs recorded, then replayed open loop into
// the same engine and into the Simbody build of the same vehicle (simbody_vehicle.hpp) with the
// same force models (tyres, suspension elements, drag, drive and brake: the model's own
// objects, evaluated on Simbody's state). The two trajectories are sampled every 10 ms.
#pragma once

#include <array>
#include <string>
#include <vector>

namespace mbo::peers {

struct TwinSample {
  double t = 0;
  double x = 0, y = 0, z = 0, yaw = 0, pitch = 0, roll = 0;  // P0 (m), rad
  double vx = 0, vy = 0, yaw_rate = 0;  // P0 (m/s, ground), rad/s
  std::array<double, 4> travel{}, load{}, spin_rate{}, spin{};  // m, N (tyre Fz), rad/s, rad
};

// Largest absolute differences over the samples.
struct TwinDifference {
  double position = 0, yaw = 0, pitch_roll = 0, velocity = 0, yaw_rate = 0;  // m, rad, rad, m/s, rad/s
  double travel = 0, load = 0, spin_rate = 0, spin = 0;  // m, N, rad/s, rad
  double load_scale = 0, spin_rate_scale = 0;  // largest |load|, |spin rate| seen (for relative figures)
};
TwinDifference difference(const std::vector<TwinSample>& a, const std::vector<TwinSample>& b);

struct TwinRun {
  std::string scenario;
  double duration = 0, dt = 0;  // ours
  std::vector<TwinSample> ours, simbody;
  long simbody_steps = 0;
};

// `scenario`: a vehicle scenario file (its truth vehicle, friction and manoeuvre); the inputs
// are recorded at the scenario's step; ours replays them at `dt` (0: the scenario's); Simbody
// at RK-Merson `accuracy`. `duration` 0: the scenario's.
TwinRun run_twin(const std::string& scenario, double duration = 0, double dt = 0, double accuracy = 1e-7);

}  // namespace mbo::peers
