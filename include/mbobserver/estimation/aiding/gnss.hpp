// GNSS aiding (Sinigaglia 2016 4.2): the receiver's fix (latitude, longitude, height, with its
// GST sigmas and fix quality), speed and course over ground become up to six scalar rows: the
// antenna's east, north and up position with its lever arm (eqs. (83)-(89)), its east and
// north velocity (eqs. (90)-(94)), and the course as a heading (4.2.4). The unit owns the
// local East-North-Up frame (GeographicLib's LocalCartesian; eqs. (80)-(82)), the first fix
// that starts the observer, and the position reset after a run of rejected fixes.
#pragma once

#include <optional>

#include <GeographicLib/LocalCartesian.hpp>

#include "mbobserver/core/json_reader.hpp"
#include "mbobserver/estimation/aiding/aiding.hpp"
#include "mbobserver/estimation/aiding/gnss_latency.hpp"
#include "mbobserver/models/vehicle.hpp"

namespace mbo::est::aiding {

struct GnssConfig {
  Eigen::Vector3d antenna = Eigen::Vector3d::Zero();  // vehicle frame, m
  double latency_s = 0;
  // s: 1-sigma of the latency's error beyond latency_s, while it is not learned (a receiver
  // whose latency nobody measured: 0.05-0.15 s). The published sigmas carry what it does to
  // the estimates (a consider analysis: each row's bias is the error times d h / d latency,
  // -v for a fix, -a for a velocity); the estimates are those of latency_s. By default an
  // unmeasured receiver's: a fix is taken as on time only where the configuration says 0, or
  // where it is stamped at its own time (check_fixes_stamped_at_their_time).
  double latency_std = 0.05;
  // s: 1-sigma of how much each fix's latency differs from the next one's (a receiver's
  // computing load; u-blox: tens of ms). Independent fix to fix, it is noise of each row: the
  // fix's variance grows by (v sigma)^2 per axis, the velocity's by (a sigma)^2, the course's
  // by (course rate sigma)^2, v, a and the course rate the receiver's own.
  double latency_jitter_std = 0;
  double position_std = 0.02, velocity_std = 0.1;  // used when the receiver gives no sigma
  bool use_position = true, use_velocity = true, use_course = true, use_gst = true;
  bool use_altitude = true;  // the vertical row of the fix (leave out when z is not observed)
  bool chassis_only = false;  // Sinigaglia 2016 eq. (89): correct the chassis position only
  double course_min_speed = 3.0;  // m/s; below it the course says nothing
  // rad, 1 sigma of the model's sideslip that turns course into heading: added to the course
  // row's variance (the model's sideslip error is in the heading it gives)
  double course_sideslip_std = 0.017453292519943295;
  double timeout_s = 0.5;
  double gate_sigma = 5;
  double reset_after_rejection_s = 3;  // a row rejected this long without a break: reset to the fix
  // The observer starts from a fix once this many fixes in a row agree with each other (each
  // where the one before and the receiver's velocity put it): one multipath fix at start-up
  // does not place the car.
  int start_fixes = 3;
  // A fix and the velocity describe the car latency_s before their receive stamp, and the
  // stamp is up to a step before the step that fuses them: each row's lag is the sample's age
  // + the latency, h = r - lag v + lag^2/2 a, v - lag a. The latency is learned from latency_s
  // on when `estimate_latency` is configured (gnss_latency.hpp).
  bool estimate_latency = false;
  LatencyEstimatorConfig latency;
  // The sensor parameters (biases, wheel scales, latency) learn only while the fixes are live
  // and their sigma in use is at most this (m): a metre-class receiver's error, correlated over
  // tens of seconds, would otherwise be learned as a scale or a bias with confidence.
  double learn_max_std = 0.3;
  // ... and while the latency in use is known to this (s, 1-sigma): a fix 0.1 s late, read as
  // the car's now, teaches a wheel scale 0.3 % wrong after a pull-away to 14 m/s.
  double learn_max_latency_std = 0.005;
  // ... for the gyro biases, which the heading teaches: a latency error moves it only in turns
  // (by the turn rate times the error), where the filter considers the latency's sigma.
  double heading_learn_max_latency_std = 0.02;
  bool origin_from_first_fix = true;
  double lat0 = 0, lon0 = 0, alt0 = 0;
  // The receiver's horizontal error as two error states (east, north), first-order Gauss-Markov
  // of 1-sigma `error_std` over `error_correlation_s`, beside white noise of `white_std` per
  // fix (`"estimate_error"`). A metre-class receiver's error wanders over minutes (u-blox
  // NEO-M8 SBAS: 1.7 m); fused as white at 10 Hz it averaged to a sigma of decimetres while the
  // position was 1-2 m off. Off (error_correlation_s 0): the fixes are white.
  double error_std = 0, error_correlation_s = 0, white_std = 0;
  // Without those states: the part of the receiver's error (m, per axis) correlated over longer
  // than the filter averages its fixes, added to the published position's sigma in quadrature.
  // The fixes' average is no better than it, whatever their number.
  double correlated_std = 0;
};

// The "gnss" section of the observer; `default_gate` is the filter's.
GnssConfig read_gnss_config(const JsonReader& section, double default_gate);

// Fixes that reach the observer stamped at their own time (a serial receiver's "stamp":
// "fix_time", the simulator's likewise) carry their latency already: a latency configured or
// learned besides would take them back twice. Fails `gnss` (the observer's section) naming
// the key that would, and says where the stamps come from (`stamped_by`).
// Refuses a latency besides a fix's own stamp, and takes the latency as known (latency_std 0)
// unless the configuration says otherwise.
void check_fixes_stamped_at_their_time(GnssConfig& c, const JsonReader& gnss, const std::string& stamped_by);

class GnssAiding {
 public:
  static constexpr Channel kFirst = Channel::gnss_lat;
  static constexpr std::size_t kChannels = index_of(Channel::gnss_fix_quality) - index_of(kFirst) + 1;

