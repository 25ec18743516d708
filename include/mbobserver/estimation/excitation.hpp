// When the motion can teach a parameter (issue 18: "a parameter moves only when the current
// motion excites it"). A parameter the motion does not excite is still in the error state, but
// the filter only *considers* it (Schmidt 1966; ErrorEkf::set_learning): its estimate stays,
// its uncertainty and correlations stay honest, so its variance does not collapse on rows that
// cannot tell it from the coordinates. Without this, a parameter that is unobservable in the
// current motion walks with whatever the other errors do:
//   - a payload while the car stands or cruises: its inertia answers no acceleration;
//   - the cornering scales on a straight road, the slip stiffness at constant speed.
// Each kind of parameter has its rule on the model's (low-passed) motion. (The GNSS latency is
// not a state of the filter: gnss_latency.hpp learns it where the velocity changes.)
#pragma once

#include <string_view>

namespace mbo::est {

// What motion a parameter needs to be learned.
enum class Excitation {
  // the gyro and accelerometer biases (at rest the model's rates are known to be 0), the wheels'
  // scales (gated to steady rolling, a wheel scale learned worse: mixed drive 60 s vx 0.0076 ->
  // 0.0092 m/s, the CAN drive's scales 0.9992 -> 0.9984, truth 1), friction
  always,
  // a payload, the slip stiffness: driving or braking forces (cornering alone teaches the two
  // payloads their sum: VehicleObserver::choose_learning)
  longitudinal,
  lateral,  // the cornering stiffness of an axle: cornering
};

// The rule of a parameter by its published name (kCalibrationNames; "mu" for friction).
Excitation excitation_of(std::string_view parameter);

struct ExcitationConfig {
  bool on = true;
  double min_speed = 3;  // m/s: below it only `always` parameters learn
  double min_accel = 1.0;  // m/s^2 of the acceleration a rule needs (longitudinal, lateral)
  double time_constant_s = 0.2;  // of the low-pass on the model's accelerations
};

// The model's motion, low-passed (its accelerations carry the tyres' and the suspension's
// vibration), and which rules it satisfies.
class ExcitationMonitor {
 public:
  explicit ExcitationMonitor(const ExcitationConfig& c = {}) : c_(c) {}
  // After a start of the model.
  void restart() { started_ = false; }
  // The model's speed along the chassis (m/s), its acceleration along and across (m/s^2), dt
  // after the last.
  void update(double speed, double a_long, double a_lat, double dt);
  bool excited(Excitation e) const;
  double speed() const { return speed_; }
  double a_long() const { return a_long_; }
  double a_lat() const { return a_lat_; }

 private:
  ExcitationConfig c_;
  double speed_ = 0, a_long_ = 0, a_lat_ = 0;
  bool started_ = false;
};

}  // namespace mbo::est
