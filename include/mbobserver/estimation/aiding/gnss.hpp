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
#include "mbobserver/models/vehicle.hpp"

namespace mbo::est::aiding {

struct GnssConfig {
  Eigen::Vector3d antenna = Eigen::Vector3d::Zero();  // vehicle frame, m
  double latency_s = 0;
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
  double reset_after_rejection_s = 3;  // continuous rejection this long: reset to the fix
  bool origin_from_first_fix = true;
  double lat0 = 0, lon0 = 0, alt0 = 0;
};

// The "gnss" section of the observer; `default_gate` is the filter's.
GnssConfig read_gnss_config(const JsonReader& section, double default_gate);

class GnssAiding {
 public:
  static constexpr Channel kFirst = Channel::gnss_lat;
  static constexpr std::size_t kChannels = index_of(Channel::gnss_fix_quality) - index_of(kFirst) + 1;

  GnssAiding(const GnssConfig& config, const models::Vehicle& vehicle);

  // The measurement models of gnss_position, gnss_velocity and gnss_course.
  void add_models(SensorModels& models) const;

  static bool owns(Channel c) { return ChannelSamples<kFirst, kChannels>::owns(c); }
  bool hold(const Measurement& m) { return samples_.hold(m); }

  // Before the observer starts: the pose of the newest usable fix at t (the ENU origin is set
  // from it when so configured), or nothing yet.
  std::optional<models::VehicleStart> first_fix_pose(double t);
  // A re-initialisation at t: the pose of the last fix, if it is recent, replaces `st`'s.
  void pose_from_recent_fix(double t, models::VehicleStart& st) const;

  // The rows of the samples received up to t.
  void gather(double t, MeasurementRows& rows);
  // What the filter did with one of this unit's rows.
  void account(SensorKind kind, const UpdateResult& u);
  // After a step whose model and filter stayed healthy: true when every position row has been
  // rejected for longer than reset_after_rejection_s, so the observer should be reset to the
  // fix (PX4's position reset after a timeout of rejected GNSS).
  bool rejected_too_long(double t);

  void update_health(double t);
  const SourceHealth& health(SensorKind kind) const { return health_[index_of(kind)]; }
  bool position_timed_out() const { return health(SensorKind::gnss_position).timed_out(); }
  bool velocity_timed_out() const { return health(SensorKind::gnss_velocity).timed_out(); }
  const GnssConfig& config() const { return cfg_; }
  const GeographicLib::LocalCartesian& geodesy() const { return enu_; }

 private:
  // The chassis reference point behind the antenna's lever arm at heading `yaw`.
  void place_chassis(double e, double n, double yaw, models::VehicleStart& st) const;

  GnssConfig cfg_;
  const models::Vehicle& vehicle_;
  ChannelSamples<kFirst, kChannels> samples_;
  GeographicLib::LocalCartesian enu_;
  bool origin_set_ = false;
  // the last fix in ENU, the last speed and course, the receiver's last sigmas (GST)
  double fix_e_ = 0, fix_n_ = 0, fix_t_ = -1, fix_quality_ = 1;
  double speed_ = 0, course_ = 0;
  bool have_course_ = false;
  double gst_e_ = -1, gst_n_ = -1, gst_u_ = -1;
  // rejection timer of the position rows
  bool step_position_rejected_ = false, step_position_accepted_ = false;
  double rejected_since_ = -1;
  // gnss_position, gnss_velocity, gnss_course (the first three SensorKinds)
  std::array<SourceHealth, 3> health_;
};

}  // namespace mbo::est::aiding