  GnssAiding(const GnssConfig& config, const models::Vehicle& vehicle);

  // The latency it learns, if configured (call before add_models): a parameter the filter
  // considers, set from the latency estimator every step.
  void declare_parameters(SensorParameters& list);
  int latency_param() const { return latency_param_; }
  // Appends latency_std as an unmodelled bias, where the latency is not learned.
  void declare_unmodelled(std::vector<double>& sigma);
  int latency_bias() const { return latency_bias_; }
  // The first of the receiver's two error states (east, north), -1 when not modelled.
  int error_param() const { return error_param_; }
  // The measurement models of gnss_position, gnss_velocity and gnss_course.
  void add_models(SensorModels& models) const;

  static bool owns(Channel c) { return ChannelSamples<kFirst, kChannels>::owns(c); }
  // Keeps m for the next step unless it sits on its DBC limit (counted, dropped). False: m is
  // older than the sample held (stale).
  bool hold(const Measurement& m);

  // Before the observer starts: the pose of the newest usable fix at t (the ENU origin is set
  // from it when so configured), or nothing yet.
  std::optional<models::VehicleStart> first_fix_pose(double t);
  // A re-initialisation at t: the pose of the last fix, if it is recent, replaces `st`'s
  // (true then); the sign of `st.speed` (the model's) says whether the car is reversing, and
  // `antenna_sideslip` (rad, the model's: the angle from the chassis's x axis, or against it
  // backing up, to the antenna's velocity) is where the course points off the heading.
  bool pose_from_recent_fix(double t, models::VehicleStart& st, double antenna_sideslip = 0) const;

