// The estimate record of a vehicle observer step (core/estimate.hpp) from the corrected model,
// the filter's covariance and the health of the aiding units: what is published, with its
// 1-sigma and validity.
#pragma once

#include "mbobserver/core/estimate.hpp"
#include "mbobserver/estimation/error_ekf.hpp"
#include "mbobserver/models/vehicle.hpp"
#include "mbobserver/models/vehicle_outputs.hpp"

namespace mbo::est {

struct ValidityConfig;

// Observed coordinate (0..n-1) of the chassis coordinates the 1-sigma are published for; -1:
// not observed (their 1-sigma is then -1).
struct ObservedChassis {
  int x = -1, y = -1, yaw = -1;
};

// State and virtual sensors of the corrected model.
void record_outputs(const models::VehicleOutputs& o, EstimateRecord& r);

// 1-sigma of the published quantities from the filter covariance: x, y, yaw, vx, vy directly,
// the sideslip through v_lat = -sin(yaw) vx + cos(yaw) vy (beta ~ v_lat / speed), the road
// friction from its estimated input (`friction_input` k of the input block, -1: not estimated).
// `min_speed_for_sideslip`: below it the sideslip has no 1-sigma. `lever_arm`: the antenna's
// horizontal lever arm (chassis x, y, m) where the fixes place the chassis without turning it
// (gnss.chassis_only), else zero: the reference point behind a fix is then off by the lever
// arm turned through the heading's error, which the filter's position sigma does not hold.
void record_uncertainty(const ErrorEkf& filter, const ObservedChassis& c, int friction_input,
                        double min_speed_for_sideslip, const Eigen::Vector2d& lever_arm, EstimateRecord& r);

// One source as the outputs' validity sees it: whether the configuration fuses it, whether it
// has stopped (timed out), and what its consistency monitor says.
struct SourceState {
  bool fused = false, lost = false, consistent = true;
  double nis = 0;  // the monitor's filtered NIS (1 when consistent)
  // rows 0 and 1 (east and north; the course's in 0): their innovations' bias, in the row's unit
  // (RowMonitor::bias), 0 when none shows
  double bias[2] = {0, 0};
  bool bad() const { return fused && (lost || !consistent); }
};

struct SourcesState {
  SourceState gnss_position, gnss_velocity, gnss_course, gyro, accelerometers, wheels;
  bool settled = true;  // enough fixes accepted since the observer (re)started
  bool repeated_reset = false;  // within validity.reset_window_s of a second forced reset
  // within validity.reset_window_s of a forced reset, where the car (a load, a tyre's stiffness)
  // is learned: it was learned by a model that did not hold its sources
  bool car_suspect = false;
  bool inputs_plausible = true;  // no input held at its last plausible value
  // The model runs on a guessed input (held, or timed out): it cannot average the fixes, so
  // the position and velocity are known no better than one fix says (these sigmas, m, m/s).
  bool guessing = false;
  double fix_position_std = 0, fix_velocity_std = 0;
  // The GNSS latency's 1-sigma while it is learned (0 when configured), and the reference
  // point's velocity (ENU, m/s): a fix taken back over a lag known to dtau is off by v dtau
  // along the track.
  double latency_std = 0, vx = 0, vy = 0;
  // The receiver's error correlated beyond what the filter averages (GnssConfig::correlated_std).
  double correlated_std = 0;
};

// The heading the GNSS gives through the model rests on the model's rear slip angle: fixes and
// velocities give the rear axle's course, the gyro the kinematic part (yaw rate x lever arm),
// and heading = course + alpha_rear. A tyre softer or stiffer than its file, or a load that
// changes the rear axle's share of the lateral force, moves alpha_rear in proportion, which a
// filter whose model is its file cannot see (the combined drive: yaw 0.1 deg off for seconds in
// each turn, as its sideslip, with a sigma of 0.02 deg). Adds `relative_std` x |alpha_rear|
// (rad) to std.yaw in quadrature.
void add_rear_slip_error(double rear_slip_angle, double relative_std, EstimateRecord& r);

// The 1-sigma of the outputs a source observes grow with its monitor's NIS once it is beyond
// a consistent filter's fluctuation: a source whose innovations are k times their predicted
// variance says the filter's errors are about sqrt(k) times what its covariance claims
// (sigma never optimistic). While the model runs on a guessed input, the position and velocity
// sigmas are at least those of one fix.
void inflate_uncertainty(const SourcesState& s, EstimateRecord& r);

// Per-output validity and `valid` from the 1-sigma bounds, the sources and the faults.
//   position   within its bound, settled, and the fixes consistent, or rejected while the
//              motion sources (gyro, wheels, GNSS velocity) agree with the model: the fixes
//              are then the outlier and the model dead-reckons (PX4's GPS checks with votes)
//   heading    within its bound; gyro and course neither stopped nor inconsistent
//   (all of them only once settled: a (re)started estimate is a guess until fixes confirm it)
//   velocity   within its bound; GNSS velocity neither stopped nor inconsistent
//   attitude   the fused accelerometers neither stopped nor inconsistent
//   virtual    velocity and heading valid, wheels live and consistent, inputs live and
//              plausible
//   tyre_loads, tyre_forces  virtual, and every std.tyre_fz (tyre_fx and tyre_fy) under
//              its bound; not part of `valid`
//   all but attitude false while repeated_reset (the model does not hold its sources)
//   virtual (and so tyre_loads, tyre_forces) false while car_suspect
// `valid`: position, heading, velocity, attitude and virtual, no lost GNSS and no divergence.
void record_validity(const ValidityConfig& v, const SourcesState& s, EstimateRecord& r);

}  // namespace mbo::est
