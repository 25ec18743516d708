#include "mbobserver/estimation/aiding/standstill.hpp"

#include <algorithm>
#include <cmath>

#include "mbobserver/estimation/sensors/imu.hpp"

namespace mbo::est::aiding {
namespace {

// A sample older than this says nothing of now (the wheel sources' timeouts are 0.1 s).
constexpr double kWheelTimeout_s = 0.2;
// The receiver's speed is believed for this long after its last sample (fixes come at 1-50 Hz).
constexpr double kGnssTimeout_s = 1.5;
// The gyro's mean is tested once it holds this many samples (its own sigma then 1/4.5 of a
// sample's), and is the mean of at most the last this many (10 s at 500 Hz).
constexpr int kGyroMinSamples = 20;
constexpr int kGyroMaxSamples = 5000;

}  // namespace

StandstillConfig read_standstill_config(const JsonReader& s, double default_gate) {
  StandstillConfig c;
  c.use = s.boolean("enabled", true);
  c.still_for_s = s.positive_up_to("still_for_s", 60, c.still_for_s);
  c.counts_tolerance = static_cast<int>(s.integer("counts_tolerance", 0, 100, c.counts_tolerance));
  c.max_wheel_speed = s.number_in("max_wheel_speed", 0, 10, c.max_wheel_speed);
  c.max_vehicle_speed = s.number_in("max_vehicle_speed", 0, 10, c.max_vehicle_speed);
  c.max_gnss_speed = s.number_in("max_gnss_speed", 0, 10, c.max_gnss_speed);
  c.max_model_speed = s.number_in("max_model_speed", 0, 10, c.max_model_speed);
  c.max_gyro_rate = s.number_in("max_gyro_rate", 0, 10, c.max_gyro_rate);
  c.gyro_change_sigma = s.number_in("gyro_change_sigma", 0, 1000, c.gyro_change_sigma);
  c.rate_std = s.positive_up_to("rate_std", 1, c.rate_std);
  c.gate_sigma = s.number_in("gate_sigma", 0, kMaxGateSigma, default_gate);
  if (auto b = s.find("bias_walk")) {
    auto& w = c.bias_walk;
    w.on = b->boolean("enabled", true);
    w.settle_s = b->positive_up_to("settle_s", 60, w.settle_s);
    w.nis_limit = b->number_in("nis_limit", 1, 1e6, w.nis_limit);
    w.max_scale = b->number_in("max_scale", 1, 1e8, w.max_scale);
    b->finish();
  }
  s.finish();
  return c;
}

StandstillAiding::StandstillAiding(const StandstillConfig& config, const models::Vehicle& vehicle,
                                   const Eigen::Matrix3d& rotation, const std::array<bool, 3>& gyro_axes,
                                   const std::array<std::uint64_t, 4>& modulus, double gnss_velocity_std,
                                   double gyro_std)
    : cfg_(config),
      vehicle_(vehicle),
      rotation_(rotation),
      axes_(gyro_axes),
      modulus_(modulus),
      gnss_speed_limit_(std::max(cfg_.max_gnss_speed, 5 * gnss_velocity_std)),
      gyro_change_limit_(cfg_.gyro_change_sigma * gyro_std) {
  health_.set_timeout(cfg_.still_for_s);
}

void StandstillAiding::add_models(SensorModels& models) const {
  const auto& v = vehicle_;
  models[index_of(SensorKind::standstill)] =
      std::make_shared<GyroSensor>(ChassisFrame{v.u, v.v, v.w}, rotation_, Eigen::Vector3d::Zero());
}

bool StandstillAiding::Wheels::still(double t, double still_for, double timeout) const {
  for (int w = 0; w < 4; ++w)
    if (still_since[w] < 0 || t - last_t[w] > timeout || t - still_since[w] < still_for) return false;
  return true;
}

void StandstillAiding::observe(const Measurement& m) {
  const auto c = index_of(m.channel);
  if (c >= index_of(Channel::wheel_count_fl) && c <= index_of(Channel::wheel_count_rr)) {
    const std::size_t w = c - index_of(Channel::wheel_count_fl);
    // the counts' move since the still time began, unwrapped (the counter wraps at its modulus)
    const double M = static_cast<double>(modulus_[w]);
    double d = std::fmod(m.value - ref_counts_[w], M);
    if (d > M / 2) d -= M;
    if (d < -M / 2) d += M;
    if (hall_.still_since[w] < 0 || std::abs(d) > cfg_.counts_tolerance) {
      ref_counts_[w] = m.value;
      hall_.still_since[w] = m.t;
    }
    hall_.last_t[w] = m.t;
  } else if (c >= index_of(Channel::wheel_speed_fl) && c <= index_of(Channel::wheel_speed_rr)) {
    const std::size_t w = c - index_of(Channel::wheel_speed_fl);
    if (std::abs(m.value) > cfg_.max_wheel_speed || speeds_.still_since[w] < 0) speeds_.still_since[w] = m.t;
    speeds_.last_t[w] = m.t;
  } else if (m.channel == Channel::vehicle_speed) {
    if (std::abs(m.value) > cfg_.max_vehicle_speed || speed_still_since_ < 0) speed_still_since_ = m.t;
    speed_last_t_ = m.t;
  } else if (m.channel == Channel::gnss_speed) {
    if (std::abs(m.value) > gnss_speed_limit_) gnss_moving_t_ = m.t;
    gnss_last_t_ = m.t;
  } else if (c >= index_of(Channel::gyro_x) && c <= index_of(Channel::gyro_z)) {
    const std::size_t k = c - index_of(Channel::gyro_x);
    if (!axes_[k]) return;
    auto& n = gyro_samples_[k];
    auto& mean = gyro_mean_[k];
    const bool departs =
        gyro_change_limit_ > 0 && n >= kGyroMinSamples && std::abs(m.value - mean) > gyro_change_limit_;
    if (std::abs(m.value) > cfg_.max_gyro_rate || departs) {
      gyro_moving_t_ = m.t;
      n = 0;  // a new mean from this sample on
    }
    n = std::min(n + 1, kGyroMaxSamples);
    mean += (m.value - mean) / n;
  }
}

bool StandstillAiding::decide(double t, double model_speed) {
  standing_ = false;
  if (!cfg_.use || !(std::abs(model_speed) <= cfg_.max_model_speed)) return false;
  const bool hall_live = hall_.last_t[0] >= 0 && t - hall_.last_t[0] <= kWheelTimeout_s;
  const bool speeds_live = speeds_.last_t[0] >= 0 && t - speeds_.last_t[0] <= kWheelTimeout_s;
  const bool speed_live = speed_last_t_ >= 0 && t - speed_last_t_ <= kWheelTimeout_s;
  if (!hall_live && !speeds_live && !speed_live) return false;  // nothing sees the wheels
  if (hall_live && !hall_.still(t, cfg_.still_for_s, kWheelTimeout_s)) return false;
  if (speeds_live && !speeds_.still(t, cfg_.still_for_s, kWheelTimeout_s)) return false;
  if (speed_live && t - speed_still_since_ < cfg_.still_for_s) return false;
  // the receiver and the gyro may each veto: a speed or a rate over the limit within still_for_s
  if (gnss_last_t_ >= 0 && t - gnss_last_t_ <= kGnssTimeout_s && t - gnss_moving_t_ < cfg_.still_for_s) return false;
  if (gyro_moving_t_ >= 0 && t - gyro_moving_t_ < cfg_.still_for_s) return false;
  standing_ = true;
  return true;
}

void StandstillAiding::gather(MeasurementRows& rows) const {
  if (!standing_) return;
  for (int k = 0; k < 3; ++k)
    if (axes_[k]) rows.add(SensorKind::standstill, k, 0.0, cfg_.rate_std * cfg_.rate_std, cfg_.gate_sigma);
}

void StandstillAiding::forget_time() {
  hall_ = {};
  speeds_ = {};
  speed_still_since_ = speed_last_t_ = gnss_moving_t_ = gnss_last_t_ = gyro_moving_t_ = -1;
  gyro_samples_ = {};
  standing_ = false;
  health_.sampled(-1);
}

void StandstillAiding::update_health(double t) {
  if (standing_) health_.sampled(t);
  health_.update(t);
}

}  // namespace mbo::est::aiding
