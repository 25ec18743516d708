// The model's inputs as a production car's bus gives them (issue 20), turned into the
// road-wheel steering angle, the wheels' drive torques and brake pressures the model takes
// (models::VehicleInputs):
//   steering     steering-wheel angle / a constant ratio, or through a table of road-wheel
//                against steering-wheel angle; a steering-wheel rate signal, if mapped, gives
//                the road-wheel rate through the same ratio (the table's local slope) instead
//                of differencing
//   driveline    engine or motor torque x gear ratio (per gear, or one fixed reduction) x
//                final drive x efficiency, split front/rear by the layout (FWD, RWD, or AWD
//                with a front share constant or tabled against speed) and evenly left/right
//                (an open differential)
//   brakes       master-cylinder pressure x each axle's line ratio (a proportioning valve's
//                constant), or a brake switch: while pressed, the pressures that decelerate
//                the car's mass at `switch_deceleration`, ramped in over `switch_ramp_s`;
//                the car's ABS, which such a bus does not show wheel by wheel, is modelled on
//                the model's own wheels (apply_abs)
// The converted samples go into ModelInputs as if the bus had carried them (same time, same
// DBC-limit flag), so that their plausibility, staleness and timeouts are judged there.
#pragma once

#include <array>
#include <vector>

#include "mbobserver/core/json_reader.hpp"
#include "mbobserver/estimation/aiding/aiding.hpp"
#include "mbobserver/estimation/aiding/model_inputs.hpp"
#include "mbobserver/models/vehicle.hpp"
#include "mbobserver/models/vehicle_outputs.hpp"

namespace mbo::est::aiding {

// y(x) on a table of increasing x, linear between points and held beyond.
struct Lookup {
  std::vector<double> x, y;
  double operator()(double v) const;
  double slope(double v) const;
};

struct SteeringConfig {
  double ratio = 0;  // steering-wheel / road-wheel angle; 0: `table`
  Lookup table;  // road-wheel (rad) of steering-wheel angle (rad)
  // The steering-wheel angle's quantum (rad; the DBC signal's factor), 0: none. Its error,
  // uniform over one quantum, is an input error the filter's covariance does not hold: it is
  // added to the outputs' sigma (OutputSigma).
  double resolution = 0;
};

// 1-sigma of the road-wheel angle (rad) that the steering-wheel angle's quantum leaves:
// resolution / sqrt(12) through the ratio (the table's steepest slope).
double road_wheel_angle_std(const SteeringConfig& c);

enum class DrivelineLayout { fwd, rwd, awd };

struct DrivelineConfig {
  DrivelineLayout layout = DrivelineLayout::rwd;
  // Gear ratio of each code the "gear" channel carries; with no gear channel, `fixed_ratio`.
  std::vector<std::pair<long long, double>> gear_ratios;
  double fixed_ratio = 1;
  double final_drive = 1;
  double efficiency = 1;
  double front_share = 0.5;  // AWD, without a table
  Lookup front_share_by_speed;  // AWD: front share of the speed (m/s)
};

struct BrakeConfig {
  double front_ratio = 1, rear_ratio = 1;  // wheel-cylinder / master-cylinder pressure
  double switch_deceleration = 3;  // m/s^2 while the switch is pressed
  double switch_ramp_s = 0.3;
  // The car's ABS acting on the model's wheels (apply_abs): each wheel's brake torque at most
  // `abs_force_fraction` of its tyre's peak longitudinal force times the rolling radius.
  bool abs = true;
  double abs_force_fraction = 0.95;
  // While the ABS model limits a wheel, the spectral density (m^2/s^5) added to the chassis's
  // longitudinal acceleration error (force_error on x), which the accelerometers then measure
  // (VehicleObserver); 0: off.
  double abs_force_error = 0;
};

struct BusInputsConfig {
  bool steering_set = false, driveline_set = false, brakes_set = false;  // sections given
  SteeringConfig steering;
  DrivelineConfig driveline;
  BrakeConfig brakes;
};

// The observer's "steering", "driveline" and "brakes" sections (each optional).
void read_bus_inputs_config(const JsonReader& observer, BusInputsConfig& c);

class BusInputs {
 public:
  static constexpr Channel kFirst = Channel::steering_wheel_angle;
  static constexpr std::size_t kChannels = 6;  // steering wheel angle, rate, engine torque, gear, master, switch

  BusInputs(const BusInputsConfig& config, const models::Vehicle& vehicle);

  static bool owns(Channel c) { return ChannelSamples<kFirst, kChannels>::owns(c); }
  bool hold(const Measurement& m) {
    if (!samples_.hold(m)) return false;
    flags_[index_of(m.channel) - index_of(kFirst)] = m.flags;  // a DBC limit carries over
    return true;
  }

  // Converts the samples received up to t into ModelInputs' channels (before its gather);
  // `speed`: the model's forward speed (m/s), for a speed-dependent AWD split.
  void convert(double t, double speed, ModelInputs& inputs);
  // After ModelInputs' gather: a steering-wheel rate signal overrides the differenced rate.
  void apply_rate(models::VehicleInputs& inputs) const;
  // After ModelInputs' gather, with brakes from the master pressure or the switch: the car's
  // ABS on the model's wheels. A production bus carries the driver's pressure, not the ABS
  // unit's per-wheel modulation: without it the model's wheels lock where the car's do not.
  // An ideal ABS holds each wheel on the stable side of its force peak: the brake torque is
  // limited to  T_max = f D_x R,  D_x = mu_eff(mu, Fz) peak_factor Fz, the tyre's peak force
  // (tyre.cpp) at the model's load Fz and friction `mu`. The wheel then settles where
  // Fx R = T_max, short of the peak slip, and never locks. Off below 2 m/s, as a car's ABS is.
  // A slip-feedback law holding kappa at 0.9 of the peak slip (the simulator's ABS) was tried
  // and gave 2x the position error in ABS braking: the force limit, which depends on nothing
  // but the load and the friction, lets the friction estimate settle (0.01 against 0.04 off).
  // Returns whether it limited any wheel.
  bool apply_abs(const models::VehicleOutputs& model, double mu, models::VehicleInputs& inputs) const;
  const BusInputsConfig& config() const { return cfg_; }
  void forget_time() {
    samples_.forget();
    switch_on_t_ = -1;
    have_rate_ = false;
  }

  // Road-wheel angle and the driveline's wheel torques, for the simulator's inverse and tests.
  double road_wheel_angle(double steering_wheel) const;
  double road_wheel_rate(double steering_wheel, double steering_wheel_rate) const;
  std::array<double, 4> wheel_torques(double engine_torque, double gear_ratio, double speed) const;
  double gear_ratio(double gear_code, bool& known) const;

 private:
  BusInputsConfig cfg_;
  const models::Vehicle& vehicle_;
  ChannelSamples<kFirst, kChannels> samples_;
  double engine_torque_ = 0, gear_ = 1;
  bool have_torque_ = false, have_gear_ = false;
  double switch_on_t_ = -1;
  double rate_ = 0, swa_ = 0;
  bool have_rate_ = false;
  std::array<std::uint8_t, kChannels> flags_{};
};

}  // namespace mbo::est::aiding
