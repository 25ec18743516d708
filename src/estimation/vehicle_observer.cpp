#include "mbobserver/estimation/vehicle_observer.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "mbobserver/estimation/sensors/gnss.hpp"
#include "mbobserver/estimation/sensors/imu.hpp"
#include "mbobserver/estimation/sensors/wheel_hall.hpp"
#include "mbobserver/mb/kinematics.hpp"

namespace mbo::est {
namespace {

constexpr double kDeg = M_PI / 180;

std::size_t idx(Channel c) { return static_cast<std::size_t>(c); }
std::size_t idx(SensorKind k) { return static_cast<std::size_t>(k); }

const std::array<std::string, 4> kWheel = {"fl", "fr", "rl", "rr"};

// Name of each independent coordinate of the vehicle, as the configuration spells it.
std::vector<std::pair<std::string, int>> vehicle_coordinates(const models::Vehicle& v) {
  std::vector<std::pair<std::string, int>> out = {{"x", v.x},     {"y", v.y},         {"z", v.z},
                                                  {"yaw", v.yaw}, {"pitch", v.pitch}, {"roll", v.roll}};
  for (int w = 0; w < 4; ++w) out.emplace_back("travel_" + kWheel[w], v.wheels[w].travel);
  for (int w = 0; w < 4; ++w) out.emplace_back("spin_" + kWheel[w], v.wheels[w].spin);
  return out;
}

Eigen::Vector3d vec3(const JsonReader& r) {
  auto v = r.as_numbers(3);
  return {v[0], v[1], v[2]};
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
  for (const auto& n : observed) fs.accel_noise.push_back(pn.non_negative(n));
  pn.finish();
  auto is = f.at("initial_std");
  for (const auto& n : observed) fs.initial_std_z.push_back(is.positive(n));
  for (const auto& n : observed) fs.initial_std_zd.push_back(is.positive(n + "_dot"));
  is.finish();
  if (auto fe = f.find("force_error")) {
    read_forced_coordinates(*fe, observed, fs);
    read_force_error_settings(*fe, c.settings, 0, JacobianTerms::forces, ForceCorrection::coordinates);
    if (auto ei = fe->find("estimate_inputs")) {
      // The road's friction, which the tyres reveal near their force peak (B = dzdd/dmu).
      for (const auto& name : ei->keys()) {
        if (name != "mu") ei->fail("\"" + name + "\" is not an input the filter can estimate (mu)");
        auto in = ei->at(name);
        c.settings.estimated_inputs.push_back(vehicle.in.mu);
        fs.input_rate_noise.push_back(in.non_negative("plant_noise"));
        fs.initial_std_p.push_back(in.positive("initial_std"));
        c.settings.input_min.push_back(in.positive("min", 0.05));
        c.settings.input_max.push_back(in.positive("max", 1.5));
        if (!(c.settings.input_min.back() <= c.settings.input_max.back())) in.fail("\"min\" is above \"max\"");
        // One friction for all four tyres, starting from theirs.
        const double front = vehicle.params.axles[0].tyre.mu, rear = vehicle.params.axles[1].tyre.mu;
        if (front != rear)
          in.fail("the vehicle's axles have different tyre mu (" + std::to_string(front) + ", " + std::to_string(rear) +
                  "): one estimated friction would replace both");
        if (front < c.settings.input_min.back() || front > c.settings.input_max.back())
          in.fail("the vehicle's tyre mu " + std::to_string(front) + " is outside [min, max]");
        in.finish();
      }
      if (c.settings.jacobian_period == 0)
        ei->fail("needs force_error.jacobian_period > 0: dzdd/dmu is taken with the model's Jacobians");
    }
    fe->finish();
  } else if (c.filter_type == "errorEKF-FE") {
    f.fail("errorEKF-FE needs a \"force_error\" block");
  }
  fs.gate_sigma = f.non_negative("gate_sigma", 5);
  fs.max_variance = f.positive("max_variance", 1e8);
  c.settings.correction =
      f.choice("correction", {"position_problem", "velocity_approximation"}, "position_problem") == "position_problem"
          ? Correction::position_problem
          : Correction::velocity_approximation;
  f.finish();

  if (auto g = sec.find("gnss")) {
    auto& G = c.gnss;
    if (auto a = g->find("antenna")) G.antenna = vec3(*a);
    G.latency_s = g->non_negative("latency_s", 0);
    G.position_std = g->positive("position_std", G.position_std);
    G.velocity_std = g->positive("velocity_std", G.velocity_std);
    G.use_position = g->boolean("use_position", true);
    G.use_velocity = g->boolean("use_velocity", true);
    G.use_course = g->boolean("use_course", true);
    G.use_gst = g->boolean("use_gst", true);
    G.use_altitude = g->boolean("use_altitude", true);
    G.chassis_only = g->boolean("chassis_only", false);
    G.course_min_speed = g->non_negative("course_min_speed", G.course_min_speed);
    G.course_sideslip_std = g->non_negative("course_sideslip_std", G.course_sideslip_std);
    G.timeout_s = g->positive("timeout_s", G.timeout_s);
    G.gate_sigma = g->non_negative("gate_sigma", c.settings.filter.gate_sigma);
    G.reset_after_rejection_s = g->positive("reset_after_rejection_s", G.reset_after_rejection_s);
    if (auto o = g->find("origin")) {
      if (o->is_string()) {
        if (o->as_string() != "first_fix") o->fail("expected \"first_fix\" or {\"lat\", \"lon\", \"alt\"}");
      } else {
        G.origin_from_first_fix = false;
        G.lat0 = o->number_in("lat", -90, 90);
        G.lon0 = o->number_in("lon", -180, 180);
        G.alt0 = o->number("alt", 0);
        o->finish();
      }
    }
    g->finish();
  }
  if (auto m = sec.find("imu")) {
    auto& I = c.imu;
    if (auto p = m->find("position")) I.position = vec3(*p);
    if (auto r = m->find("rotation_deg")) {
      Eigen::Vector3d rpy = vec3(*r) * kDeg;
      I.rotation =
          (Eigen::AngleAxisd(rpy[2], Eigen::Vector3d::UnitZ()) * Eigen::AngleAxisd(rpy[1], Eigen::Vector3d::UnitY()) *
           Eigen::AngleAxisd(rpy[0], Eigen::Vector3d::UnitX()))
              .toRotationMatrix();
    }
    I.accel_std = m->positive("accel_std", I.accel_std);
    I.gyro_std = m->positive("gyro_std", I.gyro_std);
    I.use_accel = m->boolean("use_accel", true);
    I.accel_attitude = m->boolean("accel_attitude", true);
    I.use_gyro = m->boolean("use_gyro", true);
    auto axes = [&](const char* key, std::array<bool, 3>& out) {
      if (!m->has(key)) return;
      auto r = m->at(key);
      std::string a = r.as_string();
      out = {false, false, false};
      for (char ch : a) {
        if (ch < 'x' || ch > 'z') r.fail("expected a combination of x, y and z");
        out[ch - 'x'] = true;
      }
    };
    axes("gyro_axes", I.gyro_axes);
    axes("accel_axes", I.accel_axes);
    I.timeout_s = m->positive("timeout_s", I.timeout_s);
    I.gate_sigma = m->non_negative("gate_sigma", c.settings.filter.gate_sigma);
    m->finish();
  }
  if (auto w = sec.find("wheels")) {
    auto& W = c.wheels;
    W.teeth = static_cast<int>(w->integer("teeth", 1, 100000, 40));
    W.angle_std = w->positive("angle_std", 2 * M_PI / W.teeth / std::sqrt(12.0));  // one tooth, uniform
    auto mod = static_cast<std::uint64_t>(w->integer("modulus", 2, 1LL << 32, 65536));
    W.modulus = {mod, mod, mod, mod};
    W.use = w->boolean("use", true);
    W.timeout_s = w->positive("timeout_s", W.timeout_s);
    W.gate_sigma = w->non_negative("gate_sigma", c.settings.filter.gate_sigma);
    W.reset_after_rejection_s = w->positive("reset_after_rejection_s", W.reset_after_rejection_s);
    w->finish();
  }
  if (auto v = sec.find("validity")) {
    c.validity.max_position_std = v->positive("max_position_std", c.validity.max_position_std);
    c.validity.max_yaw_std = v->positive("max_yaw_std_deg", c.validity.max_yaw_std / kDeg) * kDeg;
    c.validity.max_velocity_std = v->positive("max_velocity_std", c.validity.max_velocity_std);
    v->finish();
  }
  if (auto in = sec.find("inputs")) {
    c.input_timeout_s = in->positive("timeout_s", c.input_timeout_s);
    in->finish();
  }
  sec.finish();
  c.settings.filter.force_error = c.filter_type == "errorEKF-FE";
  return c;
}

VehicleObserver::VehicleObserver(std::shared_ptr<const models::Vehicle> vehicle, const VehicleObserverConfig& config,
                                 double dt)
    : vehicle_(std::move(vehicle)), cfg_(config) {
  const auto& v = *vehicle_;
  // An estimated friction starts from the front tyres' own (input 0 means "the tyres' own",
  // which the estimate's range would otherwise clamp); it then applies to all four tyres.
  if (!cfg_.settings.estimated_inputs.empty()) inputs_.mu = v.params.axles[0].tyre.mu;
  ChassisFrame f{v.u, v.v, v.w};
  mb::LinearVec origin{{mb::LinearTerm{v.P0, 1, 0}}};
  mb::LinearVec antenna = v.chassis_point(cfg_.gnss.antenna);
  std::vector<std::shared_ptr<const Sensor>> sensors = {
      std::make_shared<GnssPositionSensor>(antenna, cfg_.gnss.chassis_only, origin, cfg_.gnss.latency_s),
      std::make_shared<GnssVelocitySensor>(antenna), std::make_shared<GnssCourseSensor>(antenna, v.yaw),
      std::make_shared<GyroSensor>(f, cfg_.imu.rotation, Eigen::Vector3d::Zero()),
      std::make_shared<AccelerometerSensor>(f, v.chassis_point(cfg_.imu.position), cfg_.imu.rotation, v.model.gravity,
                                            Eigen::Vector3d::Zero(), cfg_.imu.accel_attitude)};
  for (int w = 0; w < 4; ++w) sensors.push_back(std::make_shared<WheelHallSensor>(v.wheels[w].spin));
  obs_ = std::make_unique<MbObserver>(v.model, std::move(sensors), cfg_.settings, dt);
  if (!cfg_.gnss.origin_from_first_fix) {
    enu_.Reset(cfg_.gnss.lat0, cfg_.gnss.lon0, cfg_.gnss.alt0);
    origin_set_ = true;
  }
  // errorEKF has no acceleration state: the accelerometers then inform the attitude only,
  // through gravity (Sinigaglia 2016 eq. (116)). With pitch and roll left to the model that leaves
  // them nothing to correct but yaw through the lateral acceleration, which would take the
  // model's acceleration errors for heading errors: they are used only when they can help.
  bool pitch_or_roll = false;
  for (int o : cfg_.settings.observed)
    pitch_or_roll = pitch_or_roll || v.model.z[o] == v.pitch || v.model.z[o] == v.roll;
  // The accelerometers see the chassis: they inform errorEKF-FE only through an acceleration
  // error of a chassis coordinate (a wheel's torque error leaves their rows empty).
  bool chassis_forced = false;
  if (cfg_.settings.filter.force_error) {
    for (int k : obs_->filter().forced()) {
      const int slot = v.model.z[cfg_.settings.observed[k]];
      chassis_forced = chassis_forced || slot == v.x || slot == v.y || slot == v.z || slot == v.yaw ||
                       slot == v.pitch || slot == v.roll;
    }
  }
  use_accel_ = cfg_.imu.use_accel && (chassis_forced || pitch_or_roll);
  meas_.reserve(32);
  meas_kind_.reserve(32);
  results_.reserve(32);
  last_sample_t_.fill(-1);
  channel_last_t_.fill(-1);
  tr_max_.fill(0);
}

void VehicleObserver::start(const models::VehicleStart& s, double t0) {
  mb::Workspace ws(vehicle_->model);
  mb::State st = models::start_vehicle(*vehicle_, ws, s, inputs_);
  obs_->initialize(st);
  started_ = true;
  t_ = t0;
}

void VehicleObserver::push(const Measurement& m) {
  if (m.channel >= Channel::count || !std::isfinite(m.value) || !std::isfinite(m.t)) {
    ++counters_.samples_invalid;
    return;
  }
  auto& s = samples_[idx(m.channel)];
  if (m.t < s.t) {
    ++counters_.samples_stale;  // an older sample than the one we hold: out of order
    return;
  }
  s = {m.t, m.value, true};
}

bool VehicleObserver::take(Channel c, double t, double& value, double& time) {
  auto& s = samples_[idx(c)];
  if (!s.fresh || s.t > t + kSameInstant_s) return false;
  s.fresh = false;
  value = s.value;
  time = s.t;
  channel_last_t_[idx(c)] = s.t;
  return true;
}

void VehicleObserver::gather(double t) {
  meas_.clear();
  meas_kind_.clear();
  auto add = [&](int sensor, int row, double value, double var, double gate, SensorKind kind) {
    meas_.push_back({sensor, row, value, var, gate});
    meas_kind_.push_back(static_cast<int>(kind));
  };
  double v = 0, ts = 0;
  // Inputs first: they act on this step.
  if (take(Channel::steer_angle, t, v, ts)) {
    if (last_steer_t_ >= 0 && ts > last_steer_t_) {
      double rate = (v - last_steer_) / (ts - last_steer_t_);
      inputs_.steer_rate = 0.7 * inputs_.steer_rate + 0.3 * rate;  // a little smoothing of a differenced signal
    }
    inputs_.steer = v;
    last_steer_ = v;
    last_steer_t_ = ts;
    last_input_t_ = ts;
  }
  for (int w = 0; w < 4; ++w) {
    if (take(static_cast<Channel>(idx(Channel::drive_torque_fl) + w), t, v, ts))
      inputs_.drive_torque[w] = v, last_input_t_ = ts;
    if (take(static_cast<Channel>(idx(Channel::brake_pressure_fl) + w), t, v, ts))
      inputs_.brake_pressure[w] = v, last_input_t_ = ts;
  }

  // GNSS
  double lat = 0, lon = 0, tl = 0, tn = 0;
  auto& slat = samples_[idx(Channel::gnss_lat)];
  auto& slon = samples_[idx(Channel::gnss_lon)];
  double quality = 1, tq;
  if (take(Channel::gnss_fix_quality, t, quality, tq)) last_fix_quality_ = quality;
  if (slat.fresh && slon.fresh && std::abs(slat.t - slon.t) < 1e-6 && slat.t <= t + kSameInstant_s) {
    take(Channel::gnss_lat, t, lat, tl);
    take(Channel::gnss_lon, t, lon, tn);
    double alt = 0, ta;
    bool has_alt = take(Channel::gnss_alt, t, alt, ta) && std::abs(ta - tl) < 1e-6;
    if (last_fix_quality_ > 0 && origin_set_) {
      double e, n, u;
      enu_.Forward(lat, lon, has_alt ? alt : enu_.HeightOrigin(), e, n, u);
      last_fix_e_ = e, last_fix_n_ = n, last_fix_u_ = u, last_fix_t_ = tl;
      last_sample_t_[idx(SensorKind::gnss_position)] = tl;
      double se = cfg_.gnss.position_std, sn = se, su = 2 * se, x, tx;
      if (cfg_.gnss.use_gst) {
        if (take(Channel::gnss_std_lat, t, x, tx)) gst_n_ = x;
        if (take(Channel::gnss_std_lon, t, x, tx)) gst_e_ = x;
        if (take(Channel::gnss_std_alt, t, x, tx)) gst_u_ = x;
        if (gst_e_ > 0) se = gst_e_;
        if (gst_n_ > 0) sn = gst_n_;
        if (gst_u_ > 0) su = gst_u_;
      }
      if (cfg_.gnss.use_position) {
        add(kGnssPos, 0, e, se * se, cfg_.gnss.gate_sigma, SensorKind::gnss_position);
        add(kGnssPos, 1, n, sn * sn, cfg_.gnss.gate_sigma, SensorKind::gnss_position);
        if (has_alt && cfg_.gnss.use_altitude)
          add(kGnssPos, 2, u, su * su, cfg_.gnss.gate_sigma, SensorKind::gnss_position);
      }
    }
  }
  if (take(Channel::gnss_course, t, v, ts)) last_gnss_course_ = v, have_course_ = true;
  if (take(Channel::gnss_speed, t, v, ts)) {
    last_gnss_speed_ = v;
    last_sample_t_[idx(SensorKind::gnss_velocity)] = ts;
    const double s = v, var = cfg_.gnss.velocity_std * cfg_.gnss.velocity_std;
    if (cfg_.gnss.use_velocity && (have_course_ || s < 0.2)) {
      const double ve = s < 0.2 ? 0.0 : s * std::sin(last_gnss_course_),
                   vn = s < 0.2 ? 0.0 : s * std::cos(last_gnss_course_);
      add(kGnssVel, 0, ve, var, cfg_.gnss.gate_sigma, SensorKind::gnss_velocity);
      add(kGnssVel, 1, vn, var, cfg_.gnss.gate_sigma, SensorKind::gnss_velocity);
    }
    if (cfg_.gnss.use_course && have_course_ && s > cfg_.gnss.course_min_speed) {
      last_sample_t_[idx(SensorKind::gnss_course)] = ts;
      // heading = course - the model's sideslip: the course's noise plus the sideslip's error
      const double vb = cfg_.gnss.course_sideslip_std * cfg_.gnss.course_sideslip_std;
      add(kGnssCourse, 0, course_to_heading(last_gnss_course_), var / (s * s) + vb, cfg_.gnss.gate_sigma,
          SensorKind::gnss_course);
    }
  }
  // IMU
  for (int k = 0; k < 3; ++k) {
    if (take(static_cast<Channel>(idx(Channel::gyro_x) + k), t, v, ts)) {
      if (cfg_.imu.use_gyro && cfg_.imu.gyro_axes[k])
        add(kGyro, k, v, cfg_.imu.gyro_std * cfg_.imu.gyro_std, cfg_.imu.gate_sigma, SensorKind::gyroscope);
    }
    if (take(static_cast<Channel>(idx(Channel::accel_x) + k), t, v, ts)) {
      if (use_accel_ && cfg_.imu.accel_axes[k])
        add(kAccel, k, v, cfg_.imu.accel_std * cfg_.imu.accel_std, cfg_.imu.gate_sigma, SensorKind::accelerometer);
    }
  }
  // Hall wheel sensors
  for (int w = 0; w < 4; ++w) {
    if (!take(static_cast<Channel>(idx(Channel::wheel_count_fl) + w), t, v, ts)) continue;
    if (!hall_[w]) hall_[w].emplace(cfg_.wheels.teeth, cfg_.wheels.modulus[w]);
    const double model_angle = obs_->state().q[vehicle_->wheels[w].spin];
    const double angle = hall_[w]->angle(static_cast<std::uint32_t>(std::llround(v)), model_angle);
    // the wheel's speed from its counts (low-passed), for a reset
    if (hall_prev_t_[w] >= 0 && ts > hall_prev_t_[w])
      hall_rate_[w] = 0.8 * hall_rate_[w] + 0.2 * (angle - hall_prev_angle_[w]) / (ts - hall_prev_t_[w]);
    hall_prev_angle_[w] = angle;
    hall_prev_t_[w] = ts;
    if (cfg_.wheels.use)
      add(kWheel0 + w, 0, angle, cfg_.wheels.angle_std * cfg_.wheels.angle_std, cfg_.wheels.gate_sigma,
          SensorKind::wheel_hall);
  }
}

void VehicleObserver::try_start_from_gnss(double t) {
  auto& slat = samples_[idx(Channel::gnss_lat)];
  auto& slon = samples_[idx(Channel::gnss_lon)];
  if (!(slat.fresh && slon.fresh) || slat.t > t + kSameInstant_s || last_fix_quality_ <= 0) {
    double q, tq;
    if (take(Channel::gnss_fix_quality, t, q, tq)) last_fix_quality_ = q;
    if (!(slat.fresh && slon.fresh) || slat.t > t + kSameInstant_s || last_fix_quality_ <= 0) return;
  }
  double alt = samples_[idx(Channel::gnss_alt)].fresh ? samples_[idx(Channel::gnss_alt)].value : 0;
  if (!origin_set_) {
    enu_.Reset(slat.value, slon.value, alt);
    origin_set_ = true;
  }
  double e, n, u;
  enu_.Forward(slat.value, slon.value, alt, e, n, u);
  const auto& ss = samples_[idx(Channel::gnss_speed)];
  const auto& sc = samples_[idx(Channel::gnss_course)];
  models::VehicleStart st;
  st.speed = ss.t >= 0 ? ss.value : 0;
  st.yaw = (sc.t >= 0 && st.speed > cfg_.gnss.course_min_speed) ? course_to_heading(sc.value) : 0.0;
  // the fix is the antenna: the chassis reference point is behind its lever arm
  Eigen::Vector3d arm = vehicle_->chassis_local(cfg_.gnss.antenna);
  st.x = e - (std::cos(st.yaw) * arm.x() - std::sin(st.yaw) * arm.y());
  st.y = n - (std::sin(st.yaw) * arm.x() + std::cos(st.yaw) * arm.y());
  try {
    start(st, t);
  } catch (const std::exception&) {
    return;  // no static equilibrium found: try again with the next fix
  }
}

void VehicleObserver::reinitialise(double t, std::uint32_t why) {
  ++counters_.resets;
  faults_ |= kFaultReset | why;
  const auto& s = obs_->state();
  models::VehicleOutputs o;
  models::vehicle_outputs(*vehicle_, s, o);
  models::VehicleStart st;
  const bool pos_ok = std::isfinite(o.position.x()) && std::isfinite(o.position.y());
  st.x = pos_ok ? o.position.x() : 0;
  st.y = pos_ok ? o.position.y() : 0;
  st.yaw = std::isfinite(o.yaw) ? o.yaw : 0;
  st.speed = std::isfinite(o.velocity_body.x()) ? o.velocity_body.x() : 0;
  if (last_fix_t_ >= 0 && t - last_fix_t_ < cfg_.gnss.timeout_s) {
    Eigen::Vector3d arm = vehicle_->chassis_local(cfg_.gnss.antenna);
    if (have_course_ && last_gnss_speed_ > cfg_.gnss.course_min_speed) st.yaw = course_to_heading(last_gnss_course_);
    st.x = last_fix_e_ - (std::cos(st.yaw) * arm.x() - std::sin(st.yaw) * arm.y());
    st.y = last_fix_n_ - (std::sin(st.yaw) * arm.x() + std::cos(st.yaw) * arm.y());
    st.speed = last_gnss_speed_;
  }
  try {
    start(st, t);
  } catch (const std::exception&) {
    started_ = false;  // wait for the next fix
  }
  for (auto& h : hall_) h.reset();
}

void VehicleObserver::reset_wheel(int w) {
  // The wheel's spin angle and speed from its Hall counts, the rest of the model kept; its
  // error-state rows and columns back to their initial variance.
  ++counters_.wheel_resets;
  auto& s = obs_->state();
  const int slot = vehicle_->wheels[w].spin;
  s.q[slot] = hall_prev_angle_[w];
  s.qd[slot] = hall_rate_[w];
  mb::solve_position(vehicle_->model, s.q, s.u, obs_->workspace());
  mb::solve_velocity(vehicle_->model, s.u, s.qd, obs_->workspace());
  const auto& obs = obs_->observed();
  const int n = static_cast<int>(obs.size());
  auto& P = obs_->filter().covariance();
  const auto& f = cfg_.settings.filter;
  auto restart = [&](int i, double sd) {
    P.row(i).setZero();
    P.col(i).setZero();
    P(i, i) = sd * sd;
  };
  const auto& forced = obs_->filter().forced();
  for (int j = 0; j < n; ++j) {
    if (vehicle_->model.z[obs[j]] != slot) continue;
    restart(j, f.initial_std_z[j]);
    restart(n + j, f.initial_std_zd[j]);
    for (std::size_t k = 0; k < forced.size(); ++k)
      if (forced[k] == j) restart(2 * n + static_cast<int>(k), f.initial_std_a[k]);
  }
}

void VehicleObserver::account(int kind, const UpdateResult& u) {
  auto& h = rec_.sensors[kind];
  if (u.accepted)
    ++h.fused;
  else
    ++h.rejected;
  tr_max_[kind] = std::max(tr_max_[kind], u.test_ratio);
}

const EstimateRecord& VehicleObserver::step(double t) {
  faults_ = 0;
  ++counters_.steps;
  if (!started_) {
    // The first fix places the model at this step's time: nothing to integrate yet.
    try_start_from_gnss(t);
    t_ = t;
    fill_record(t);
    return rec_;
  }
  gather(t);
  models::set_inputs(*vehicle_, inputs_, obs_->state());
  auto r = obs_->step(meas_, &results_);
  counters_.newton_iterations += static_cast<std::uint64_t>(r.model_step.iterations);
  t_ = t;
  bool gnss_pos_rejected = false, gnss_pos_accepted = false;
  for (std::size_t i = 0; i < meas_.size(); ++i) {
    account(meas_kind_[i], results_[i]);
    if (meas_[i].sensor >= kWheel0) {
      const int w = meas_[i].sensor - kWheel0;
      if (results_[i].accepted)
        wheel_rejected_since_[w] = -1;
      else if (wheel_rejected_since_[w] < 0)
        wheel_rejected_since_[w] = t;
      else if (t - wheel_rejected_since_[w] > cfg_.wheels.reset_after_rejection_s)
        reset_wheel(w), wheel_rejected_since_[w] = -1;
    }
    if (meas_kind_[i] == static_cast<int>(SensorKind::gnss_position)) {
      gnss_pos_rejected |= !results_[i].accepted;
      gnss_pos_accepted |= results_[i].accepted;
    }
  }
  if (!r.model_step.converged) ++counters_.model_step_failures, faults_ |= kFaultModelStepFailed;
  if (!r.correction_converged) ++counters_.correction_failures, faults_ |= kFaultCorrectionFailed;
  if (!r.model_step.converged || !r.correction_converged || !r.healthy) {
    reinitialise(t, kFaultDiverged);
  } else if (gnss_pos_rejected && !gnss_pos_accepted) {
    if (gnss_rejected_since_ < 0) gnss_rejected_since_ = t;
    if (t - gnss_rejected_since_ > cfg_.gnss.reset_after_rejection_s) {
      // The fixes have disagreed with the model for too long: trust the receiver (PX4's
      // position reset after a timeout of rejected GPS).
      gnss_rejected_since_ = -1;
      reinitialise(t, kFaultNone);
    }
  } else if (gnss_pos_accepted) {
    gnss_rejected_since_ = -1;
  }
  fill_record(t);
  return rec_;
}

void VehicleObserver::fill_record(double t) {
  ++rec_.seq;
  rec_.t = t;
  rec_.faults = faults_;
  rec_.resets = counters_.resets;
  // Per-sensor health. A kind of several channels is as old as its oldest channel: one dead
  // wheel sensor or gyro axis is a timeout although the others still send.
  auto oldest = [&](Channel first, int n, const std::array<bool, 3>* axes) {
    double o = std::numeric_limits<double>::infinity();
    bool any = false;
    for (int k = 0; k < n; ++k)
      if (!axes || (*axes)[k]) o = std::min(o, channel_last_t_[idx(first) + k]), any = true;
    if (!any)  // no axis selected: any of them counts
      for (int k = 0; k < n; ++k) o = std::min(o, channel_last_t_[idx(first) + k]);
    return o;
  };
  last_sample_t_[idx(SensorKind::wheel_hall)] = oldest(Channel::wheel_count_fl, 4, nullptr);
  last_sample_t_[idx(SensorKind::gyroscope)] = oldest(Channel::gyro_x, 3, &cfg_.imu.gyro_axes);
  last_sample_t_[idx(SensorKind::accelerometer)] = oldest(Channel::accel_x, 3, &cfg_.imu.accel_axes);
  const double timeouts[kSensorKindCount] = {cfg_.gnss.timeout_s, cfg_.gnss.timeout_s, cfg_.gnss.timeout_s,
                                             cfg_.imu.timeout_s,  cfg_.imu.timeout_s,  cfg_.wheels.timeout_s};
  for (std::size_t k = 0; k < kSensorKindCount; ++k) {
    auto& h = rec_.sensors[k];
    h.age_ms = last_sample_t_[k] < 0 ? -1 : (t - last_sample_t_[k]) * 1000;
    h.timed_out = last_sample_t_[k] < 0 || t - last_sample_t_[k] > timeouts[k];
    h.test_ratio = 0.9 * h.test_ratio + 0.1 * tr_max_[k];  // low-pass of the largest ratio of each step
    tr_max_[k] = 0;
  }
  const bool course_needed = last_gnss_speed_ > cfg_.gnss.course_min_speed;
  if (rec_.sensors[idx(SensorKind::gnss_position)].timed_out) rec_.faults |= kFaultGnssTimeout;
  if (rec_.sensors[idx(SensorKind::accelerometer)].timed_out || rec_.sensors[idx(SensorKind::gyroscope)].timed_out)
    rec_.faults |= kFaultImuTimeout;
  if (rec_.sensors[idx(SensorKind::wheel_hall)].timed_out) rec_.faults |= kFaultWheelTimeout;
  if (last_input_t_ < 0 || t - last_input_t_ > cfg_.input_timeout_s) rec_.faults |= kFaultInputTimeout;
  (void)course_needed;

  if (!started_) {
    rec_.valid = false;
    rec_.validity = {};
    return;
  }
  const auto& v = *vehicle_;
  const auto& s = obs_->state();
  models::vehicle_outputs(v, s, out_);
  rec_.x = out_.position.x(), rec_.y = out_.position.y(), rec_.z = out_.position.z();
  rec_.yaw = out_.yaw, rec_.pitch = out_.pitch, rec_.roll = out_.roll;
  rec_.vx = out_.velocity.x(), rec_.vy = out_.velocity.y(), rec_.vz = out_.velocity.z();
  rec_.v_long = out_.velocity_body.x(), rec_.v_lat = out_.velocity_body.y();
  rec_.yaw_rate = out_.yaw_rate;
  rec_.sideslip_deg = out_.sideslip / kDeg;
  for (int w = 0; w < 4; ++w) {
    const auto& o = out_.wheel[w];
    rec_.tyre_fx[w] = o.Fx, rec_.tyre_fy[w] = o.Fy, rec_.tyre_fz[w] = o.Fz;
    rec_.slip_ratio[w] = o.slip_ratio, rec_.slip_angle_deg[w] = o.slip_angle / kDeg;
    rec_.suspension_travel[w] = o.travel;
    rec_.wheel_angle[w] = o.spin_angle, rec_.wheel_speed[w] = o.spin_rate;
  }
  // 1-sigma from the filter covariance of the observed coordinates.
  const auto& P = obs_->filter().covariance();
  const auto& obs = obs_->observed();
  const int n = static_cast<int>(obs.size());
  auto find = [&](int slot) {
    for (int j = 0; j < n; ++j)
      if (v.model.z[obs[j]] == slot) return j;
    return -1;
  };
  const int ix = find(v.x), iy = find(v.y), iyaw = find(v.yaw);
  auto sd = [&](int i) { return i < 0 ? -1.0 : std::sqrt(std::max(0.0, P(i, i))); };
  rec_.std_x = sd(ix), rec_.std_y = sd(iy), rec_.std_yaw = sd(iyaw);
  rec_.std_vx = ix < 0 ? -1 : sd(n + ix);
  rec_.std_vy = iy < 0 ? -1 : sd(n + iy);
  const double mu_in = s.u[v.in.mu];
  rec_.friction = mu_in > 0 ? mu_in : v.params.axles[0].tyre.mu;
  rec_.std_friction = obs_->filter().inputs() > 0 ? sd(obs_->filter().inputs_offset()) : -1.0;
  const double speed = std::hypot(rec_.vx, rec_.vy);
  if (ix >= 0 && iy >= 0 && iyaw >= 0 && speed > cfg_.validity.min_speed_for_sideslip) {
    // v_lat = -sin(yaw) vx + cos(yaw) vy; beta ~ v_lat / speed: propagate P over (vx, vy, yaw).
    const int id[3] = {n + ix, n + iy, iyaw};
    const double J[3] = {-std::sin(rec_.yaw), std::cos(rec_.yaw), -rec_.v_long};
    double var = 0;
    for (int a = 0; a < 3; ++a)
      for (int b = 0; b < 3; ++b) var += J[a] * P(id[a], id[b]) * J[b];
    rec_.std_sideslip_deg = std::sqrt(std::max(0.0, var)) / speed / kDeg;
  } else {
    rec_.std_sideslip_deg = -1;
  }
  // Validity of each output.
  const auto& V = cfg_.validity;
  rec_.validity.position = rec_.std_x >= 0 && rec_.std_x < V.max_position_std && rec_.std_y < V.max_position_std;
  rec_.validity.heading = rec_.std_yaw >= 0 && rec_.std_yaw < V.max_yaw_std;
  rec_.validity.velocity = rec_.std_vx >= 0 && rec_.std_vx < V.max_velocity_std && rec_.std_vy < V.max_velocity_std;
  // A sensor the configuration fuses and that has stopped makes the outputs that lean on it
  // invalid; the position alone stays valid on its growing uncertainty (dead reckoning).
  auto lost = [&](SensorKind k, bool used) { return used && rec_.sensors[idx(k)].timed_out; };
  const bool gnss_lost = lost(SensorKind::gnss_position, cfg_.gnss.use_position) ||
                         lost(SensorKind::gnss_velocity, cfg_.gnss.use_velocity);
  const bool gyro_lost = lost(SensorKind::gyroscope, cfg_.imu.use_gyro);
  const bool wheels_lost = lost(SensorKind::wheel_hall, cfg_.wheels.use);
  rec_.validity.attitude = !lost(SensorKind::accelerometer, use_accel_);
  rec_.validity.heading = rec_.validity.heading && !gyro_lost;
  rec_.validity.virtual_sensors =
      rec_.validity.velocity && rec_.validity.heading && !wheels_lost && !(rec_.faults & kFaultInputTimeout);
  rec_.valid = !gnss_lost && rec_.validity.position && rec_.validity.heading && rec_.validity.velocity &&
               rec_.validity.attitude && rec_.validity.virtual_sensors &&
               !(rec_.faults & (kFaultDiverged | kFaultModelStepFailed));
}

}  // namespace mbo::est
