#include "mbobserver/estimation/aiding/gnss.hpp"

#include <algorithm>
#include <cmath>

#include "mbobserver/estimation/sensors/gnss.hpp"

namespace mbo::est::aiding {
namespace {

// Latitude, longitude and height of one fix carry the same receive time (one sentence or
// frame); closer than this they are one fix.
constexpr double kSameFix_s = 1e-6;
// Below this speed the receiver's course is noise: the velocity rows say the car stands.
constexpr double kStandstill_mps = 0.2;
// Without GST the vertical sigma is taken as this many times the horizontal one.
constexpr double kVerticalStdFactor = 2;
// The model's antenna velocity is kept this many steps (2 s at 2 ms): the latency's longest lag
// and a step's sample age.
constexpr int kHistorySteps = 1024;

}  // namespace

GnssConfig read_gnss_config(const JsonReader& g, double default_gate) {
  GnssConfig G;
  // Physical ranges (docs/configuration.md): an antenna on a road vehicle, a receiver's
  // latency and sigmas, speeds and times a drive can have.
  if (g.has("antenna")) {
    const auto a = g.numbers_in("antenna", 3, -kMaxLeverArm_m, kMaxLeverArm_m);
    G.antenna = {a[0], a[1], a[2]};
  }
  G.latency_s = g.number_in("latency_s", 0, 2, 0);
  G.latency_std = g.number_in("latency_std", 0, 1, G.latency_std);
  G.latency_jitter_std = g.number_in("latency_jitter_std", 0, 1, G.latency_jitter_std);
  G.position_std = g.positive_up_to("position_std", 1000, G.position_std);
  G.velocity_std = g.positive_up_to("velocity_std", 100, G.velocity_std);
  G.use_position = g.boolean("use_position", true);
  G.use_velocity = g.boolean("use_velocity", true);
  G.use_course = g.boolean("use_course", true);
  G.use_gst = g.boolean("use_gst", true);
  G.use_altitude = g.boolean("use_altitude", true);
  G.chassis_only = g.boolean("chassis_only", false);
  G.course_min_speed = g.number_in("course_min_speed", 0, 100, G.course_min_speed);
  G.course_sideslip_std = g.number_in("course_sideslip_std", 0, M_PI / 2, G.course_sideslip_std);
  G.timeout_s = g.positive_up_to("timeout_s", 60, G.timeout_s);
  G.gate_sigma = g.number_in("gate_sigma", 0, kMaxGateSigma, default_gate);
  G.reset_after_rejection_s = g.positive_up_to("reset_after_rejection_s", 3600, G.reset_after_rejection_s);
  G.start_fixes = static_cast<int>(g.integer("start_fixes", 1, 100, G.start_fixes));
  if (auto l = g.find("estimate_latency")) {
    auto& L = G.latency;
    G.estimate_latency = l->boolean("enabled", true);
    if (l->has("plant_noise"))
      l->at("plant_noise")
          .fail(
              "the latency is no longer a random walk of the filter: \"memory_s\" sets how long "
              "its evidence counts (docs/configuration.md)");
    L.initial_std = l->positive_up_to("initial_std", 2, L.initial_std);
    L.min = l->number_in("min", 0, 2, L.min);
    L.max = l->number_in("max", 0, 2, L.max);
    L.resolution = l->number_in("resolution_s", 0.0005, 0.1, L.resolution);
    L.memory_s = l->positive_up_to("memory_s", 1e6, L.memory_s);
    L.early_correlation_s = l->number_in("early_correlation_s", 0, 60, L.early_correlation_s);
    L.min_speed = l->number_in("min_speed", 0, 100, L.min_speed);
    if (!(L.min + 2 * L.resolution <= L.max)) l->fail("\"min\" must be below \"max\" by two resolution_s at least");
    if ((L.max - L.min) / L.resolution > 4000)
      l->fail("more than 4000 lags between min and max: a coarser resolution_s");
    if (!(L.min <= G.latency_s && G.latency_s <= L.max)) l->fail("latency_s is outside [min, max]");
    l->finish();
  }
  G.correlated_std = g.number_in("correlated_std", 0, 1000, 0);
  if (auto e = g.find("estimate_error")) {
    if (G.correlated_std > 0) e->fail("either \"correlated_std\" or \"estimate_error\": the error states hold it");
    G.error_correlation_s = e->positive_up_to("correlation_s", 86400);
    G.error_std = e->positive_up_to("std", 1000);
    G.white_std = e->positive_up_to("white_std", 1000, 0.1 * G.error_std);
    e->finish();
  }
  G.latency.initial = G.latency_s;
  G.latency.velocity_std = G.velocity_std;
  G.learn_max_std = g.positive_up_to("learn_max_std", 1000, G.learn_max_std);
  G.learn_max_latency_std = g.positive_up_to("learn_max_latency_std", 2, G.learn_max_latency_std);
  G.heading_learn_max_latency_std =
      g.positive_up_to("heading_learn_max_latency_std", 2, G.heading_learn_max_latency_std);
  if (auto o = g.find("origin")) {
    if (o->is_string()) {
      if (o->as_string() != "first_fix") o->fail("expected \"first_fix\" or {\"lat\", \"lon\", \"alt\"}");
    } else {
      G.origin_from_first_fix = false;
      G.lat0 = o->number_in("lat", -90, 90);
      G.lon0 = o->number_in("lon", -180, 180);
      G.alt0 = o->number_in("alt", -1000, 20000, 0);  // m above the ellipsoid: the Dead Sea to the stratosphere
      o->finish();
    }
  }
  g.finish();
  return G;
}

void check_fixes_stamped_at_their_time(GnssConfig& c, const JsonReader& gnss, const std::string& stamped_by) {
  const std::string why =
      "the fixes are stamped at their own time (" + stamped_by + "): a latency besides would take them back twice; ";
  if (c.latency_s > 0) gnss.at("latency_s").fail(why + "set it to 0");
  if (c.estimate_latency) gnss.at("estimate_latency").fail(why + "there is none to learn");
  // each fix's latency is measured, so the default unmeasured receiver's sigma does not apply
  if (!gnss.has("latency_std")) c.latency_std = 0;
}

GnssAiding::GnssAiding(const GnssConfig& config, const models::Vehicle& vehicle)
    : cfg_(config),
      vehicle_(vehicle),
      antenna_(vehicle.chassis_point(config.antenna)),
      history_(kHistorySteps),
      latency_(config.latency) {
  if (!cfg_.origin_from_first_fix) {
    enu_.Reset(cfg_.lat0, cfg_.lon0, cfg_.alt0);
    origin_set_ = true;
  }
  for (auto& h : health_) h.set_timeout(cfg_.timeout_s);
}

void GnssAiding::declare_parameters(SensorParameters& list) {
  // a parameter the filter considers and never moves: its value and sigma are the latency
  // estimator's (VehicleObserver::choose_learning)
  const auto& l = cfg_.latency;
  if (cfg_.estimate_latency)
    latency_param_ = list.add({"gnss_latency", cfg_.latency_s, l.initial_std, 0.0, l.min, l.max, 0.005});
  if (cfg_.error_correlation_s > 0) {
    // Gauss-Markov: q = 2 sigma^2 / tau keeps the variance at sigma^2; held within 10 sigma
    const double s = cfg_.error_std, tau = cfg_.error_correlation_s;
    for (const char* axis : {"gnss_error_e", "gnss_error_n"}) {
      const int k = list.add({axis, 0.0, s, 2 * s * s / tau, -10 * s, 10 * s, 0.0, tau, false});
      if (error_param_ < 0) error_param_ = k;
    }
  }
}

void GnssAiding::add_models(SensorModels& models) const {
  const auto& v = vehicle_;
  const mb::LinearVec origin{{mb::LinearTerm{v.P0, 1, 0}}};
  // every row carries its sample's age (gather), which the models add to the latency
  auto position = std::make_shared<GnssPositionSensor>(antenna_, cfg_.chassis_only, origin, cfg_.latency_s);
  position->estimate_latency(latency_param_);
  position->estimate_error(error_param_);
  models[index_of(SensorKind::gnss_position)] = position;
  models[index_of(SensorKind::gnss_velocity)] =
      std::make_shared<GnssVelocitySensor>(antenna_, cfg_.latency_s, latency_param_);
  models[index_of(SensorKind::gnss_course)] =
      std::make_shared<GnssCourseSensor>(antenna_, v.yaw, cfg_.latency_s, latency_param_);
}

void GnssAiding::record_model(double t, const mb::State& s) {
  // The antenna's horizontal velocity as the chassis's and its yaw rate make it, without the
  // roll and pitch rates (1.45 m up, 0.1 rad/s of roll is 0.15 m/s across), which the model
  // leaves to itself: with them the mixed drive's latency came out 0.0988 s, without them
  // 0.1011 +- 0.0016 s (truth 0.1).
  const auto& vh = vehicle_;
  const Eigen::Vector3d arm = vh.chassis_local(cfg_.antenna);
  const double psi = s.q[vh.yaw], r = s.qd[vh.yaw];
  const double ax = std::cos(psi) * arm.x() - std::sin(psi) * arm.y(),
               ay = std::sin(psi) * arm.x() + std::cos(psi) * arm.y();
  const Eigen::Vector3d v(s.qd[vh.P0] - r * ay, s.qd[vh.P0 + 1] + r * ax, 0);
  if (!v.allFinite()) return;
  if (!history_.empty() && t <= history_.newest_t()) history_.clear();  // a new time base
  history_.push(t, v.x(), v.y());
  if (has_pending_ && pending_[0] <= t) {
    latency_.observe(pending_[0], pending_[1], pending_[2], history_);
    has_pending_ = false;
  }
}

bool GnssAiding::restore_latency(double value, double std) {
  if (!cfg_.estimate_latency) return false;
  latency_.restore(value, std);
  return true;
}

void GnssAiding::carry_fix(double stamp, double t, double speed, double course, double& e, double& n) const {
  const double lag = std::max(0.0, t - stamp) + latency();
  e += lag * speed * std::sin(course);  // course: clockwise from north
  n += lag * speed * std::cos(course);
}

void GnssAiding::place_chassis(double e, double n, double yaw, models::VehicleStart& st) const {
  const Eigen::Vector3d arm = vehicle_.chassis_local(cfg_.antenna);
  st.x = e - (std::cos(yaw) * arm.x() - std::sin(yaw) * arm.y());
  st.y = n - (std::sin(yaw) * arm.x() + std::cos(yaw) * arm.y());
}

bool GnssAiding::hold(const Measurement& m) {
  if (m.t < samples_.peek(m.channel).t) return false;
  if (m.flags & kAtLimit) {  // a receiver does not report a speed of 655 m/s
    const bool velocity = m.channel == Channel::gnss_speed || m.channel == Channel::gnss_course;
    health_[index_of(velocity ? SensorKind::gnss_velocity : SensorKind::gnss_position)].implausible();
    return true;
  }
  return samples_.hold(m);
}

std::optional<models::VehicleStart> GnssAiding::first_fix_pose(double t) {
  const auto& lat = samples_.peek(Channel::gnss_lat);
  const auto& lon = samples_.peek(Channel::gnss_lon);
  auto usable = [&] { return lat.fresh && lon.fresh && lat.t <= t + kSameInstant_s && fix_quality_ > 0; };
  if (!usable()) {
    double q, tq;
    if (samples_.take(Channel::gnss_fix_quality, t, q, tq)) fix_quality_ = q;
    if (!usable()) return std::nullopt;
  }
  const auto& alt_sample = samples_.peek(Channel::gnss_alt);
  const double alt = alt_sample.fresh ? alt_sample.value : 0;
  if (!origin_set_) {
    enu_.Reset(lat.value, lon.value, alt);
    origin_set_ = true;
  }
  double e, n, u;
  enu_.Forward(lat.value, lon.value, alt, e, n, u);
  const auto& speed = samples_.peek(Channel::gnss_speed);
  const auto& course = samples_.peek(Channel::gnss_course);
  const double v = speed.t >= 0 ? speed.value : 0;
  const bool heading = course.t >= 0 && v > cfg_.course_min_speed;
  if (lat.t != cand_t_) {
    // Does this fix lie where the last one and the receiver's velocity put it?
    if (cand_t_ >= 0) {
      const double dt = lat.t - cand_t_;
      const double de = heading ? v * dt * std::sin(course.value) : 0,
                   dn = heading ? v * dt * std::cos(course.value) : 0;
      // the receiver's own sigma (GST) where it gives one, as the rows will use
      double sp = cfg_.position_std;
      if (cfg_.use_gst)
        for (Channel c : {Channel::gnss_std_lat, Channel::gnss_std_lon})
          if (samples_.peek(c).t >= 0 && samples_.peek(c).value > 0) sp = std::max(sp, samples_.peek(c).value);
      const double sv = cfg_.velocity_std;
      const double tolerance = cfg_.gate_sigma * std::sqrt(2 * sp * sp + sv * dt * sv * dt) + (heading ? 0.0 : v * dt);
      const bool agree = std::hypot(e - cand_e_ - de, n - cand_n_ - dn) <= tolerance;
      cand_agreed_ = agree ? cand_agreed_ + 1 : 0;
    }
    cand_e_ = e, cand_n_ = n, cand_t_ = lat.t;
  }
  if (cand_agreed_ + 1 < cfg_.start_fixes) return std::nullopt;
  models::VehicleStart st;
  st.speed = v;
  st.yaw = heading ? course_to_heading(course.value) : 0.0;
  if (heading) carry_fix(lat.t, t, v, course.value, e, n);  // where the antenna is now
  place_chassis(e, n, st.yaw, st);  // the fix is the antenna's
  return st;
}

bool GnssAiding::pose_from_recent_fix(double t, models::VehicleStart& st, double antenna_sideslip) const {
  if (fix_t_ < 0 || t - fix_t_ >= cfg_.timeout_s) return false;
  double e = fix_e_, n = fix_n_;
  // The receiver's speed has no sign and its course is where the antenna moves: a car backing
  // up (the model's speed in `st` < 0) heads against its course. Started forward at the
  // receiver's speed, the mixed drive's reversing in the car park reset twice more, 1 m off.
  const bool reversing = st.speed < 0;
  if (have_course_ && speed_ > cfg_.course_min_speed) {
    // the course is the heading plus the sideslip at the antenna: a reset in a turn taken at
    // the course alone was off by the sideslip (the car drawn from the learned-car prior, 4 deg
    // into a roundabout: the heading 2.8 deg off, the sideslip with it)
    st.yaw = std::remainder(course_to_heading(course_) + (reversing ? M_PI : 0.0) - antenna_sideslip, 2 * M_PI);
    carry_fix(fix_t_, t, speed_, course_, e, n);  // a fix 0.1 s old is 3 m behind at 30 m/s
  }
  place_chassis(e, n, st.yaw, st);
  st.speed = reversing ? -speed_ : speed_;
  return true;
}

void GnssAiding::gather(double t, MeasurementRows& rows) {
  const double gate = cfg_.gate_sigma;
  double quality = 1, tq;
  if (samples_.take(Channel::gnss_fix_quality, t, quality, tq)) fix_quality_ = quality;
  const auto& slat = samples_.peek(Channel::gnss_lat);
  const auto& slon = samples_.peek(Channel::gnss_lon);
  if (slat.fresh && slon.fresh && std::abs(slat.t - slon.t) < kSameFix_s && slat.t <= t + kSameInstant_s) {
    double lat = 0, lon = 0, tl = 0, tn = 0, alt = 0, ta = 0;
    samples_.take(Channel::gnss_lat, t, lat, tl);
    samples_.take(Channel::gnss_lon, t, lon, tn);
    const bool has_alt = samples_.take(Channel::gnss_alt, t, alt, ta) && std::abs(ta - tl) < kSameFix_s;
    if (fix_quality_ > 0 && origin_set_) {
      double e, n, u;
      enu_.Forward(lat, lon, has_alt ? alt : enu_.HeightOrigin(), e, n, u);
      fix_e_ = e, fix_n_ = n, fix_t_ = tl;
      health_[index_of(SensorKind::gnss_position)].sampled(tl);
      double se = cfg_.position_std, sn = se, su = kVerticalStdFactor * se, x, tx;
      if (cfg_.use_gst) {
        if (samples_.take(Channel::gnss_std_lat, t, x, tx)) gst_n_ = x;
        if (samples_.take(Channel::gnss_std_lon, t, x, tx)) gst_e_ = x;
        if (samples_.take(Channel::gnss_std_alt, t, x, tx)) gst_u_ = x;
        if (gst_e_ > 0) se = gst_e_;
        if (gst_n_ > 0) sn = gst_n_;
        if (gst_u_ > 0) su = gst_u_;
      }
      if (error_param_ >= 0) se = sn = cfg_.white_std;  // the rest of the sigma is the error states'
      // a fix a jitter dtau later than the latency says is v dtau along the track
      if (const double j2 = cfg_.latency_jitter_std * cfg_.latency_jitter_std; j2 > 0) {
        se = std::sqrt(se * se + jitter_ve_ * jitter_ve_ * j2);
        sn = std::sqrt(sn * sn + jitter_vn_ * jitter_vn_ * j2);
      }
      if (cfg_.use_position) {
        // the fix is the antenna's its age + the latency ago
        const double age = std::max(0.0, t - tl);
        rows.add_late(SensorKind::gnss_position, 0, e, se * se, gate, age, latency_bias_);
        rows.add_late(SensorKind::gnss_position, 1, n, sn * sn, gate, age, latency_bias_);
        if (has_alt && cfg_.use_altitude)
          rows.add_late(SensorKind::gnss_position, 2, u, su * su, gate, age, latency_bias_);
      }
    }
  }
  double v = 0, ts = 0;
  if (samples_.take(Channel::gnss_course, t, v, ts)) course_ = v, have_course_ = true;
  if (!samples_.take(Channel::gnss_speed, t, v, ts)) return;
  speed_ = v;
  health_[index_of(SensorKind::gnss_velocity)].sampled(ts);
  const double s = v;
  const bool standing = s < kStandstill_mps;
  // The receiver's acceleration and course rate since its last velocity: what a jitter in
  // this sample's latency moves it by (a dtau, course rate dtau).
  const double ve = standing ? 0.0 : s * std::sin(course_), vn = standing ? 0.0 : s * std::cos(course_);
  double ae = 0, an = 0, course_rate = 0;
  if (last_velocity_t_ >= 0 && ts - last_velocity_t_ > 1e-3 && ts - last_velocity_t_ < 1.0) {
    const double dt = ts - last_velocity_t_;
    ae = (ve - last_ve_) / dt, an = (vn - last_vn_) / dt;
    course_rate = std::remainder(course_ - last_course_, 2 * M_PI) / dt;
  }
  if (have_course_ || standing) {
    last_ve_ = jitter_ve_ = ve, last_vn_ = jitter_vn_ = vn, last_course_ = course_, last_velocity_t_ = ts;
  } else {
    jitter_ve_ = jitter_vn_ = s;  // moving, no course yet: the fix may be moved either way
    last_velocity_t_ = -1;  // and no rate to take from it
  }
  const double j2 = cfg_.latency_jitter_std * cfg_.latency_jitter_std;
  const double var = cfg_.velocity_std * cfg_.velocity_std;
  if (cfg_.estimate_latency && (have_course_ || standing)) {
    // judged after this step, when the model's history reaches the sample's stamp
    pending_ = {ts, ve, vn};
    has_pending_ = true;
  }
  const double age = std::max(0.0, t - ts);
  if (cfg_.use_velocity && (have_course_ || standing)) {
    rows.add_late(SensorKind::gnss_velocity, 0, ve, var + ae * ae * j2, gate, age, latency_bias_);
    rows.add_late(SensorKind::gnss_velocity, 1, vn, var + an * an * j2, gate, age, latency_bias_);
  }
  if (cfg_.use_course && have_course_ && s > cfg_.course_min_speed) {
    health_[index_of(SensorKind::gnss_course)].sampled(ts);
    // heading = course - the model's sideslip: the course's noise plus the sideslip's error
    const double sideslip_var = cfg_.course_sideslip_std * cfg_.course_sideslip_std;
    rows.add_late(SensorKind::gnss_course, 0, course_to_heading(course_),
                  var / (s * s) + sideslip_var + course_rate * course_rate * j2, gate, age, latency_bias_);
  }
}

void GnssAiding::account(const ScalarMeasurement& m, const UpdateResult& u, double t) {
  const SensorKind kind = MeasurementRows::kind(m);
  health_[index_of(kind)].account(m.row, u, t);
  if (kind == SensorKind::gnss_position && m.row == 0 && u.accepted) ++accepted_fixes_;
}

void GnssAiding::declare_unmodelled(std::vector<double>& sigma) {
  if (cfg_.latency_std <= 0 || cfg_.estimate_latency) return;
  latency_bias_ = static_cast<int>(sigma.size());
  sigma.push_back(cfg_.latency_std);
}

bool GnssAiding::rejected_too_long(double t) const {
  const auto& h = health(SensorKind::gnss_position);
  for (int r = 0; r < 3; ++r) {
    const double since = h.row(r).rejected_since();
    if (since >= 0 && t - since > cfg_.reset_after_rejection_s) return true;
  }
  return false;
}

double GnssAiding::position_std() const {
  const double e = cfg_.use_gst && gst_e_ > 0 ? gst_e_ : cfg_.position_std;
  const double n = cfg_.use_gst && gst_n_ > 0 ? gst_n_ : cfg_.position_std;
  return std::max(e, n);
}

void GnssAiding::forget_time() {
  samples_.forget();
  fix_t_ = -1, cand_t_ = -1, cand_agreed_ = 0;
  have_course_ = false;
  has_pending_ = false;
  last_velocity_t_ = -1;  // a rate across the jump is no rate
  history_.clear();
  for (auto& h : health_) h.sampled(-1);
}

void GnssAiding::restart() {
  for (auto& h : health_) h.restart_monitor();
  accepted_fixes_ = 0;
}

void GnssAiding::update_health(double t) {
  for (auto& h : health_) h.update(t);
}

}  // namespace mbo::est::aiding
