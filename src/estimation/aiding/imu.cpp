#include "mbobserver/estimation/aiding/imu.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "mbobserver/estimation/sensors/imu.hpp"

namespace mbo::est::aiding {
namespace {

constexpr double kDeg = M_PI / 180;

}  // namespace

ImuConfig read_imu_config(const JsonReader& m, double default_gate) {
  ImuConfig I;
  if (m.has("position")) {
    const auto p = m.numbers_in("position", 3, -kMaxLeverArm_m, kMaxLeverArm_m);
    I.position = {p[0], p[1], p[2]};
  }
  if (m.has("rotation_deg")) {
    const auto a = m.numbers_in("rotation_deg", 3, -360, 360);
    const Eigen::Vector3d rpy = Eigen::Vector3d(a[0], a[1], a[2]) * kDeg;
    I.rotation =
        (Eigen::AngleAxisd(rpy[2], Eigen::Vector3d::UnitZ()) * Eigen::AngleAxisd(rpy[1], Eigen::Vector3d::UnitY()) *
         Eigen::AngleAxisd(rpy[0], Eigen::Vector3d::UnitX()))
            .toRotationMatrix();
  }
  I.accel_std = m.positive_up_to("accel_std", 1000, I.accel_std);
  I.gyro_std = m.positive_up_to("gyro_std", 100, I.gyro_std);
  I.use_accel = m.boolean("use_accel", true);
  I.accel_attitude = m.boolean("accel_attitude", true);
  I.use_gyro = m.boolean("use_gyro", true);
  auto axes = [&](const char* key, std::array<bool, 3>& out) {
    if (!m.has(key)) return;
    auto r = m.at(key);
    std::string a = r.as_string();
    out = {false, false, false};
    for (char ch : a) {
      if (ch < 'x' || ch > 'z') r.fail("expected a combination of x, y and z");
      out[ch - 'x'] = true;
    }
  };
  axes("gyro_axes", I.gyro_axes);
  axes("accel_axes", I.accel_axes);
  I.timeout_s = m.positive_up_to("timeout_s", 60, I.timeout_s);
  I.gate_sigma = m.number_in("gate_sigma", 0, kMaxGateSigma, default_gate);
  I.stuck_after_s = m.number_in("stuck_after_s", 0, 60, I.stuck_after_s);
  I.gyro_bias = read_estimate_config(m, "estimate_gyro_bias", I.gyro_bias, kDeg);
  I.accel_bias = read_estimate_config(m, "estimate_accel_bias", I.accel_bias);
  I.gyro_bias_std = m.number_in("gyro_bias_std", 0, 10, I.gyro_bias_std / kDeg) * kDeg;
  I.gyro_scale_std = m.number_in("gyro_scale_std", 0, 0.2, 0);
  I.gyro_scale = read_estimate_config(m, "estimate_gyro_scale", I.gyro_scale);
  if (I.gyro_scale.on && (I.gyro_scale.min <= -1 || I.gyro_scale.max > 1))
    m.at("estimate_gyro_scale").fail("a scale-factor error's range must lie within (-1, 1]");
  m.finish();
  return I;
}

ImuAiding::ImuAiding(const ImuConfig& config, const models::Vehicle& vehicle) : cfg_(config), vehicle_(vehicle) {
  for (auto& h : health_) h.set_timeout(cfg_.timeout_s);
  same_since_.fill(-1);
}

bool ImuAiding::hold(const Measurement& m) {
  if (m.t < samples_.peek(m.channel).t) return false;
  const std::size_t k = index_of(m.channel) - index_of(kFirst);
  const bool gyro = m.channel >= Channel::gyro_x;
  auto& health = health_[slot(gyro ? SensorKind::gyroscope : SensorKind::accelerometer)];
  if (m.value != same_value_[k] || same_since_[k] < 0) same_value_[k] = m.value, same_since_[k] = m.t;
  const std::size_t axis = k % 3;
  const bool fused = gyro ? cfg_.use_gyro && cfg_.gyro_axes[axis] : use_accel_ && cfg_.accel_axes[axis];
  const bool stuck = fused && cfg_.stuck_after_s > 0 && m.t - same_since_[k] >= cfg_.stuck_after_s;
  if ((m.flags & kAtLimit) || stuck) {
    health.implausible();
    return true;
  }
  return samples_.hold(m);
}

void ImuAiding::declare_parameters(SensorParameters& list) {
  constexpr const char* kAxis[3] = {"x", "y", "z"};
  for (int k = 0; k < 3; ++k) {
    const auto& g = cfg_.gyro_bias;
    if (g.on && cfg_.use_gyro && cfg_.gyro_axes[k])
      gyro_bias_param_[k] =
          list.add({std::string("gyro_bias_") + kAxis[k], 0.0, g.initial_std, g.rate_noise, g.min, g.max, 0.01 * kDeg});
    const auto& s = cfg_.gyro_scale;
    if (s.on && cfg_.use_gyro && cfg_.gyro_axes[k])  // learned: its 1-sigma below 0.1 %
      gyro_scale_param_[k] =
          list.add({std::string("gyro_scale_") + kAxis[k], 0.0, s.initial_std, s.rate_noise, s.min, s.max, 0.001});
    const auto& a = cfg_.accel_bias;
    if (a.on && use_accel_ && cfg_.accel_axes[k])
      accel_bias_param_[k] =
          list.add({std::string("accel_bias_") + kAxis[k], 0.0, a.initial_std, a.rate_noise, a.min, a.max, 0.02});
  }
}

void ImuAiding::declare_unmodelled(std::vector<double>& sigma) {
  for (int k = 0; k < 3; ++k)
    if (cfg_.gyro_bias_std > 0 && gyro_bias_param_[k] < 0 && cfg_.use_gyro && cfg_.gyro_axes[k]) {
      unmodelled_[k] = static_cast<int>(sigma.size());
      sigma.push_back(cfg_.gyro_bias_std);
    }
  for (int k = 0; k < 3; ++k)
    if (cfg_.gyro_scale_std > 0 && gyro_scale_param_[k] < 0 && cfg_.use_gyro && cfg_.gyro_axes[k]) {
      unmodelled_scale_[k] = static_cast<int>(sigma.size());
      sigma.push_back(cfg_.gyro_scale_std);
    }
}

void ImuAiding::add_models(SensorModels& models) const {
  const auto& v = vehicle_;
  const ChassisFrame f{v.u, v.v, v.w};
  auto gyro = std::make_shared<GyroSensor>(f, cfg_.rotation, Eigen::Vector3d::Zero());
  gyro->estimate_bias(gyro_bias_param_);
  gyro->estimate_scale(gyro_scale_param_);
  models[index_of(SensorKind::gyroscope)] = gyro;
  auto accel = std::make_shared<AccelerometerSensor>(f, v.chassis_point(cfg_.position), cfg_.rotation, v.model.gravity,
                                                     Eigen::Vector3d::Zero(), cfg_.accel_attitude);
  accel->estimate_bias(accel_bias_param_);
  models[index_of(SensorKind::accelerometer)] = accel;
}

void ImuAiding::use_accelerometers(const std::vector<int>& observed, bool force_error, const std::vector<int>& forced) {
  const auto& v = vehicle_;
  // errorEKF has no acceleration state: the accelerometers then inform the attitude only,
  // through gravity (Sinigaglia 2016 eq. (116)). With pitch and roll left to the model that
  // leaves them nothing to correct but yaw through the lateral acceleration, which would take
  // the model's acceleration errors for heading errors: they are used only when they can help.
  bool pitch_or_roll = false;
  for (int o : observed) pitch_or_roll = pitch_or_roll || v.model.z[o] == v.pitch || v.model.z[o] == v.roll;
  // The accelerometers see the chassis: they inform errorEKF-FE only through an acceleration
  // error of a chassis coordinate (a wheel's torque error leaves their rows empty).
  bool chassis_forced = false;
  if (force_error) {
    for (int k : forced) {
      const int slot = v.model.z[observed[k]];
      chassis_forced = chassis_forced || slot == v.x || slot == v.y || slot == v.z || slot == v.yaw ||
                       slot == v.pitch || slot == v.roll;
    }
  }
  use_accel_ = cfg_.use_accel && (chassis_forced || pitch_or_roll);
}

void ImuAiding::gather(double t, MeasurementRows& rows) {
  double v = 0, ts = 0;
  for (int k = 0; k < 3; ++k) {
    if (samples_.take(static_cast<Channel>(index_of(Channel::gyro_x) + k), t, v, ts) && cfg_.use_gyro &&
        cfg_.gyro_axes[k] && (!standing_ || gyro_bias_param_[k] >= 0))
      // omega_meas = (1 + s) omega + b: the scale error's coefficient is the rate, here measured
      rows.add2(SensorKind::gyroscope, k, v, cfg_.gyro_std * cfg_.gyro_std, cfg_.gate_sigma, unmodelled_[k], 1.0,
                unmodelled_scale_[k], v);
    if (samples_.take(static_cast<Channel>(index_of(Channel::accel_x) + k), t, v, ts) && use_accel_ && accel_open_ &&
        cfg_.accel_axes[k])
      rows.add(SensorKind::accelerometer, k, v, cfg_.accel_std * cfg_.accel_std, cfg_.gate_sigma);
  }
}

double ImuAiding::oldest(Channel first, const std::array<bool, 3>& axes) const {
  const bool any = axes[0] || axes[1] || axes[2];
  double o = std::numeric_limits<double>::infinity();
  for (int k = 0; k < 3; ++k)
    if (!any || axes[k]) o = std::min(o, samples_.last_taken(static_cast<Channel>(index_of(first) + k)));
  return o;
}

void ImuAiding::update_health(double t) {
  health_[slot(SensorKind::gyroscope)].sampled(oldest(Channel::gyro_x, cfg_.gyro_axes));
  health_[slot(SensorKind::accelerometer)].sampled(oldest(Channel::accel_x, cfg_.accel_axes));
  for (auto& h : health_) h.update(t);
}

}  // namespace mbo::est::aiding
