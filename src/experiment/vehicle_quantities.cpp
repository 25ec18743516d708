#include "mbobserver/experiment/vehicle_quantities.hpp"

#include <array>
#include <cmath>

namespace mbo::exp {
namespace {

using models::Vehicle;
using models::VehicleOutputs;
constexpr double kDeg = M_PI / 180;
constexpr std::array<const char*, 4> kWheels = {"fl", "fr", "rl", "rr"};

std::vector<VehicleQuantity> make() {
  using V = const Vehicle&;
  using S = const mb::State&;
  using O = const VehicleOutputs&;
  // name, angle, scored, in truth CSV, moving only, estimate group and key, value
  std::vector<VehicleQuantity> q = {
      {"x", false, true, true, false, "state", "x", -1, [](V, S, O o, int) { return o.position.x(); }},
      {"y", false, true, true, false, "state", "y", -1, [](V, S, O o, int) { return o.position.y(); }},
      {"z", false, true, true, false, "state", "z", -1, [](V, S, O o, int) { return o.position.z(); }},
      {"yaw", true, true, true, false, "state", "yaw", -1, [](V, S, O o, int) { return o.yaw; }},
      {"pitch", true, true, true, false, "state", "pitch", -1, [](V, S, O o, int) { return o.pitch; }},
      {"roll", true, true, true, false, "state", "roll", -1, [](V, S, O o, int) { return o.roll; }},
      {"vx", false, true, true, false, "state", "vx", -1, [](V, S, O o, int) { return o.velocity.x(); }},
      {"vy", false, true, true, false, "state", "vy", -1, [](V, S, O o, int) { return o.velocity.y(); }},
      {"vz", false, false, true, false, "state", "vz", -1, [](V, S, O o, int) { return o.velocity.z(); }},
      {"yaw_rate", false, true, true, false, "state", "yaw_rate", -1, [](V, S, O o, int) { return o.yaw_rate; }},
      // the speed that gates sideslip (mbobserver-eval reads it from the truth)
      {"speed", false, false, true, false, "", "", -1, [](V, S, O o, int) { return o.speed; }},
      // sideslip is only defined while moving
      {"sideslip_deg", false, true, true, true, "virtual", "sideslip_deg", -1,
       [](V, S, O o, int) { return o.sideslip / kDeg; }},
      // The road friction the tyres compute with: an input, 0 meaning the tyres' own.
      {"friction", false, true, false, false, "virtual", "friction", -1,
       [](V v, S st, O, int) {
         const double u = st.u[v.in.mu];
         return u > 0 ? u : v.params.axles[0].tyre.mu;
       }},
      // The car's mass: its file's and the payload it carries (an input the observer may
      // estimate, issue 18's "mass within 3 %"; the truth's perturbation is in its file).
      {"mass", false, true, false, false, "virtual", "mass", -1,
       [](V v, S st, O, int) { return v.params.total_mass() + st.u[v.in.payload_front] + st.u[v.in.payload_rear]; }},
  };
  struct PerWheel {
    const char* name;
    const char* estimate_key;
    double (*get)(V, S, O, int);
  };
  const PerWheel per_wheel[] = {
      // the published wheel: as its Hall sensor counts it (an estimated scale applied)
      {"wheel_spin_angle", "wheel_spin_angle", [](V, S, O o, int i) { return o.wheel[i].spin_angle; }},
      {"wheel_speed", "wheel_speed", [](V, S, O o, int i) { return o.wheel[i].spin_rate; }},
      {"tyre_fx", "tyre_fx", [](V, S, O o, int i) { return o.wheel[i].Fx; }},
      {"tyre_fy", "tyre_fy", [](V, S, O o, int i) { return o.wheel[i].Fy; }},
      {"tyre_fz", "tyre_fz", [](V, S, O o, int i) { return o.wheel[i].Fz; }},
      {"travel", "suspension_travel", [](V, S, O o, int i) { return o.wheel[i].travel; }},
  };
  for (const auto& p : per_wheel)
    for (int w = 0; w < 4; ++w)
      q.push_back(
          {std::string(p.name) + "_" + kWheels[w], false, true, true, false, "virtual", p.estimate_key, w, p.get});
  // The effective rolling radius the wheel's Hall counts imply (issue 18's "rolling radii within
  // 0.1 %"): the model's at its load, over the learned wheel scale. Scored against the truth's at
  // its own load, it judges the scale and the learned load together, as the counts see them; the
  // calibration's wheel_scale is judged against the model's radius at a fixed load (the file's,
  // or with the truth's payloads where the observer learns them: calibration_truth.cpp).
  for (int w = 0; w < 4; ++w)
    q.push_back({std::string("rolling_radius_") + kWheels[w], false, true, false, false, "", "", w,
                 [](V, S, O o, int i) { return o.wheel[i].effective_radius; }});
  return q;
}

}  // namespace

const std::vector<VehicleQuantity>& vehicle_quantities() {
  static const std::vector<VehicleQuantity> q = make();
  return q;
}

}  // namespace mbo::exp
