#include "calibration_truth.hpp"

#include <algorithm>

namespace mbo::exp {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A wheel's effective rolling radius at its static load plus `extra_load` (N) and forward speed
// `speed` (models::TyreParams::effective_radius: R0 (1 + c_v v^2) - penetration / 3).
double rolling_radius(const models::Vehicle& v, int w, double speed, double extra_load = 0) {
  const auto& tyre = v.params.axles[static_cast<std::size_t>(models::axle_of(w))].tyre;
  return tyre.effective_radius((v.params.static_wheel_load(w) + extra_load) / tyre.radial_stiffness_N_per_m, speed);
}

}  // namespace

std::array<double, kCalibrationCount> calibration_truth(const VehicleScenario& sc, const TruthDrive& truth,
                                                        double speed) {
  std::array<double, kCalibrationCount> t;
  t.fill(kNaN);
  // IMU biases: the simulated turn-on plus in-run bias in the sensor's axes (y = (I + S + M) x
  // + b + b(t) + n, sensor_errors.hpp), which is what the observer's bias adds to its predicted
  // reading (GyroSensor, eq. (103)) when it takes the IMU to be mounted as it is. Mounted
  // otherwise, the estimate is that bias plus the misalignment's share of the rates and the
  // specific force: no constant to compare with.
  if (sc.observer.imu.rotation.isApprox(sc.sensors.imu_rotation, 1e-9)) {
    const auto& sim = truth.sensors();
    const Eigen::Vector3d g = sim.gyro_bias(), a = sim.accel_bias();
    for (int k = 0; k < 3; ++k) {
      const auto K = static_cast<std::size_t>(k);
      t[calibration_index("gyro_bias_x") + K] = g[k];
      t[calibration_index("accel_bias_x") + K] = a[k];
      // the scale factor, diag(scale); the cross-axis terms M take rates a car hardly has
      t[calibration_index("gyro_scale_x") + K] = sim.config().gyro_errors.scale[K];
    }
  }
  // Payloads: the loads at the model's payload points (VehicleParams::payload_front/rear) that
  // give the truth's mass and the x of its centre of gravity: dm = pf + pr and
  // m_t x_t - m_m x_m = pf x_f + pr x_r. A truth that differs in its CG height or inertia too
  // has no exact payload; these two are the ones the static loads, and so the filter, see.
  const auto& pm = sc.model->params;
  const auto& pt = sc.truth->params;
  const double dm = pt.total_mass() - pm.total_mass();
  const double dmx = pt.total_mass() * pt.vehicle_cg().x() - pm.total_mass() * pm.vehicle_cg().x();
  const double xf = pm.payload_front().x(), xr = pm.payload_rear().x();
  const double rear = (dmx - dm * xf) / (xr - xf);
  t[calibration_index("payload_front")] = dm - rear;
  t[calibration_index("payload_rear")] = rear;
  // Wheel scales: the Hall counts are the model's spin angle times scale (WheelHallSensor), and
  // a wheel rolling at v spins at v / R_e, so scale = R_e(model) / R_e(truth), each tyre's
  // effective rolling radius at its car's static load and the truth's speed. Load transfer moves
  // both radii alike; what is left of it is in the plant noise, not in the truth. An observer
  // that learns the payloads presses its tyres with them: its scale is right with the truth's
  // payloads on the model's static loads (with the file's loads alone, issue 18's +200 kg put
  // the rear scale's truth 0.24 % off what a filter knowing the load converges to).
  bool loads_learned = false;
  const auto& est = sc.observer.settings.estimated_inputs;
  for (std::size_t k = 0; k < est.size(); ++k)
    if ((est[k] == sc.model->in.payload_front || est[k] == sc.model->in.payload_rear) &&
        (k >= sc.observer.input_learned.size() || sc.observer.input_learned[k]))
      loads_learned = true;
  for (int w = 0; w < 4; ++w) {
    // the weight of the truth's payloads on this wheel (as the model settles under them)
    const double extra =
        loads_learned ? (dm - rear) * pm.wheel_load_per_kg(w, xf) + rear * pm.wheel_load_per_kg(w, xr) : 0;
    t[calibration_index("wheel_scale_fl") + static_cast<std::size_t>(w)] =
        rolling_radius(*sc.model, w, speed, extra) / rolling_radius(*sc.truth, w, speed);
  }
  // GNSS latency: the observer's is from the fix's epoch to the receive stamp the measurement
  // carries, which the simulator puts latency_s after the epoch and on average half its
  // latency jitter and half its CAN jitter later (sensor_sim.cpp, each uniform in [0, jitter]);
  // none when the fixes are stamped at their epoch.
  const auto& g = sc.sensors.gnss_timing;
  t[calibration_index("gnss_latency")] =
      sc.sensors.gnss_stamp_fix_time ? 0.0 : g.latency_s + 0.5 * g.latency_jitter_s + 0.5 * sc.sensors.can_jitter_s;
  // Stiffness scales: the truth's tyre stiffness over the model's (the front axle's for the
  // longitudinal scale, which applies to all four tyres).
  t[calibration_index("slip_stiffness")] =
      pt.axles[0].tyre.longitudinal.stiffness / pm.axles[0].tyre.longitudinal.stiffness;
  t[calibration_index("cornering_front")] = pt.axles[0].tyre.lateral.stiffness / pm.axles[0].tyre.lateral.stiffness;
  t[calibration_index("cornering_rear")] = pt.axles[1].tyre.lateral.stiffness / pm.axles[1].tyre.lateral.stiffness;
  return t;
}

void CalibrationScore::add(const std::array<Calibration, kCalibrationCount>& published,
                           const std::array<double, kCalibrationCount>& truth) {
  for (std::size_t k = 0; k < kCalibrationCount; ++k) {
    const auto& c = published[k];
    if (!c.estimated || !std::isfinite(truth[k]) || !(c.std > 0)) continue;
    const double e = c.value - truth[k];
    sq_[k] += e * e;
    nees_[k] += e * e / (c.std * c.std);
    false_converged_[k] += c.converged && std::abs(e) > kFalseConvergedSigmas * c.std;
    truth_[k] = truth[k];
    ++n_[k];
  }
}

void CalibrationScore::report(nlohmann::json& calibration) const {
  for (std::size_t k = 0; k < kCalibrationCount; ++k) {
    const std::string name(kCalibrationNames[k]);
    if (n_[k] == 0 || !calibration.contains(name)) continue;
    const double n = static_cast<double>(n_[k]);
    auto& c = calibration[name];
    c["truth"] = truth_[k];
    c["rmse"] = std::sqrt(sq_[k] / n);
    c["nees"] = nees_[k] / n;
    c["false_converged"] = static_cast<double>(false_converged_[k]) / n;
  }
}

}  // namespace mbo::exp
