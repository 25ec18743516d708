#include "mbobserver/experiment/sensor_sim.hpp"

#include <algorithm>
#include <cmath>

namespace mbo::exp {
namespace {
constexpr double kDeg = M_PI / 180;
// The random streams of one run besides the white noise (stream_seed).
enum Stream : std::uint64_t { kAccelDrift = 1, kGyroDrift, kToothWheel, kGnssError, kMultipath, kBus, kLatency };

Eigen::Vector3d vec3(const JsonReader& r) {
  auto v = r.as_numbers(3);
  return {v[0], v[1], v[2]};
}

// A number for all three axes, or one per axis.
std::array<double, 3> per_axis(const JsonReader& r, const std::string& key, bool non_negative) {
  std::array<double, 3> out{};
  if (!r.has(key)) return out;
  auto item = r.at(key);
  if (item.is_number()) {
    out.fill(item.as_number());
  } else {
    auto v = item.as_numbers(3);
    std::copy(v.begin(), v.end(), out.begin());
  }
  if (non_negative)
    for (double x : out)
      if (!(x >= 0)) item.fail("must be >= 0");
  return out;
}

// One triad's errors: "accel" or "gyro" inside "imu" (docs/simulation.md, "IMU").
void read_triad(const JsonReader& r, double rate_hz, double& noise_std, ImuTriadErrors& e) {
  e.bias = per_axis(r, "bias", false);
  e.instability = per_axis(r, "bias_instability", true);
  e.correlation_s = r.positive("bias_correlation_s", e.correlation_s);
  e.scale = per_axis(r, "scale_factor", false);
  for (double s : e.scale)
    if (!(s > -1)) r.at("scale_factor").fail("a scale-factor error is > -1");
  if (auto c = r.find("cross_axis")) {
    auto v = c->as_numbers(6);
    std::copy(v.begin(), v.end(), e.cross_axis.begin());
  }
  e.range = r.positive("range", e.range);
  // white noise as a datasheet gives it: a density (unit / sqrt(Hz)), per sample
  // density * sqrt(rate) (the band up to the Nyquist frequency holds density^2 rate / 2 per side)
  if (r.has("noise_density")) noise_std = r.non_negative("noise_density") * std::sqrt(rate_hz);
  r.finish();
}

SampleTiming read_timing(const JsonReader& r) {
  SampleTiming t;
  t.latency_s = r.number_in("latency_s", 0, 10, 0);
  t.latency_jitter_s = r.number_in("latency_jitter_s", 0, 10, 0);
  t.clock_ppm = r.number_in("clock_ppm", -1e5, 1e5, 0);
  t.clock_offset_s = r.number_in("clock_offset_s", 0, 10, 0);
  return t;
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
    if (auto a = i->find("accel")) {
      if (i->has("accel_std") && a->has("noise_density")) a->fail("give accel_std or noise_density, not both");
      read_triad(*a, c.imu_rate_hz, c.accel_std, c.accel_errors);
    }
    if (auto g = i->find("gyro")) {
      if (i->has("gyro_std") && g->has("noise_density")) g->fail("give gyro_std or noise_density, not both");
      read_triad(*g, c.imu_rate_hz, c.gyro_std, c.gyro_errors);
    }
    c.imu_timing = read_timing(*i);
    i->finish();
  }
  if (auto w = r.find("wheels")) {
    c.wheel_rate_hz = w->positive("rate_hz", c.wheel_rate_hz);
    c.teeth = static_cast<int>(w->integer("teeth", 1, 100000, c.teeth));
    c.modulus = static_cast<std::uint64_t>(w->integer("modulus", 2, 1LL << 32, static_cast<long long>(c.modulus)));
    c.wheel_extra_std = w->non_negative("extra_std", 0);
    c.tooth_error_std = w->number_in("tooth_error_std", 0, 0.2, 0);
    c.wheel_timing = read_timing(*w);
    w->finish();
  }
  if (auto g = r.find("gnss")) {
    // An accuracy class sets the defaults; the keys given beside it win.
    int quality = -1;
    if (g->has("class")) {
      std::string name = g->string("class");
      const GnssClass* cls = nullptr;
      std::string known;
      for (const auto& k : gnss_classes()) {
        if (name == k.name) cls = &k;
        known += (known.empty() ? "" : ", ") + std::string(k.name);
      }
      if (!cls) g->at("class").fail("unknown GNSS class \"" + name + "\" (known: " + known + ")");
      c.gnss_class = name;
      c.position_std = cls->position_std;
      c.position_correlation_s = cls->correlation_s;
      c.velocity_std = cls->velocity_std;
      quality = cls->fix_quality;
    }
    c.gnss_rate_hz = g->positive("rate_hz", c.gnss_rate_hz);
    c.position_std = g->non_negative("position_std", c.position_std);
    c.velocity_std = g->non_negative("velocity_std", c.velocity_std);
    c.position_correlation_s = g->non_negative("position_correlation_s", c.position_correlation_s);
    c.reported_std_factor = g->positive("reported_std_factor", c.reported_std_factor);
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
    if (auto m = g->find("multipath")) {
      c.multipath.rate_per_min = m->non_negative("rate_per_min");
      c.multipath.size_m = m->non_negative("size_m");
      c.multipath.duration_s = m->positive("duration_s");
      m->finish();
    }
    if (quality < 0) quality = c.position_std < 0.05 ? 4 : 1;
    c.fix_quality = static_cast<int>(g->integer("fix_quality", 0, 8, quality));
    c.gnss_timing = read_timing(*g);
    c.gnss_stamp_fix_time = g->choice("stamp", {"arrival", "fix_time"}, "arrival") == "fix_time";
    if (c.gnss_timing.own_clock()) g->fail("a GNSS receiver keeps GNSS time: no clock_ppm or clock_offset_s");
    g->finish();
  }
  if (auto in = r.find("inputs")) {
    c.inputs_rate_hz = in->positive("rate_hz", c.inputs_rate_hz);
    c.inputs_timing = read_timing(*in);
    in->finish();
  }
  if (auto b = r.find("can")) {
    c.can_jitter_s = b->number_in("jitter_s", 0, 1, 0);
    c.can_drop_probability = b->number_in("drop_probability", 0, 0.9, 0);
    b->finish();
  }
  r.finish();
  return c;
}

SensorSim::SensorSim(const models::Vehicle& truth, const SensorSimConfig& c, std::uint64_t seed)
    : v_(truth),
      c_(c),
      rng_(seed),
      enu_(c.lat0, c.lon0, c.alt0),
      accel_drift_(c.accel_errors, stream_seed(seed, kAccelDrift)),
      gyro_drift_(c.gyro_errors, stream_seed(seed, kGyroDrift)),
      gnss_rng_(stream_seed(seed, kGnssError)),
      multipath_rng_(stream_seed(seed, kMultipath)),
      bus_rng_(stream_seed(seed, kBus)),
      latency_rng_(stream_seed(seed, kLatency)) {
  rate_[kInputs] = c.inputs_rate_hz, rate_[kImu] = c.imu_rate_hz;
  rate_[kWheels] = c.wheel_rate_hz, rate_[kGnss] = c.gnss_rate_hz;
  timing_[kInputs] = c.inputs_timing, timing_[kImu] = c.imu_timing;
  timing_[kWheels] = c.wheel_timing, timing_[kGnss] = c.gnss_timing;
  std::mt19937_64 tooth_rng(stream_seed(seed, kToothWheel));
  for (auto& w : tone_) w = ToothWheel(c.teeth, c.tooth_error_std, tooth_rng);
  const double tau = c.position_correlation_s;
  gnss_error_ = {GaussMarkov(c.position_std, tau), GaussMarkov(c.position_std, tau),
                 GaussMarkov(2 * c.position_std, tau)};
  if (c.multipath.rate_per_min > 0)
    multipath_next_ = std::exponential_distribution<double>(c.multipath.rate_per_min / 60)(multipath_rng_);
}

bool SensorSim::due(double t, double rate, long& next) {
  if (t + 1e-9 < next / rate) return false;
  next = static_cast<long>(std::floor(t * rate + 1e-6)) + 1;
  return true;
}

void SensorSim::sense(Group g, const mb::State& s, const models::VehicleInputs& in, Signals& out) const {
  out.t = s.t;
  switch (g) {
    case kInputs:
      out.inputs = in;
      break;
    case kImu: {
      auto k = models::chassis_point_kinematics(v_, s, c_.imu_position);
      out.imu.accel = c_.imu_rotation.transpose() * k.specific_force_body;
      out.imu.gyro = c_.imu_rotation.transpose() * models::chassis_rotation(v_, s.q).transpose() *
                     models::chassis_angular_velocity(v_, s.q, s.qd);
      break;
    }
    case kWheels:
      // the angle a Hall sensor counts: the integral of the wheel's spin rate (sample())
      out.wheel = angle_;
      break;
    case kGnss: {
      auto k = models::chassis_point_kinematics(v_, s, c_.antenna);
      out.gnss.position = k.position;
      out.gnss.velocity = k.velocity;
      break;
    }
    default:
      break;
  }
}

SensorSim::Signals SensorSim::interpolate(Group g, const Signals& a, const Signals& b, double t) {
  const double span = b.t - a.t;
  const double f = span > 0 ? std::clamp((t - a.t) / span, 0.0, 1.0) : 1.0;
  auto lerp = [f](const auto& x, const auto& y) { return x + f * (y - x); };
  Signals s;
  s.t = t;
  switch (g) {
    case kInputs:
      s.inputs = b.inputs;
      s.inputs.steer = lerp(a.inputs.steer, b.inputs.steer);
      for (int w = 0; w < 4; ++w) {
        s.inputs.drive_torque[w] = lerp(a.inputs.drive_torque[w], b.inputs.drive_torque[w]);
        s.inputs.brake_pressure[w] = lerp(a.inputs.brake_pressure[w], b.inputs.brake_pressure[w]);
      }
      break;
    case kImu:
      s.imu.accel = lerp(a.imu.accel, b.imu.accel);
      s.imu.gyro = lerp(a.imu.gyro, b.imu.gyro);
      break;
    case kWheels:
      for (int w = 0; w < 4; ++w) s.wheel[w] = lerp(a.wheel[w], b.wheel[w]);
      break;
    case kGnss:
      s.gnss.position = lerp(a.gnss.position, b.gnss.position);
      s.gnss.velocity = lerp(a.gnss.velocity, b.gnss.velocity);
      break;
    default:
      break;
  }
  return s;
}

void SensorSim::put(SimFrame f, double bus, Channel c, double v) {
  const auto k = static_cast<std::size_t>(f);
  if (drop_now_[k]) return;
  pending_.push_back({bus, order_++, frame_id_[k], {bus, c, v, 0}, fix_stamp_});
}

void SensorSim::emit(Group g, double ts, const Signals& sig) {
  double bus = ts + timing_[g].latency_s;
  if (timing_[g].latency_jitter_s > 0) bus += timing_[g].latency_jitter_s * uniform_(latency_rng_);
  fix_stamp_ = g == kGnss && c_.gnss_stamp_fix_time ? ts : -1;
  // which of the group's frames the bus loses (one draw per frame, in the DBC's order)
  auto decide = [&](std::initializer_list<SimFrame> frames) {
    for (auto f : frames) {
      bool lost = false;
      if (c_.can_drop_probability > 0) lost = uniform_(bus_rng_) < c_.can_drop_probability;
      drop_now_[static_cast<std::size_t>(f)] = lost;
      frame_id_[static_cast<std::size_t>(f)] = next_frame_++;
      dropped_ += lost;
    }
  };
  auto ch = [](Channel first, int i) { return static_cast<Channel>(static_cast<int>(first) + i); };
  switch (g) {
    case kInputs: {
      decide({SimFrame::steering, SimFrame::drive_torques, SimFrame::brake_pressures});
      const auto& in = sig.inputs;
      put(SimFrame::steering, bus, Channel::steer_angle, in.steer);
      for (int w = 0; w < 4; ++w) {
        put(SimFrame::drive_torques, bus, ch(Channel::drive_torque_fl, w), in.drive_torque[w]);
        put(SimFrame::brake_pressures, bus, ch(Channel::brake_pressure_fl, w), in.brake_pressure[w]);
      }
      break;
    }
    case kImu: {
      decide({SimFrame::imu_accel, SimFrame::imu_gyro});
      // Turn-on bias, scale factor and cross-axis sensitivity; the in-run bias (Gauss-Markov,
      // stepped by the time since the last sample); white noise; saturation at the range.
      Eigen::Vector3d a = c_.accel_errors.apply_static(sig.imu.accel);
      Eigen::Vector3d w = c_.gyro_errors.apply_static(sig.imu.gyro);
      const double since = last_imu_sample_ < 0 ? 1 / c_.imu_rate_hz : ts - last_imu_sample_;
      last_imu_sample_ = ts;
      if (c_.accel_errors.has_instability()) a += accel_drift_.step(since);
      if (c_.gyro_errors.has_instability()) w += gyro_drift_.step(since);
      for (int i = 0; i < 3; ++i) {
        const double ai = a[i] + c_.accel_std * normal_(rng_);
        const double wi = w[i] + c_.gyro_std * normal_(rng_);
        put(SimFrame::imu_accel, bus, ch(Channel::accel_x, i),
            std::clamp(ai, -c_.accel_errors.range, c_.accel_errors.range));
        put(SimFrame::imu_gyro, bus, ch(Channel::gyro_x, i),
            std::clamp(wi, -c_.gyro_errors.range, c_.gyro_errors.range));
      }
      break;
    }
    case kWheels: {
      decide({SimFrame::wheel_counts});
      for (int w = 0; w < 4; ++w) {
        const double theta = sig.wheel[w] + c_.wheel_extra_std * normal_(rng_);
        const long long n = tone_[w].count(theta);
        const long long m = c_.modulus;
        put(SimFrame::wheel_counts, bus, ch(Channel::wheel_count_fl, w), static_cast<double>(((n % m) + m) % m));
      }
      break;
    }
    case kGnss: {
      bool out_now = false;
      for (auto [a, b] : c_.outages) out_now = out_now || (ts >= a && ts < b);
      if (out_now) break;
      decide({SimFrame::gnss_latitude, SimFrame::gnss_longitude, SimFrame::gnss_alt_vel, SimFrame::gnss_accuracy});
      const auto& k = sig.gnss;
      // white position noise (every scenario's draws), replaced by the Gauss-Markov error when
      // the receiver's error is time-correlated
      double de = c_.position_std * normal_(rng_);
      double dn = c_.position_std * normal_(rng_);
      double du = 2 * c_.position_std * normal_(rng_);
      if (c_.position_correlation_s > 0) {
        const double since = last_fix_ < 0 ? 0 : ts - last_fix_;
        de = gnss_error_[0].step(since, gnss_rng_);
        dn = gnss_error_[1].step(since, gnss_rng_);
        du = gnss_error_[2].step(since, gnss_rng_);
      }
      last_fix_ = ts;
      double e = k.position.x() + de, n = k.position.y() + dn, u = k.position.z() + du;
      for (const auto& j : c_.jumps)
        if (ts >= j.from && ts < j.to) e += j.east, n += j.north;
      if (c_.multipath.rate_per_min > 0) {
        while (ts >= multipath_next_) {
          const double heading = 2 * M_PI * uniform_(multipath_rng_);
          multipath_e_ = c_.multipath.size_m * std::cos(heading);
          multipath_n_ = c_.multipath.size_m * std::sin(heading);
          multipath_until_ =
              multipath_next_ + std::exponential_distribution<double>(1 / c_.multipath.duration_s)(multipath_rng_);
          multipath_next_ += std::exponential_distribution<double>(c_.multipath.rate_per_min / 60)(multipath_rng_);
        }
        if (ts < multipath_until_) e += multipath_e_, n += multipath_n_;
      }
      double lat, lon, alt;
      enu_.Reverse(e, n, u, lat, lon, alt);
      const double ve = k.velocity.x() + c_.velocity_std * normal_(rng_);
      const double vn = k.velocity.y() + c_.velocity_std * normal_(rng_);
      const double speed = std::hypot(ve, vn);
      put(SimFrame::gnss_latitude, bus, Channel::gnss_lat, lat);
      put(SimFrame::gnss_longitude, bus, Channel::gnss_lon, lon);
      put(SimFrame::gnss_alt_vel, bus, Channel::gnss_alt, alt);
      put(SimFrame::gnss_alt_vel, bus, Channel::gnss_speed, speed);
      // NMEA gives no course at standstill (minmea: empty field)
      if (speed > 0.3) {
        double course = std::atan2(ve, vn);
        if (course < 0) course += 2 * M_PI;
        put(SimFrame::gnss_alt_vel, bus, Channel::gnss_course, course);
      }
      // the receiver's own sigma (GST): right, or optimistic (< 1) or pessimistic (> 1)
      const double reported = c_.reported_std_factor * c_.position_std;
      put(SimFrame::gnss_accuracy, bus, Channel::gnss_std_lat, reported);
      put(SimFrame::gnss_accuracy, bus, Channel::gnss_std_lon, reported);
      put(SimFrame::gnss_accuracy, bus, Channel::gnss_std_alt, 2 * reported);
      put(SimFrame::gnss_accuracy, bus, Channel::gnss_fix_quality, c_.fix_quality);
      break;
    }
    default:
      break;
  }
}

void SensorSim::start(const mb::State& s, const models::VehicleInputs& in) {
  for (int w = 0; w < 4; ++w) {
    const int slot = v_.wheels[w].spin;
    angle_[w] = s.q[slot];
    spin_rate_[w] = s.qd[slot];
    spin_accel_[w] = s.qdd[slot];
  }
  last_t_ = s.t;
  for (int g = 0; g < kGroups; ++g)
    if (timing_[g].own_clock()) sense(static_cast<Group>(g), s, in, cur_[g]);
  started_ = true;
}

void SensorSim::sample(double t, const mb::State& s, const models::VehicleInputs& in, std::vector<Measurement>& out) {
  // A Hall sensor counts the teeth that pass it: the wheel's true angle, not the model's
  // discrete one. Between two steps the spin rate is taken as the cubic through the rates and
  // accelerations at both ends (C1 across steps), whose integral over the step is exact:
  // h/2 (w0 + w1) + h^2/12 (a0 - a1) (what Simpson's rule gives over any sub-steps of it).
  if (!started_) {
    start(s, in);
  } else if (t > last_t_) {
    const double h = t - last_t_;
    for (int w = 0; w < 4; ++w) {
      const int slot = v_.wheels[w].spin;
      angle_[w] += 0.5 * h * (spin_rate_[w] + s.qd[slot]) + h * h / 12 * (spin_accel_[w] - s.qdd[slot]);
      spin_rate_[w] = s.qd[slot];
      spin_accel_[w] = s.qdd[slot];
    }
  }
  for (int gi = 0; gi < kGroups; ++gi) {
    const auto g = static_cast<Group>(gi);
    const SampleTiming& tm = timing_[g];
    if (!tm.own_clock()) {
      // the sensor samples at the steps, every 1/rate s
      if (!due(t, rate_[g], next_[g])) continue;
      Signals sig;
      sense(g, s, in, sig);
      sig.t = t;
      emit(g, t, sig);
      continue;
    }
    // its own clock: the ticks since the last step, from the truth interpolated between steps
    prev_[g] = cur_[g];
    sense(g, s, in, cur_[g]);
    cur_[g].t = t;
    const double period = 1 / (rate_[g] * (1 + tm.clock_ppm * 1e-6));
    for (;;) {
      const double tick = tm.clock_offset_s + next_[g] * period;
      if (tick > t + 1e-9) break;
      ++next_[g];
      if (tick < last_t_ - 1e-9) continue;  // before the start
      emit(g, tick, interpolate(g, prev_[g], cur_[g], tick));
    }
  }
  last_t_ = t;
  // Frames on the bus by now, in the order they arrived, get their receive stamps: late by the
  // receiver's jitter, and never before the frame received ahead of them. The measurements of
  // one frame share its stamp.
  if (!pending_.empty()) {
    std::sort(pending_.begin(), pending_.end(), [](const Pending& a, const Pending& b) {
      return a.bus < b.bus || (a.bus == b.bus && a.order < b.order);
    });
    std::size_t n = 0;
    while (n < pending_.size() && pending_[n].bus <= t + 1e-9) ++n;
    stamps_.clear();
    for (std::size_t i = 0; i < n; ++i) {
      Pending p = pending_[i];
      auto it = std::find_if(stamps_.begin(), stamps_.end(), [&](const auto& f) { return f.first == p.frame; });
      if (it == stamps_.end()) {
        double stamp = p.bus;
        if (c_.can_jitter_s > 0) stamp = std::max(p.bus + c_.can_jitter_s * uniform_(bus_rng_), last_receive_);
        last_receive_ = std::max(last_receive_, stamp);
        stamps_.emplace_back(p.frame, stamp);
        it = stamps_.end() - 1;
      }
      p.m.t = p.fix >= 0 ? p.fix : it->second;
      arrived_.push_back(p);
    }
    pending_.erase(pending_.begin(), pending_.begin() + static_cast<long>(n));
  }
  if (arrived_.empty()) return;
  std::stable_sort(arrived_.begin(), arrived_.end(), [](const Pending& a, const Pending& b) { return a.m.t < b.m.t; });
  std::size_t n = 0;
  while (n < arrived_.size() && arrived_[n].m.t <= t + 1e-9) out.push_back(arrived_[n++].m);
  arrived_.erase(arrived_.begin(), arrived_.begin() + static_cast<long>(n));
}

Eigen::Vector3d SensorSim::gyro_bias() const {
  const auto& b = c_.gyro_errors.bias;
  return Eigen::Vector3d(b[0], b[1], b[2]) + gyro_drift_.value();
}

Eigen::Vector3d SensorSim::accel_bias() const {
  const auto& b = c_.accel_errors.bias;
  return Eigen::Vector3d(b[0], b[1], b[2]) + accel_drift_.value();
}

}  // namespace mbo::exp
