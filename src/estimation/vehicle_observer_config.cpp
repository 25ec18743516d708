// Reading the "observer" section of the daemon's configuration: the filter here, each aiding
// source's section in its own unit (aiding/).
#include <algorithm>
#include <cmath>
#include <sstream>

#include "mbobserver/estimation/vehicle_observer.hpp"

namespace mbo::est {
namespace {

constexpr double kDeg = M_PI / 180;

const std::array<std::string, 4> kWheel = {"fl", "fr", "rl", "rr"};

// Name of each independent coordinate of the vehicle, as the configuration spells it.
std::vector<std::pair<std::string, int>> vehicle_coordinates(const models::Vehicle& v) {
  std::vector<std::pair<std::string, int>> out = {{"x", v.x},     {"y", v.y},         {"z", v.z},
                                                  {"yaw", v.yaw}, {"pitch", v.pitch}, {"roll", v.roll}};
  for (int w = 0; w < 4; ++w) out.emplace_back("travel_" + kWheel[w], v.wheels[w].travel);
  for (int w = 0; w < 4; ++w) out.emplace_back("spin_" + kWheel[w], v.wheels[w].spin);
  return out;
}

}  // namespace

VehicleObserverConfig read_vehicle_observer_config(const JsonReader& sec, const models::Vehicle& vehicle) {
  VehicleObserverConfig c;
  const auto names = vehicle_coordinates(vehicle);
  auto f = sec.at("filter");
  c.filter_type = f.choice("type", {"errorEKF", "errorEKF-FE"}, "errorEKF");
  std::vector<std::string> observed;
  for (const auto& item : f.at("observe").items()) {
    std::string n = item.as_string();
    auto it = std::find_if(names.begin(), names.end(), [&](const auto& p) { return p.first == n; });
    if (it == names.end())
      item.fail("\"" + n +
                "\" is not an independent coordinate of the vehicle (x y z yaw pitch roll travel_fl.. spin_fl..)");
    auto zi = std::find(vehicle.model.z.begin(), vehicle.model.z.end(), it->second) - vehicle.model.z.begin();
    if (zi == static_cast<long>(vehicle.model.z.size()))
      item.fail("\"" + n + "\" is not independent in this vehicle model");
    c.settings.observed.push_back(static_cast<int>(zi));
    observed.push_back(n);
  }
  auto& fs = c.settings.filter;
  auto pn = f.at("plant_noise");
  for (const auto& n : observed) fs.accel_noise.push_back(pn.number_in(n, 0, kMaxPlantNoise));
  pn.finish();
  auto is = f.at("initial_std");
  for (const auto& n : observed) fs.initial_std_z.push_back(is.positive_up_to(n, kMaxInitialStd));
  for (const auto& n : observed) fs.initial_std_zd.push_back(is.positive_up_to(n + "_dot", kMaxInitialStd));
  is.finish();
  if (auto fe = f.find("force_error")) {
    read_forced_coordinates(*fe, observed, fs);
    read_force_error_settings(*fe, c.settings, 0, JacobianTerms::forces, ForceCorrection::coordinates);
    if (auto ei = fe->find("estimate_inputs")) {
      for (const auto& name : ei->keys()) {
        auto in = ei->at(name);
        int slot = -1;
        double lo = 0, hi = 0;
        if (name == "mu") {
          // The road's friction, which the tyres reveal near their force peak (B = dzdd/dmu).
          slot = vehicle.in.mu, lo = 0.05, hi = 1.5;
        } else if (name == "payload_front" || name == "payload_rear") {
          // A load (kg) at the front seats or at the rear: the static wheel loads move with it,
          // and it answers every acceleration (B = dzdd/dm: its weight and its inertia).
          slot = name == "payload_front" ? vehicle.in.payload_front : vehicle.in.payload_rear;
          lo = -0.3 * vehicle.params.mass_kg, hi = vehicle.params.mass_kg;
        } else if (name == "slip_stiffness" || name == "cornering_front" || name == "cornering_rear") {
          // A scale of the tyres' stiffness (1: the vehicle file's), which the slips the forces
          // need reveal (B = dzdd/dk): cornering per axle while cornering (the lateral force and
          // the yaw moment give one equation each), longitudinal under drive and braking.
          slot = name == "slip_stiffness"    ? vehicle.in.slip_stiffness
                 : name == "cornering_front" ? vehicle.in.cornering_front
                                             : vehicle.in.cornering_rear;
          lo = 0.5, hi = 1.5;
        } else {
          ei->fail("\"" + name +
                   "\" is not an input the filter can estimate (mu, payload_front, payload_rear, slip_stiffness, "
                   "cornering_front, cornering_rear)");
        }
        const bool scale = name == "slip_stiffness" || name == "cornering_front" || name == "cornering_rear";
        c.settings.estimated_inputs.push_back(slot);
        // false: considered (Schmidt), never moved: an uncertainty that another parameter
        // learning through the same forces must not take for itself
        c.input_learned.push_back(in.boolean("learn", true) ? 1 : 0);
        if (scale) {
          fs.input_rate_noise.push_back(in.number_in("plant_noise", 0, 1));
          fs.initial_std_p.push_back(in.positive_up_to("initial_std", 1));
          c.settings.input_min.push_back(in.number_in("min", 0.1, 3, lo));
          c.settings.input_max.push_back(in.number_in("max", 0.1, 3, hi));
        } else if (name == "mu") {
          // friction: the tyres' mu range (vehicle files: 0.01..3)
          fs.input_rate_noise.push_back(in.number_in("plant_noise", 0, 1));
          fs.initial_std_p.push_back(in.positive_up_to("initial_std", 3));
          c.settings.input_min.push_back(in.number_in("min", 0.01, 3, lo));
          c.settings.input_max.push_back(in.number_in("max", 0.01, 3, hi));
        } else {
          // a payload, kg: no more than the car's own mass either way
          const double m = vehicle.params.mass_kg;
          fs.input_rate_noise.push_back(in.number_in("plant_noise", 0, m));
          fs.initial_std_p.push_back(in.positive_up_to("initial_std", m));
          c.settings.input_min.push_back(in.number_in("min", -m, m, lo));
          c.settings.input_max.push_back(in.number_in("max", -m, m, hi));
        }
        if (!(c.settings.input_min.back() <= c.settings.input_max.back())) in.fail("\"min\" is above \"max\"");
        if (name == "mu") {
          // One friction for all four tyres, starting from theirs.
          const double front = vehicle.params.axles[0].tyre.mu, rear = vehicle.params.axles[1].tyre.mu;
          if (front != rear)
            in.fail("the vehicle's axles have different tyre mu (" + std::to_string(front) + ", " +
                    std::to_string(rear) + "): one estimated friction would replace both");
          if (front < c.settings.input_min.back() || front > c.settings.input_max.back())
            in.fail("the vehicle's tyre mu " + std::to_string(front) + " is outside [min, max]");
        } else if (scale) {
          if (!(c.settings.input_min.back() <= 1 && 1 <= c.settings.input_max.back()))
            in.fail("[min, max] must hold 1, the vehicle file's own stiffness");
        } else if (!(c.settings.input_min.back() <= 0 && 0 <= c.settings.input_max.back())) {
          in.fail("[min, max] must hold 0, the vehicle file's own load");
        }
        in.finish();
      }
      if (c.settings.jacobian_period == 0)
        ei->fail("needs force_error.jacobian_period > 0: dzdd/dp is taken with the model's Jacobians");
    }
    fe->finish();
  } else if (c.filter_type == "errorEKF-FE") {
    f.fail("errorEKF-FE needs a \"force_error\" block");
  }
  fs.gate_sigma = f.number_in("gate_sigma", 0, aiding::kMaxGateSigma, 5);
  fs.max_variance = f.positive_up_to("max_variance", 1e12, 1e8);
  // A start whose variance is already at the divergence bound would reset at once, for ever.
  auto check_start = [&](const JsonReader& where, const std::string& key, double std) {
    if (!(std * std < fs.max_variance))
      where.at(key).fail("its variance " + std::to_string(std * std) + " is not below max_variance (" +
                         std::to_string(fs.max_variance) + ")");
  };
  for (std::size_t k = 0; k < observed.size(); ++k) {
    check_start(is, observed[k], fs.initial_std_z[k]);
    check_start(is, observed[k] + "_dot", fs.initial_std_zd[k]);
  }
  if (auto fe = f.find("force_error"))
    for (std::size_t k = 0; k < fs.forced.size(); ++k)
      check_start(fe->at("initial_std"), observed[static_cast<std::size_t>(fs.forced[k])], fs.initial_std_a[k]);
  if (auto a = f.find("adaptive_plant_noise")) {
    // The chassis's plant noise scaled to what the GNSS innovations show of the model
    // (plant_noise_adaptation.hpp); the horizontal position by default.
    auto& A = c.adaptation;
    A.on = a->boolean("enabled", true);
    if (a->has("axes")) {
      A.longitudinal = A.lateral = A.yaw = false;
      for (const auto& item : a->at("axes").items()) {
        const std::string n = item.as_string();
        if (n == "longitudinal")
          A.longitudinal = true;
        else if (n == "lateral")
          A.lateral = true;
        else if (n == "yaw")
          A.yaw = true;
        else
          item.fail("\"" + n + "\" is not an axis (longitudinal, lateral, yaw)");
      }
    }
    auto index_of = [&](const std::string& n) {
      const auto it = std::find(observed.begin(), observed.end(), n);
      if (it == observed.end()) a->fail("needs \"" + n + "\" in filter.observe");
      return static_cast<int>(it - observed.begin());
    };
    if (A.longitudinal || A.lateral) A.x = index_of("x"), A.y = index_of("y");
    if (A.yaw) A.yaw_index = index_of("yaw");
    A.min_scale = a->number_in("min_scale", 1e-6, 1, A.min_scale);
    A.yaw_min_scale = a->number_in("yaw_min_scale", 1e-6, 1, A.yaw_min_scale);
    A.nis_limit = a->number_in("nis_limit", 1, 100, A.nis_limit);
    A.window_samples = static_cast<int>(a->integer("window_samples", 2, 100000, A.window_samples));
    A.bias_sigma = a->number_in("bias_sigma", 1, 100, A.bias_sigma);
    A.fall_s = a->positive_up_to("fall_s", 3600, A.fall_s);
    A.rise_s = a->positive_up_to("rise_s", 3600, A.rise_s);
    A.evidence_s = a->positive_up_to("evidence_s", 3600, A.evidence_s);
    A.gyro_window_samples = static_cast<int>(a->integer("gyro_window_samples", 2, 1000000, A.gyro_window_samples));
    A.floor_gain = a->number_in("floor_gain", 1, 1e6, A.floor_gain);
    A.floor_memory_s = a->positive_up_to("floor_memory_s", 1e6, A.floor_memory_s);
    A.sustained_s = a->positive_up_to("sustained_s", 3600, A.sustained_s);
    A.limit_utilisation = a->number_in("limit_utilisation", 0.05, 10, A.limit_utilisation);
    a->finish();
  }
  if (auto x = f.find("excitation")) {
    // When the motion teaches a parameter (excitation.hpp); {"enabled": false}: always
    auto& X = c.excitation;
    X.on = x->boolean("enabled", true);
    X.min_speed = x->number_in("min_speed", 0, 100, X.min_speed);
    X.min_accel = x->number_in("min_accel", 0, 100, X.min_accel);
    X.time_constant_s = x->positive_up_to("time_constant_s", 60, X.time_constant_s);
    x->finish();
  }
  c.settings.correction =
      f.choice("correction", {"position_problem", "velocity_approximation"}, "position_problem") == "position_problem"
          ? Correction::position_problem
          : Correction::velocity_approximation;
  f.finish();

  const double gate = c.settings.filter.gate_sigma;
  if (auto g = sec.find("gnss")) c.gnss = aiding::read_gnss_config(*g, gate);
  if (auto m = sec.find("imu")) c.imu = aiding::read_imu_config(*m, gate);
  if (auto w = sec.find("wheels")) c.wheels = aiding::read_wheel_sensor_config(*w, gate);
  if (auto v = sec.find("validity")) {
    c.validity.max_position_std = v->positive_up_to("max_position_std", 1e4, c.validity.max_position_std);
    c.validity.max_yaw_std = v->positive_up_to("max_yaw_std_deg", 180, c.validity.max_yaw_std / kDeg) * kDeg;
    c.validity.max_velocity_std = v->positive_up_to("max_velocity_std", 1e3, c.validity.max_velocity_std);
    if (v->has("payload_std_kg")) {
      const auto p = v->numbers_in("payload_std_kg", 2, 0, 1e5);
      c.validity.payload_std_kg = {p[0], p[1]};
    }
    c.validity.payload_split_std_kg = v->number_in("payload_split_std_kg", 0, 1e5, c.validity.payload_split_std_kg);
    c.validity.max_tyre_load_std = v->positive_up_to("max_tyre_load_std", 1e6, c.validity.max_tyre_load_std);
    c.validity.max_tyre_force_std = v->positive_up_to("max_tyre_force_std", 1e6, c.validity.max_tyre_force_std);
    c.validity.rear_slip_angle_rel_std =
        v->number_in("rear_slip_angle_rel_std", 0, 10, c.validity.rear_slip_angle_rel_std);
    c.validity.reset_window_s = v->number_in("reset_window_s", 0, 86400, c.validity.reset_window_s);
    c.validity.rolling_radius_rel_std =
        v->number_in("rolling_radius_rel_std", 0, 0.2, c.validity.rolling_radius_rel_std);
    auto& M = c.validity.monitor;
    M.nis_time_constant_s = v->positive_up_to("nis_time_constant_s", 3600, M.nis_time_constant_s);
    M.nis_limit = v->positive_up_to("nis_limit", 1e6, M.nis_limit);
    M.nis_cap = v->positive_up_to("nis_cap", 1e12, M.nis_cap);
    // a cap below the limit would keep the filtered NIS under it whatever the innovations
    if (!(M.nis_cap > M.nis_limit))
      (v->has("nis_cap") ? v->at("nis_cap") : *v)
          .fail("nis_cap (" + std::to_string(M.nis_cap) + ") must be above nis_limit (" + std::to_string(M.nis_limit) +
                ")");
    M.rejections = static_cast<int>(v->integer("rejections", 1, 1000, M.rejections));
    M.settle_samples = static_cast<int>(v->integer("settle_samples", 0, 100000, M.settle_samples));
    M.bias_time_constant_s = v->positive_up_to("bias_time_constant_s", 3600, M.bias_time_constant_s);
    M.bias_sigma = v->number_in("bias_sigma", 1, 1000, M.bias_sigma);
    v->finish();
  }
  if (auto in = sec.find("inputs")) c.inputs = aiding::read_inputs_config(*in);
  if (auto ws = sec.find("wheel_speeds")) c.wheel_speeds = aiding::read_wheel_speed_config(*ws, gate);
  if (auto st = sec.find("standstill")) c.standstill = aiding::read_standstill_config(*st, gate);
  aiding::read_bus_inputs_config(sec, c.bus_inputs);
  sec.finish();
  c.settings.filter.force_error = c.filter_type == "errorEKF-FE";
  // the ABS model's force error is the acceleration error of x, turned into a force on x alone
  if (c.bus_inputs.brakes.abs && c.bus_inputs.brakes.abs_force_error > 0) {
    const auto& fs = c.settings.filter;
    bool on_x = false;
    for (int k : fs.forced) on_x = on_x || observed[static_cast<std::size_t>(k)] == "x";
    if (!c.settings.filter.force_error || !on_x || c.settings.force_correction != ForceCorrection::coordinates)
      sec.at("brakes").fail(
          "abs_force_error needs filter type errorEKF-FE with a force error on x "
          "(filter.force_error.plant_noise.x) and the \"coordinates\" correction");
  }
  return c;
}

std::vector<std::string> unmeasured_sensor_defaults(const VehicleObserverConfig& c, const JsonReader& section) {
  std::vector<std::string> out;
  const auto said = [&](const char* sub, const char* key) {
    const auto s = section.find(sub);
    return s && s->has(key);
  };
  const auto& g = c.gnss;
  if (g.use_position && !g.estimate_latency && g.latency_std > 0 && !said("gnss", "latency_std")) {
    // along the track a fix is v * latency off: the position's bound is passed above this speed
    std::ostringstream m;
    m << "observer.gnss.latency_std is " << g.latency_std
      << " s by default (a receiver whose latency nobody measured): the position's sigma holds the speed times "
         "that, so the position (and `valid`) is not valid above "
      << std::lround(3.6 * c.validity.max_position_std / g.latency_std) << " km/h (validity.max_position_std "
      << c.validity.max_position_std
      << " m). Once the latency is measured, set gnss.latency_s to it and gnss.latency_std to 0, stamp the fixes "
         "at their time (gnss.stamp \"fix_time\"), or learn it (gnss.estimate_latency)";
    out.push_back(m.str());
  }
  const auto& i = c.imu;
  if (i.use_gyro && !i.gyro_bias.on && i.gyro_bias_std > 0 && !said("imu", "gyro_bias_std")) {
    std::ostringstream m;
    m << "observer.imu.gyro_bias_std is " << i.gyro_bias_std / kDeg
      << " deg/s by default (an uncalibrated MEMS gyro): the heading's sigma grows with it wherever the GNSS does "
         "not hold the heading. Set it to 0 for a calibrated gyro, or learn the bias (imu.estimate_gyro_bias)";
    out.push_back(m.str());
  }
  return out;
}

}  // namespace mbo::est
