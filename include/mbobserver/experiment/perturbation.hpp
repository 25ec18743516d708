// A vehicle scenario's "perturb" block: the truth car's parameters and its sensors' errors
// drawn per run from stated distributions, so that --runs N is a Monte Carlo over cars as well
// as over noise (docs/simulation.md, "Truth and model"). The draws of a run come from a random
// stream of their own (stream_seed(seed, kPerturbStream)): the same seed gives the same car.
#pragma once

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mbobserver/core/json_reader.hpp"
#include "mbobserver/models/vehicle.hpp"

namespace mbo::exp {

inline constexpr std::uint64_t kPerturbStream = 100;

// A number (fixed), {"normal": [mean, std]} or {"uniform": [low, high]}.
struct Distribution {
  enum class Kind { fixed, normal, uniform } kind = Kind::fixed;
  double a = 0, b = 0;  // value; mean and std; low and high
  double draw(std::mt19937_64& rng) const;
  double mean() const;
  double stddev() const;
};
Distribution read_distribution(const JsonReader& r);

// The truth's parameters a perturb block may name, and what a drawn value does to them
// (docs/simulation.md gives the table):
//   added    mass_kg (chassis), cg_x_m, cg_z_m (chassis CG), radius_growth_s2_per_m2 (tyres)
//   factor   yaw_inertia, roll_inertia, slip_stiffness, cornering_stiffness, rolling_radius,
//            friction, spring_rate, damper_rate (both axles alike)
// and "sensors/<JSON pointer into the scenario's sensors block>": added to that number, or to
// each number of that array, each element drawn on its own.
struct Perturbation {
  std::string name;  // the key in the block
  bool sensor = false;
  nlohmann::json::json_pointer pointer;  // sensors: where in the sensors block
  Distribution distribution;
};

// Reads the block; `sensors` is the scenario's sensors block (each pointer must name a number
// or an array of numbers there).
std::vector<Perturbation> read_perturbations(const JsonReader& r, const nlohmann::json& sensors);

// One run's draws: the truth's parameters and the sensors block with the drawn values in, and
// the values drawn by name (an array's elements as name/0, name/1, ...). A draw out of a parameter's
// range (a factor <= 0, a mass <= 0, a value the sensors block refuses: `valid_sensors`) is
// drawn again, up to 1000 times: the distribution is truncated to the range.
struct PerturbedRun {
  models::VehicleParams truth;
  nlohmann::json sensors;
  nlohmann::json drawn = nlohmann::json::object();
};
PerturbedRun draw_perturbations(const std::vector<Perturbation>& items, const models::VehicleParams& truth,
                                const models::Vehicle& built_truth, const nlohmann::json& sensors, std::uint64_t seed,
                                const std::function<bool(const nlohmann::json&)>& valid_sensors);

// The named parameter's value in `p` (the first axle's for per-axle ones): what a draw changed.
double vehicle_parameter(const models::VehicleParams& p, const std::string& name);

}  // namespace mbo::exp