  // The rows of the samples received up to t.
  void gather(double t, MeasurementRows& rows);
  // After a step to t: the model's antenna velocity there (the latency estimator's history).
  void record_model(double t, const mb::State& s);
  // The latency in use (configured or learned) and its 1-sigma (0 when configured).
  double latency() const { return cfg_.estimate_latency ? latency_.value() : cfg_.latency_s; }
  double latency_std() const { return cfg_.estimate_latency ? latency_.std() : 0.0; }
  bool estimates_latency() const { return cfg_.estimate_latency; }
  // Starts the learned latency from a saved calibration (false when it is not learned).
  bool restore_latency(double value, double std);
  // What the filter did with one of this unit's rows at time t.
  void account(const ScalarMeasurement& m, const UpdateResult& u, double t);
  // After a step whose model and filter stayed healthy: true when a position row has been
  // rejected without a break for longer than reset_after_rejection_s, so the observer should be
  // reset to the fix (PX4's position reset after a timeout of rejected GNSS). An offset along
  // one axis counts as much as a diagonal one.
  bool rejected_too_long(double t) const;
  // The horizontal 1-sigma of the last fix (the receiver's GST where it gives one).
  double position_std() const;
  // Fixes accepted since the observer (re)started.
  int fixes_since_start() const { return accepted_fixes_; }
  // After a (re)start of the model: the monitor's history and the count of accepted fixes
  // start again.
  void restart();
  void set_monitor(const MonitorConfig& c) {
    for (auto& h : health_) h.set_monitor(c);
  }
  // After a jump of the time base: what was held, the last fix and the start-up candidates are
  // of another time (the ENU origin stays).
  void forget_time();

  void update_health(double t);
  const SourceHealth& health(SensorKind kind) const { return health_[index_of(kind)]; }
  bool position_timed_out() const { return health(SensorKind::gnss_position).timed_out(); }
  bool velocity_timed_out() const { return health(SensorKind::gnss_velocity).timed_out(); }
  // Fixes good enough for the sensor parameters to learn from (GnssConfig::learn_max_std); the
  // latency's bound is each parameter's (learn_max_latency_std, heading_learn_max_latency_std).
  bool good_for_learning() const { return !position_timed_out() && position_std() <= cfg_.learn_max_std; }
  const GnssConfig& config() const { return cfg_; }
  const GeographicLib::LocalCartesian& geodesy() const { return enu_; }

 private:
  // The chassis reference point behind the antenna's lever arm at heading `yaw`.
  void place_chassis(double e, double n, double yaw, models::VehicleStart& st) const;
  // A fix taken at `stamp` moved to time t along the receiver's velocity (speed, course): where
  // the antenna is at t rather than latency + (t - stamp) before.
  void carry_fix(double stamp, double t, double speed, double course, double& e, double& n) const;

  GnssConfig cfg_;
  const models::Vehicle& vehicle_;
  ChannelSamples<kFirst, kChannels> samples_;
  GeographicLib::LocalCartesian enu_;
  bool origin_set_ = false;
  // the last fix in ENU, the last speed and course, the receiver's last sigmas (GST)
  double fix_e_ = 0, fix_n_ = 0, fix_t_ = -1, fix_quality_ = 1;
  double speed_ = 0, course_ = 0;
  bool have_course_ = false;
  // the receiver's last velocity (east, north) and course with their stamp: its own
  // acceleration and course rate, for the latency jitter's share of each row
  double last_ve_ = 0, last_vn_ = 0, last_course_ = 0, last_velocity_t_ = -1;
  double jitter_ve_ = 0, jitter_vn_ = 0;  // the speed per axis a fix's jitter moves it by
  double gst_e_ = -1, gst_n_ = -1, gst_u_ = -1;
  // start-up: the last candidate fix (ENU, time) and how many in a row agreed
  double cand_e_ = 0, cand_n_ = 0, cand_t_ = -1;
  int cand_agreed_ = 0;
  int accepted_fixes_ = 0;
  // gnss_position, gnss_velocity, gnss_course (the first three SensorKinds)
  std::array<SourceHealth, 3> health_;
  mb::LinearVec antenna_;  // the antenna as a point of the model
  VelocityHistory history_;  // the model's antenna velocity over the last second
  LatencyEstimator latency_;
  std::array<double, 3> pending_{};  // the last velocity sample (stamp, east, north) not yet judged
  bool has_pending_ = false;
  int latency_param_ = -1;
  int latency_bias_ = -1;  // the unmodelled latency's index, -1: none
  int error_param_ = -1;
};

}  // namespace mbo::est::aiding
