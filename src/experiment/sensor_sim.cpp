#include "mbobserver/experiment/sensor_sim.hpp"

#include <cmath>

namespace mbo::exp {
namespace {
constexpr double kDeg = M_PI / 180;
Eigen::Vector3d vec3(const JsonReader& r) {
  auto v = r.as_numbers(3);
  return {v[0], v[1], v[2]};
}
}  // namespace

SensorSimConfig read_sensor_sim_config(const JsonReader& r) {
  SensorSimConfig c;
  if (auto o = r.find("origin")) {
    c.lat0 = o->number_in("lat", -90, 90);
    c.lon0 = o->number_in("lon", -180, 180);
    c.alt0 = o->number("alt", 0);
    o->finish();
  }
  if (auto i = r.find("imu")) {
    c.imu_rate_hz = i->positive("rate_hz", c.imu_rate_hz);
    c.accel_std = i->non_negative("accel_std", c.accel_std);
    c.gyro_std = i->non_negative("gyro_std", c.gyro_std);
    if (auto p = i->find("position")) c.imu_position = vec3(*p);
    if (auto rr = i->find("rotation_deg")) {
      Eigen::Vector3d rpy = vec3(*rr) * kDeg;
      c.imu_rotation =
          (Eigen::AngleAxisd(rpy[2], Eigen::Vector3d::UnitZ()) * Eigen::AngleAxisd(rpy[1], Eigen::Vector3d::UnitY()) *
           Eigen::AngleAxisd(rpy[0], Eigen::Vector3d::UnitX()))
              .toRotationMatrix();
    }
    i->finish();
  }
  if (auto w = r.find("wheels")) {
    c.wheel_rate_hz = w->positive("rate_hz", c.wheel_rate_hz);
    c.teeth = static_cast<int>(w->integer("teeth", 1, 100000, c.teeth));
    c.modulus = static_cast<std::uint64_t>(w->integer("modulus", 2, 1LL << 32, static_cast<long long>(c.modulus)));
    c.wheel_extra_std = w->non_negative("extra_std", 0);
    w->finish();
  }
  if (auto g = r.find("gnss")) {
    c.gnss_rate_hz = g->positive("rate_hz", c.gnss_rate_hz);
    c.position_std = g->non_negative("position_std", c.position_std);
    c.velocity_std = g->non_negative("velocity_std", c.velocity_std);
    if (auto a = g->find("antenna")) c.antenna = vec3(*a);
    if (auto o = g->find("outages"))
      for (const auto& w : o->items()) {
        auto p = w.as_numbers(2);
        if (!(p[1] > p[0])) w.fail("an outage is [from, to) with to > from");
        c.outages.emplace_back(p[0], p[1]);
      }
    if (auto j = g->find("jumps"))
      for (const auto& w : j->items()) {
        GnssJump jp;
        jp.from = w.non_negative("from");
        jp.to = w.positive("to");
        if (!(jp.to > jp.from)) w.fail("a jump needs to > from");
        jp.east = w.number("east", 0);
        jp.north = w.number("north", 0);
        w.finish();
        c.jumps.push_back(jp);
      }
    c.fix_quality = static_cast<int>(g->integer("fix_quality", 0, 8, c.position_std < 0.05 ? 4 : 1));
    g->finish();
  }
  if (auto in = r.find("inputs")) {
    c.inputs_rate_hz = in->positive("rate_hz", c.inputs_rate_hz);
    in->finish();
  }
  r.finish();
  return c;
}

SensorSim::SensorSim(const models::Vehicle& truth, const SensorSimConfig& c, std::uint64_t seed)
    : v_(truth), c_(c), rng_(seed), enu_(c.lat0, c.lon0, c.alt0) {}

bool SensorSim::due(double t, double rate, long& next) {
  if (t + 1e-9 < next / rate) return false;
  next = static_cast<long>(std::floor(t * rate + 1e-6)) + 1;
  return true;
}

void SensorSim::start(const mb::State& s) {
  for (int w = 0; w < 4; ++w) {
    const int slot = v_.wheels[w].spin;
    angle_[w] = s.q[slot];
    rate_[w] = s.qd[slot];
    accel_[w] = s.qdd[slot];
  }
  last_t_ = s.t;
  started_ = true;
}

void SensorSim::sample(double t, const mb::State& s, const models::VehicleInputs& in, std::vector<Measurement>& out) {
  // A Hall sensor counts the teeth that pass it: the wheel's true angle, not the model's
  // discrete one. Between two steps the spin rate is taken as the cubic through the rates and
  // accelerations at both ends (C1 across steps), whose integral over the step is exact:
  // h/2 (w0 + w1) + h^2/12 (a0 - a1) (what Simpson's rule gives over any sub-steps of it).
  if (!started_) {
    start(s);
  } else if (t > last_t_) {
    const double h = t - last_t_;
    for (int w = 0; w < 4; ++w) {
      const int slot = v_.wheels[w].spin;
      angle_[w] += 0.5 * h * (rate_[w] + s.qd[slot]) + h * h / 12 * (accel_[w] - s.qdd[slot]);
      rate_[w] = s.qd[slot];
      accel_[w] = s.qdd[slot];
    }
    last_t_ = t;
  }
  auto put = [&](Channel c, double v) { out.push_back({t, c, v}); };
  if (due(t, c_.inputs_rate_hz, next_inputs_)) {
    put(Channel::steer_angle, in.steer);
    for (int w = 0; w < 4; ++w) {
      put(static_cast<Channel>(static_cast<int>(Channel::drive_torque_fl) + w), in.drive_torque[w]);
      put(static_cast<Channel>(static_cast<int>(Channel::brake_pressure_fl) + w), in.brake_pressure[w]);
    }
  }
  const bool imu = due(t, c_.imu_rate_hz, next_imu_);
  const bool wheels = due(t, c_.wheel_rate_hz, next_wheel_);
  const bool gnss = due(t, c_.gnss_rate_hz, next_gnss_);
  if (!(imu || wheels || gnss)) return;
  if (imu) {
    auto k = models::chassis_point_kinematics(v_, s, c_.imu_position);
    Eigen::Vector3d a = c_.imu_rotation.transpose() * k.specific_force_body;
    Eigen::Vector3d w = c_.imu_rotation.transpose() * models::chassis_rotation(v_, s.q).transpose() *
                        models::chassis_angular_velocity(v_, s.q, s.qd);
    for (int i = 0; i < 3; ++i) {
      put(static_cast<Channel>(static_cast<int>(Channel::accel_x) + i), a[i] + c_.accel_std * normal_(rng_));
      put(static_cast<Channel>(static_cast<int>(Channel::gyro_x) + i), w[i] + c_.gyro_std * normal_(rng_));
    }
  }
  if (wheels) {
    for (int w = 0; w < 4; ++w) {
      double theta = angle_[w] + c_.wheel_extra_std * normal_(rng_);
      long long n = static_cast<long long>(std::floor(theta * c_.teeth / (2 * M_PI)));
      const long long m = c_.modulus;
      put(static_cast<Channel>(static_cast<int>(Channel::wheel_count_fl) + w), static_cast<double>(((n % m) + m) % m));
    }
  }
  if (gnss) {
    bool out_now = false;
    for (auto [a, b] : c_.outages) out_now = out_now || (t >= a && t < b);
    if (!out_now) {
      auto k = models::chassis_point_kinematics(v_, s, c_.antenna);
      double e = k.position.x() + c_.position_std * normal_(rng_);
      double n = k.position.y() + c_.position_std * normal_(rng_);
      double u = k.position.z() + 2 * c_.position_std * normal_(rng_);
      for (const auto& j : c_.jumps)
        if (t >= j.from && t < j.to) e += j.east, n += j.north;
      double lat, lon, alt;
      enu_.Reverse(e, n, u, lat, lon, alt);
      double ve = k.velocity.x() + c_.velocity_std * normal_(rng_);
      double vn = k.velocity.y() + c_.velocity_std * normal_(rng_);
      double speed = std::hypot(ve, vn);
      put(Channel::gnss_lat, lat);
      put(Channel::gnss_lon, lon);
      put(Channel::gnss_alt, alt);
      put(Channel::gnss_speed, speed);
      // NMEA gives no course at standstill (minmea: empty field)
      if (speed > 0.3) {
        double course = std::atan2(ve, vn);
        if (course < 0) course += 2 * M_PI;
        put(Channel::gnss_course, course);
      }
      put(Channel::gnss_std_lat, c_.position_std);
      put(Channel::gnss_std_lon, c_.position_std);
      put(Channel::gnss_std_alt, 2 * c_.position_std);
      put(Channel::gnss_fix_quality, c_.fix_quality);
    }
  }
}

}  // namespace mbo::exp
