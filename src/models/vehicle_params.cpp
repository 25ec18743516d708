#include "mbobserver/models/vehicle_params.hpp"

#include <cmath>
#include <sstream>

#include "mbobserver/core/json_reader.hpp"

namespace mbo::models {
namespace {

using Eigen::Vector3d;

std::string fmt(double v) {
  std::ostringstream o;
  o.precision(6);
  o << v;
  return o.str();
}

// Physical ranges of a road vehicle's file (docs/vehicle-format.md): positions within this of
// the vehicle frame's origin, m.
constexpr double kMaxPosition_m = 50;

Vector3d vec3(const JsonReader& r, std::string_view key, double lo = -kMaxPosition_m, double hi = kMaxPosition_m) {
  auto v = r.numbers_in(key, 3, lo, hi);
  return {v[0], v[1], v[2]};
}

MagicFormula read_mf(const JsonReader& r) {
  MagicFormula m;
  m.stiffness = r.positive_up_to("stiffness", 1000);  // slip stiffness per unit load
  m.C = r.number("C");
  if (!(m.C > 1 && m.C < 2)) r.at("C").fail("must be in (1, 2) so that the curve has a peak, got " + fmt(m.C));
  m.E = r.number_in("E", -100, 1, 0.0);
  m.peak_factor = r.positive_up_to("peak_factor", 10, 1.0);
  r.finish();
  try {
    mf_peak_argument(m.C, m.E);
  } catch (const std::invalid_argument& e) {
    r.fail(e.what());
  }
  return m;
}

TyreParams read_tyre(const JsonReader& r) {
  TyreParams t;
  t.radius_m = r.positive_up_to("radius_m", 2);
  t.width_m = r.positive_up_to("width_m", 2);
  t.radial_stiffness_N_per_m = r.positive_up_to("radial_stiffness_N_per_m", 1e8);
  t.radial_damping_Ns_per_m = r.number_in("radial_damping_Ns_per_m", 0, 1e6);
  t.mu = r.number_in("mu", 0.01, 3.0);
  t.nominal_load_N = r.positive_up_to("nominal_load_N", 1e6);
  t.load_sensitivity = r.number_in("load_sensitivity", -0.9, 0.9, 0.0);
  t.longitudinal = read_mf(r.at("longitudinal"));
  t.lateral = read_mf(r.at("lateral"));
  t.rolling_resistance = r.number_in("rolling_resistance", 0.0, 0.2);
  t.rolling_resistance_speed2 = r.number_in("rolling_resistance_speed2_s2_per_m2", 0, 0.01, 0.0);
  t.rolling_transition_mps = r.positive_up_to("rolling_transition_mps", 10, t.rolling_transition_mps);
  t.low_speed_mps = r.positive_up_to("low_speed_mps", 10, t.low_speed_mps);
  t.brake_transition_radps = r.positive_up_to("brake_transition_radps", 100, t.brake_transition_radps);
  t.radius_growth_s2_per_m2 = r.number_in("radius_growth_s2_per_m2", 0.0, 1e-3, 0.0);
  r.finish();
  return t;
}

mb::Table read_table(const JsonReader& r, const char* xkey, const char* ykey) {
  mb::Table t;
  t.x = r.numbers_in(xkey, 0, -100, 100);  // m/s of a strut
  t.y = r.numbers_in(ykey, 0, -1e6, 1e6);  // N
  if (t.x.size() < 2) r.at(xkey).fail("needs at least two points");
  if (t.x.size() != t.y.size())
    r.at(ykey).fail("has " + std::to_string(t.y.size()) + " values for " + std::to_string(t.x.size()) + " points");
  for (std::size_t i = 1; i < t.x.size(); ++i)
    if (!(t.x[i] > t.x[i - 1])) r.at(xkey).fail("must be strictly increasing");
  return t;
}

SuspensionParams read_suspension(const JsonReader& r) {
  SuspensionParams s;
  s.spring_N_per_m = r.positive_up_to("spring_N_per_m", 1e7);
  if (r.has("spring_preload_N") && r.has("spring_preload_m"))
    r.fail("give spring_preload_N or spring_preload_m, not both");
  if (r.has("spring_preload_N")) s.preload_N = r.number_in("spring_preload_N", 0, 1e6);
  if (r.has("spring_preload_m")) s.preload_N = s.spring_N_per_m * r.number_in("spring_preload_m", 0, 1);
  if (r.has("damper") == r.has("damping_Ns_per_m")) r.fail("give either damper (a table) or damping_Ns_per_m");
  if (r.has("damping_Ns_per_m")) {
    double c = r.number_in("damping_Ns_per_m", 0, 1e6);
    s.damper.x = {-1, 1};
    s.damper.y = {-c, c};
  } else {
    auto d = r.at("damper");
    s.damper = read_table(d, "velocity_mps", "force_N");
    d.finish();
    // A damper dissipates: its force opposes the travel rate everywhere.
    for (std::size_t i = 0; i < s.damper.x.size(); ++i)
      if (s.damper.x[i] * s.damper.y[i] < 0)
        d.at("force_N").fail("point " + std::to_string(i) + " (" + fmt(s.damper.x[i]) + " m/s, " + fmt(s.damper.y[i]) +
                             " N) pushes the way the strut moves: a damper must oppose it");
    for (std::size_t i = 1; i < s.damper.x.size(); ++i)
      if (s.damper.y[i] < s.damper.y[i - 1]) d.at("force_N").fail("must not decrease with velocity");
  }
  if (auto b = r.find("bump_stop")) {
    s.bump_clearance_m = b->positive_up_to("clearance_m", 1);
    s.bump_stiffness_N_per_m = b->positive_up_to("stiffness_N_per_m", 1e9);
    b->finish();
  }
  if (auto b = r.find("rebound_stop")) {
    s.rebound_clearance_m = b->positive_up_to("clearance_m", 1);
    s.rebound_stiffness_N_per_m = b->positive_up_to("stiffness_N_per_m", 1e9);
    b->finish();
  }
  s.anti_roll_N_per_m = r.number_in("anti_roll_N_per_m", 0, 1e7, 0.0);
  if (r.has("axis")) {
    Vector3d a = vec3(r, "axis", -1, 1);
    if (a.norm() < 1e-9) r.at("axis").fail("must not be zero");
    a.normalize();
    if (a.z() < 0.5) r.at("axis").fail("must point upwards, within 60 degrees of the chassis z axis");
    s.axis = a;
  }
  r.finish();
  return s;
}

AxleParams read_axle(const JsonReader& r) {
  AxleParams a;
  a.x_m = r.number_in("x_m", -kMaxPosition_m, kMaxPosition_m);
  a.track_m = r.positive_up_to("track_m", 5);
  a.unsprung_mass_kg = r.positive_up_to("unsprung_mass_kg", 1e4);
  a.spin_inertia_kgm2 = r.positive_up_to("spin_inertia_kgm2", 1e3);
  a.diametral_inertia_kgm2 = r.positive_up_to("diametral_inertia_kgm2", 1e3, a.spin_inertia_kgm2 / 2);
  a.toe_in_rad = r.number_in("toe_in_rad", -0.1, 0.1, 0.0);
  a.camber_rad = r.number_in("camber_rad", -0.2, 0.2, 0.0);
  a.steered = r.boolean("steered");
  a.brake_gain_Nm_per_Pa = r.number_in("brake_gain_Nm_per_Pa", 0, 0.1);  // 10 kN m per bar
  a.suspension = read_suspension(r.at("suspension"));
  a.tyre = read_tyre(r.at("tyre"));
  r.finish();
  return a;
}

}  // namespace

Vector3d VehicleParams::vehicle_cg() const {
  Vector3d m = mass_kg * cg_m;
  for (int w = 0; w < kWheels; ++w) m += axles[axle_of(w)].unsprung_mass_kg * wheel_centre(w);
  return m / total_mass();
}

double VehicleParams::static_axle_load(int axle) const {
  // Lever arms along x only (the loads do not depend on heights): take moments about the
  // other axle.
  double mx = mass_kg * cg_m.x();
  for (int w = 0; w < kWheels; ++w) mx += axles[axle_of(w)].unsprung_mass_kg * axles[axle_of(w)].x_m;
  const double xg = mx / total_mass();
  const double W = total_mass() * gravity_mps2, L = wheelbase();
  return axle == 0 ? W * (xg - axles[1].x_m) / L : W * (axles[0].x_m - xg) / L;
}

double VehicleParams::static_sprung_load(int wheel) const {
  const double L = wheelbase();
  const double share = axle_of(wheel) == 0 ? (cg_m.x() - axles[1].x_m) / L : (axles[0].x_m - cg_m.x()) / L;
  // Lateral split of the sprung weight by the CG's offset from the centre line.
  const double track = axles[axle_of(wheel)].track_m;
  const double lateral = 0.5 + side_of(wheel) * cg_m.y() / track;
  return mass_kg * gravity_mps2 * share * lateral;
}

Vector3d VehicleParams::wheel_centre(int wheel) const {
  const AxleParams& a = axles[axle_of(wheel)];
  const double load = static_wheel_load(wheel);
  const double rho = a.tyre.radius_m - load / a.tyre.radial_stiffness_N_per_m;
  return {a.x_m, side_of(wheel) * a.track_m / 2, rho};
}

VehicleParams vehicle_params_from_json(const nlohmann::json& doc, const std::string& file) {
  JsonReader r(doc, file);
  VehicleParams v;
  v.file = file;
  v.name = r.string("name");
  v.description = r.string("description", "");
  if (auto s = r.find("sources"))
    for (const auto& item : s->items()) v.sources.push_back(item.as_string());

  auto ch = r.at("chassis");
  v.mass_kg = ch.positive_up_to("mass_kg", 1e5);
  v.cg_m = vec3(ch, "cg_m");
  auto I = ch.numbers_in("inertia_kgm2", 3, -1e7, 1e7);
  for (int k = 0; k < 3; ++k)
    if (!(I[k] > 0)) ch.at("inertia_kgm2").fail("principal moments must be > 0, got " + fmt(I[k]));
  if (I[0] + I[1] < I[2] || I[1] + I[2] < I[0] || I[0] + I[2] < I[1])
    ch.at("inertia_kgm2").fail("violates the triangle inequality (no rigid body has these moments)");
  v.inertia_kgm2 = Eigen::Vector3d(I[0], I[1], I[2]).asDiagonal();
  if (ch.has("inertia_products_kgm2")) {
    auto p = ch.numbers_in("inertia_products_kgm2", 3, -1e7, 1e7);  // Ixy, Ixz, Iyz (tensor entries)
    v.inertia_kgm2(0, 1) = v.inertia_kgm2(1, 0) = p[0];
    v.inertia_kgm2(0, 2) = v.inertia_kgm2(2, 0) = p[1];
    v.inertia_kgm2(1, 2) = v.inertia_kgm2(2, 1) = p[2];
    if (v.inertia_kgm2.llt().info() != Eigen::Success)
      ch.at("inertia_products_kgm2").fail("make the inertia tensor not positive definite");
  }
  v.width_m = ch.positive_up_to("width_m", 5);
  ch.finish();

  auto axles = r.at("axles");
  v.axles[0] = read_axle(axles.at("front"));
  v.axles[1] = read_axle(axles.at("rear"));
  axles.finish();

  if (auto s = r.find("steering")) {
    v.ackermann = s->number_in("ackermann", 0.0, 1.0, 1.0);
    v.rack_gain_rad_per_m = s->number_in("rack_gain_rad_per_m", 0, 1000, 0.0);
    v.max_steer_rad = s->number_in("max_angle_rad", 0.05, 1.2, v.max_steer_rad);
    s->finish();
  }
  if (auto a = r.find("aerodynamics")) {
    v.drag_coefficient = a->number_in("drag_coefficient", 0, 5);
    v.frontal_area_m2 = a->number_in("frontal_area_m2", 0, 50);
    v.air_density_kg_per_m3 = a->positive_up_to("air_density_kg_per_m3", 5, 1.2);
    if (a->has("pressure_centre_m")) v.pressure_centre_m = vec3(*a, "pressure_centre_m");
    a->finish();
  }
  v.gravity_mps2 = r.positive_up_to("gravity_mps2", 30, 9.81);
  if (auto rd = r.find("road")) v.road = load_road(*rd);
  if (auto s = r.find("solver")) {
    v.newton_tolerance = s->number_in("newton_tolerance", 1e-14, 1e-4, v.newton_tolerance);
    v.newton_max_iterations = static_cast<int>(s->integer("newton_max_iterations", 1, 200, v.newton_max_iterations));
    v.penalty_ratio = s->number_in("penalty_ratio", 1.0, 1e8, v.penalty_ratio);
    v.newton_refresh_contraction = s->number_in("newton_refresh_contraction", 0.0, 0.9, v.newton_refresh_contraction);
    s->finish();
  }
  r.finish();

  // Consistency of the whole.
  const auto& F = v.axles[0];
  const auto& R = v.axles[1];
  auto front = axles.at("front"), rear = axles.at("rear");
  if (!(F.x_m > R.x_m)) front.at("x_m").fail("the front axle must lie ahead of the rear axle (x forward)");
  if (v.wheelbase() < F.tyre.radius_m + R.tyre.radius_m)
    front.at("x_m").fail("wheelbase " + fmt(v.wheelbase()) +
                         " m is shorter than the two tyre radii: the wheels overlap");
  if (!(v.cg_m.x() > R.x_m && v.cg_m.x() < F.x_m))
    r.at("chassis").at("cg_m").fail("the centre of gravity must lie between the axles (x between " + fmt(R.x_m) +
                                    " and " + fmt(F.x_m) + "), got x = " + fmt(v.cg_m.x()));
  if (!(v.cg_m.z() > 0)) r.at("chassis").at("cg_m").fail("the centre of gravity must be above the ground");
  for (int a = 0; a < 2; ++a) {
    const auto& ax = v.axles[a];
    auto ar = a == 0 ? front : rear;
    // A wheel must sit outboard of the chassis centre plane, clear of its partner.
    if (ax.track_m / 2 < ax.tyre.width_m / 2 + 0.05)
      ar.at("track_m").fail("the wheels are inside the chassis: half the track (" + fmt(ax.track_m / 2) +
                            " m) leaves no room beside the centre plane for a tyre " + fmt(ax.tyre.width_m) +
                            " m wide");
    if (ax.track_m > v.width_m + ax.tyre.width_m)
      ar.at("track_m").fail("the track is wider than the body (" + fmt(v.width_m) + " m) plus a tyre width");
    if (std::abs(v.cg_m.y()) > ax.track_m / 4)
      r.at("chassis").at("cg_m").fail("the centre of gravity is more than a quarter track off the centre line");
    if (ax.steered != (a == 0))
      ar.at("steered").fail(a == 0 ? "only steered front axles are supported" : "rear steering is not supported");
    // The static load must fit the tyre: deflection below a third of the radius.
    for (int side = 0; side < 2; ++side) {
      const int w = 2 * a + side;
      double defl = v.static_wheel_load(w) / ax.tyre.radial_stiffness_N_per_m;
      if (defl > ax.tyre.radius_m / 3)
        ar.at("tyre")
            .at("radial_stiffness_N_per_m")
            .fail("static deflection " + fmt(defl) + " m exceeds a third of the radius");
      if (v.static_sprung_load(w) <= 0)
        r.at("chassis").fail("the sprung mass puts no load on wheel " + std::string(kWheelNames[w]));
    }
  }
  return v;
}

VehicleParams load_vehicle_params(const std::filesystem::path& file) {
  return vehicle_params_from_json(load_json_file(file), file.string());
}

}  // namespace mbo::models
