// The vehicle observer on short pieces of the repository's scenarios (truth drive, simulated
// sensors, the wrong model corrected): accuracy against the open loop, a GNSS jump rejected, a
// GNSS outage bridged by the model, a sensor that stops, determinism, and no heap allocation
// in the step. Pieces are a few seconds long so that the sanitizer build stays quick; the longer
// drives that pin one figure are MBO_LONG_DRIVE_TEST()s, which the sanitizer build skips.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <vector>

#include "alloc_count.hpp"
#include "long_drive.hpp"
#include "mbobserver/core/json_reader.hpp"
#include "mbobserver/estimation/vehicle_record.hpp"
#include "mbobserver/experiment/runner.hpp"
#include "mbobserver/experiment/vehicle_experiment.hpp"
#include "mbobserver/mb/dynamics.hpp"
#include "mbobserver/mb/kinematics.hpp"

namespace {

using namespace mbo;
using mbo::exp::VehicleScenario;

VehicleScenario scenario(const char* name, double duration) {
  auto sc = exp::load_vehicle_scenario(std::string(MBO_SOURCE_DIR) + "/scenarios/" + name);
  sc.duration = duration;
  return sc;
}

double rmse(const nlohmann::json& rep, const char* who, const char* q) { return rep["rmse"][who][q].get<double>(); }

// The "observer" section of a configuration file of the repository's config/ folder.
nlohmann::json observer_section(const char* file) {
  return nlohmann::json::parse(std::ifstream(std::string(MBO_SOURCE_DIR) + "/config/" + file))["observer"];
}

// That section read for the sedan (the shipped lane change's model).
est::VehicleObserverConfig read_observer(const nlohmann::json& section) {
  static const auto sc =
      exp::load_vehicle_scenario(std::string(MBO_SOURCE_DIR) + "/scenarios/vehicle_double_lane_change.json");
  return est::read_vehicle_observer_config(JsonReader(section, "obs.json"), *sc.model);
}

// errorEKF-FE on x, y, yaw and the four spins, a force error on the spins: the settings the
// Jacobian tests take on the sedan (period and terms are each test's).
est::ObserverSettings sedan_fe_settings(const models::Vehicle& v) {
  est::ObserverSettings set;
  for (int slot : {v.x, v.y, v.yaw, v.wheels[0].spin, v.wheels[1].spin, v.wheels[2].spin, v.wheels[3].spin})
    for (std::size_t j = 0; j < v.model.z.size(); ++j)
      if (v.model.z[j] == slot) set.observed.push_back(static_cast<int>(j));
  auto& fs = set.filter;
  fs.force_error = true;
  fs.forced = {3, 4, 5, 6};
  fs.accel_noise.assign(7, 1.0);
  fs.initial_std_z.assign(7, 0.1);
  fs.initial_std_zd.assign(7, 0.1);
  fs.accel_rate_noise.assign(4, 10.0);
  fs.initial_std_a.assign(4, 10.0);
  return set;
}

TEST(VehicleObserver, DoubleLaneChangeFromFirstFixBeatsTheOpenLoopWhereItMatters) {
  // The bundled drive's scenario (starts from the first GNSS fix), first 4 s.
  auto sc = scenario("vehicle_double_lane_change.json", 4);
  const auto rep = exp::run_vehicle_experiment(sc, {});
  // the model starts with its wheels where the counts put them: no Hall row is rejected (all
  // four were, for 0.1 s, when the start came 40 ms after the first count)
  EXPECT_EQ(rep["sensors"]["wheels"]["rejected"].get<double>(), 0.0);
  // position and heading: the open loop drifts, the observer stays at the GNSS noise level
  EXPECT_LT(rmse(rep, "observer", "x"), 0.02);
  EXPECT_LT(rmse(rep, "observer", "y"), 0.02);
  EXPECT_LT(rmse(rep, "observer", "x"), 0.2 * rmse(rep, "model", "x"));
  EXPECT_LT(rmse(rep, "observer", "yaw"), rmse(rep, "model", "yaw"));
  EXPECT_LT(rmse(rep, "observer", "yaw_rate"), 5e-4);  // gyro noise 2e-4 rad/s
  // virtual sensors (Sinigaglia 2016 Table 3 sensors): sideslip and loads
  EXPECT_LT(rmse(rep, "observer", "sideslip_deg"), 0.1);
  EXPECT_LT(rmse(rep, "observer", "tyre_fz_fl"), 100.0);  // of ~4300 N static
  // Fx: the model's Jacobians tell the filter that a wheel's slip settles within a step, so its
  // spin corrections do not shake the slip (273 N in these 4 s with 0.7's filter, 8 N now)
  EXPECT_LT(rmse(rep, "observer", "tyre_fx_fl"), 30.0);
  EXPECT_EQ(rep["failures"]["resets"].get<int>(), 0);
  EXPECT_EQ(rep["failures"]["model_step_failures"].get<int>(), 0);
  EXPECT_EQ(rep["sensors"]["gnss_pos"]["rejected"].get<int>(), 0);
  // consistency: the mean NEES of 14 error states is of the order of its dof, not 100x off
  EXPECT_LT(rep["consistency"]["nees_mean"].get<double>(), 5.0 * rep["consistency"]["nees_dof"].get<double>());
  // The model step's Newton iterations: two with the engine's extrapolating predictor; the
  // corrections move the predictor's history with the state (three if they did not).
  EXPECT_LT(rep["newton_iterations_mean"]["model"].get<double>(), 2.1);
  EXPECT_LT(rep["newton_iterations_mean"]["observer"].get<double>(), 2.4);  // 2.29; 2.51 without
}

TEST(VehicleObserver, ForceJacobiansMatchTheFullDifferencesOfTheTyres) {
  // The cheap Jacobians (R, Rdot, Mbar held; only the applied forces differentiated) against
  // the full differences of eq. (67) on the sedan at 20 m/s with drive torque and steering:
  // the tyres' slip terms, which dominate both, agree.
  auto v =
      models::build_vehicle(models::load_vehicle_params(std::string(MBO_SOURCE_DIR) + "/config/vehicles/sedan.json"));
  models::VehicleInputs in;
  in.steer = 0.02;
  in.drive_torque = {150, 150, 0, 0};
  mb::Workspace ws(v.model);
  models::VehicleStart st;
  st.speed = 20;
  mb::State s0 = models::start_vehicle(v, ws, st, in);
  est::ObserverSettings set = sedan_fe_settings(v);
  ASSERT_EQ(set.observed.size(), 7u);
  auto jacobians = [&](est::JacobianTerms terms, int period) {
    set.jacobian_terms = terms;
    set.jacobian_period = period;
    est::MbObserver o(v.model, {}, set, 0.002);
    o.initialize(s0);
    models::set_inputs(v, in, o.state());
    for (int k = 0; k < std::min(period, 3); ++k) o.step({});
    auto pair = std::make_pair(Eigen::MatrixXd(o.jacobian_position()), Eigen::MatrixXd(o.jacobian_velocity()));
    if (period == 1) {
      EXPECT_FALSE(o.jacobians_trusted());  // the first pair: nothing to compare it with
      o.step({});
      EXPECT_TRUE(o.jacobians_trusted());  // steady driving: the next pair is close to it
    }
    return pair;
  };
  const auto [P_all, V_all] = jacobians(est::JacobianTerms::all, 1);
  const auto [P_f, V_f] = jacobians(est::JacobianTerms::forces, 1);
  // Spread over three steps (period 25), the pair is that of the first step's state, bit for bit.
  const auto [P_split, V_split] = jacobians(est::JacobianTerms::forces, 25);
  EXPECT_EQ(P_split, P_f);
  EXPECT_EQ(V_split, V_f);
  // A spin's own damping: -(dFx/dkappa) r^2 / (I V), here a few hundred 1/s.
  for (int w = 3; w < 7; ++w) {
    EXPECT_LT(V_all(w, w), -100.0) << w;
    EXPECT_NEAR(V_f(w, w), V_all(w, w), 0.02 * std::abs(V_all(w, w))) << w;
  }
  EXPECT_LT((V_f - V_all).norm(), 0.005 * V_all.norm());  // 0.0007
  EXPECT_LT((P_f - P_all).norm(),
            0.05 * P_all.norm());  // 0.019: the full differences carry a 0.9 floor in the spin rows
  std::cout << "dzdd/dzd differs by " << (V_f - V_all).norm() / V_all.norm() << " (relative Frobenius), dzdd/dz by "
            << (P_f - P_all).norm() / P_all.norm() << "; spin FL " << V_all(3, 3) << " 1/s\n";
}

TEST(VehicleObserver, TransitionOfASpinRateErrorIsTheModelStepsOwnResponse) {
  // What the filter's transition (trapezoidal rule with the model's Jacobians) predicts for a
  // wheel spin-rate error after one step, against what mb::step does with a state whose spin
  // rate is nudged: a tyre's slip mode decays within the step, so a nudge keeps only about half
  // of itself (the plain double integrator would keep all of it).
  auto v =
      models::build_vehicle(models::load_vehicle_params(std::string(MBO_SOURCE_DIR) + "/config/vehicles/sedan.json"));
  v.model.solver.tolerance = 1e-12;  // the nudge's effect, not the Newton tolerance
  models::VehicleInputs in;
  in.steer = 0.02;
  in.drive_torque = {150, 150, 0, 0};
  mb::Workspace ws(v.model);
  models::VehicleStart st;
  st.speed = 20;
  const mb::State s0 = models::start_vehicle(v, ws, st, in);
  const double dt = 0.002, nudge = 0.1;  // rad/s: a slip change of 0.0015, well inside the linear range
  auto spin_rate_after_step = [&](double d) {
    mb::State s = s0;
    models::set_inputs(v, in, s);
    s.qd[v.wheels[0].spin] += d;
    mb::factor_kinematics(v.model, s.q, ws);
    mb::solve_velocity(v.model, s.u, s.qd, ws);
    mb::initialize_accelerations(v.model, s, ws);
    s.qdd_prev = s.qdd_prev2 = s.qdd;
    EXPECT_TRUE(mb::step(v.model, s, ws, dt).converged);
    return s.qd[v.wheels[0].spin];
  };
  const double model_keeps = (spin_rate_after_step(nudge) - spin_rate_after_step(0)) / nudge;

  est::ObserverSettings set = sedan_fe_settings(v);
  auto& fs = set.filter;
  set.jacobian_period = 1;
  set.jacobian_terms = est::JacobianTerms::forces;
  est::MbObserver o(v.model, {}, set, dt);
  o.initialize(s0);
  models::set_inputs(v, in, o.state());
  o.step({});
  // Column j of the transition F from P = e_j e_j': F P F' + W - W = f f', f = F e_j.
  auto kept = [&](const Eigen::MatrixXd* A21, const Eigen::MatrixXd* A22) {
    est::ErrorEkf f(7, fs, dt);
    const int j = 7 + 3;  // the rate of spin_fl
    f.covariance().setZero();
    f.covariance()(j, j) = 1;
    f.predict(A21, A22);
    // f_3 = F(3, j) = dt (the position row does not see the Jacobians), so F(j, j) = P(3, j) / dt
    const Eigen::MatrixXd P = f.covariance() - f.plant_noise();
    return P(3, j) / dt;
  };
  const double filter_keeps = kept(&o.jacobian_position(), &o.jacobian_velocity());
  std::cout << "a spin-rate nudge keeps " << model_keeps
            << " of itself after one model step; the filter's transition says " << filter_keeps << "\n";
  EXPECT_GT(model_keeps, 0.3);
  EXPECT_LT(model_keeps, 0.8);
  EXPECT_NEAR(filter_keeps, model_keeps, 0.05 * model_keeps);
  EXPECT_NEAR(kept(nullptr, nullptr), 1.0, 1e-12);  // without the Jacobians: all of it
}

TEST(VehicleObserver, FrictionJacobianMatchesTheFullDifferencesAndItsSign) {
  // dzdd/dmu of the estimated friction, forces-only against eq. (67) re-evaluated, on snow
  // (mu 0.3) at 15 m/s with the front wheels driven near their limit and some steering.
  auto v =
      models::build_vehicle(models::load_vehicle_params(std::string(MBO_SOURCE_DIR) + "/config/vehicles/sedan.json"));
  models::VehicleInputs in;
  in.steer = 0.03;
  in.mu = 0.3;
  in.drive_torque = {350, 350, 0, 0};
  mb::Workspace ws(v.model);
  models::VehicleStart st;
  st.speed = 15;
  mb::State s0 = models::start_vehicle(v, ws, st, in);
  est::ObserverSettings set = sedan_fe_settings(v);
  auto& fs = set.filter;
  fs.input_rate_noise = {1e-5};
  fs.initial_std_p = {0.01};
  set.estimated_inputs = {v.in.mu};
  set.input_min = {0.05};
  set.input_max = {1.5};
  set.jacobian_period = 1;
  auto friction_jacobian = [&](est::JacobianTerms terms) {
    set.jacobian_terms = terms;
    est::MbObserver o(v.model, {}, set, 0.002);
    o.initialize(s0);
    models::set_inputs(v, in, o.state());
    o.step({});
    EXPECT_EQ(o.state().u[v.in.mu], 0.3);  // nothing fused: the friction is the caller's
    return Eigen::VectorXd(o.input_jacobian().col(0));
  };
  const Eigen::VectorXd B_all = friction_jacobian(est::JacobianTerms::all);
  const Eigen::VectorXd B_f = friction_jacobian(est::JacobianTerms::forces);
  EXPECT_LT((B_f - B_all).norm(), 0.01 * B_all.norm());
  // More grip: the driven wheels spin up less (their tyres take more of the torque)...
  EXPECT_LT(B_all[3], -1.0);
  EXPECT_LT(B_all[4], -1.0);
  // ...and the car accelerates more along its heading (yaw about 0 at the start)
  EXPECT_GT(B_all[0], 0.1);
  std::cout << "dzdd/dmu: x " << B_all[0] << " m/s^2, spin FL " << B_all[3] << " rad/s^2; forces-only differs by "
            << (B_f - B_all).norm() / B_all.norm() << "\n";
}

TEST(VehicleObserver, EstimatesTheSnowFrictionOnceTheTyresReachTheirLimit) {
  // The snow circle's model has mu 0.185 against the truth's 0.2. Friction only shows at the
  // tyres' force peak, which this circle reaches at about 10.5 s; before that the estimate
  // barely moves (B = dzdd/dmu is near zero: the slip stiffness does not depend on mu).
  // Measured from 11 s on, the estimate is the truth's and so are the lateral tyre forces.
  auto sc = scenario("vehicle_circle.json", 15);
  sc.metrics_from = 11;
  ASSERT_EQ(sc.observer.settings.estimated_inputs.size(), 1u);
  const auto rep = exp::run_vehicle_experiment(sc, {});
  EXPECT_NEAR(rmse(rep, "model", "friction"), 0.015, 1e-9);
  EXPECT_LT(rmse(rep, "observer", "friction"), 0.004);
  EXPECT_LT(rep["max_abs"]["observer"]["friction"].get<double>(), 0.01);
  for (const char* q : {"tyre_fy_fl", "tyre_fy_fr", "tyre_fy_rl", "tyre_fy_rr"})
    EXPECT_LT(rmse(rep, "observer", q), 0.3 * rmse(rep, "model", q)) << q;
  EXPECT_EQ(rep["failures"]["resets"].get<int>(), 0);
  std::cout << "friction RMSE " << rmse(rep, "observer", "friction") << "; tyre Fy FL "
            << rmse(rep, "observer", "tyre_fy_fl") << " N against " << rmse(rep, "model", "tyre_fy_fl")
            << " N open loop\n";
}

// The published 1-sigma of the virtual sensors (issue 20) is never optimistic on the lane
// change: the mean NEES of every one is below 3 (the tyre loads' was 1e20 while the vertical
// dynamics outside the error state gave them a sigma of 1e-7 N; now a model error is added).
TEST(VehicleObserver, VirtualSensorSigmasAreNotOptimisticOnTheLaneChange) {
  auto sc = scenario("vehicle_double_lane_change.json", 8);
  // the truth is the vehicle file, load included: the loads' sigma without a payload prior
  sc.observer.validity.payload_std_kg = {0, 0};
  const auto rep = exp::run_vehicle_experiment(sc, {});
  const auto& nees = rep["consistency"]["output_nees"];
  for (const char* q : {"tyre_fz_fl", "tyre_fz_fr", "tyre_fz_rl", "tyre_fz_rr", "tyre_fy_fl", "tyre_fx_fl",
                        "sideslip_deg", "wheel_speed_fl", "x", "yaw"}) {
    ASSERT_TRUE(nees.contains(q)) << q;
    EXPECT_LT(nees[q].get<double>(), 3.0) << q;
  }
  // and the loads' sigma is not a mere bound of convenience: their errors fill it in part
  EXPECT_GT(nees["tyre_fz_fl"].get<double>(), 0.05);
}

// Fixes that place the chassis without turning it (gnss.chassis_only) pin the antenna: the
// reference point behind it is off by the lever arm turned through the heading's error, which
// the published position sigma now holds (1.2 m forward, heading sigma 0.01 rad, car heading
// north: 12 mm across the car, along x; nothing along it).
TEST(VehicleObserver, APositionPlacedByTheAntennaCarriesItsLeverArmTurnedByTheHeadingsSigma) {
  est::ErrorEkfSettings s;
  s.accel_noise.assign(3, 0.5);
  s.initial_std_z = {0.002, 0.002, 0.01};  // x, y, yaw
  s.initial_std_zd.assign(3, 0.1);
  est::ErrorEkf filter(3, s, 0.002);
  const est::ObservedChassis chassis{0, 1, 2};
  auto sigma = [&](const Eigen::Vector2d& lever_arm) {
    EstimateRecord r;
    r.yaw = M_PI / 2;
    est::record_uncertainty(filter, chassis, -1, 1.0, lever_arm, r);
    return std::pair{r.std_x, r.std_y};
  };
  const auto [x0, y0] = sigma(Eigen::Vector2d::Zero());
  EXPECT_NEAR(x0, 0.002, 1e-12);
  EXPECT_NEAR(y0, 0.002, 1e-12);
  const auto [x1, y1] = sigma({1.2, 0.0});
  EXPECT_NEAR(x1, std::hypot(0.002, 1.2 * 0.01), 1e-12);
  EXPECT_NEAR(y1, 0.002, 1e-12);
}

// validity.tyre_loads: the virtual sensors' flag and every wheel's load sigma under the bound.
TEST(VehicleObserver, TyreLoadsAreValidOnlyWithEveryLoadsSigmaUnderTheBound) {
  est::ValidityConfig V;
  V.max_tyre_load_std = 125;
  auto flag = [&](PerWheel sd, double std_vx) {
    EstimateRecord r;
    r.std_x = r.std_y = 0.01, r.std_yaw = 0.001, r.std_vx = std_vx, r.std_vy = 0.01;
    r.std_tyre_fz = sd;
    est::record_validity(V, est::SourcesState{}, r);
    return r.validity.tyre_loads;
  };
  EXPECT_TRUE(flag({100, 100, 120, 124}, 0.01));
  EXPECT_FALSE(flag({100, 100, 126, 100}, 0.01));
  EXPECT_FALSE(flag({100, -1, 100, 100}, 0.01));  // a sigma not known yet
  EXPECT_FALSE(flag({100, 100, 100, 100}, 1.0));  // velocity, and with it the virtual sensors, invalid
}

// A forced reset where the car is learned (car_suspect): the loads and stiffness scales were
// learned by a model that did not hold its sources, so the virtual sensors, and with them the
// tyre loads and forces and `valid`, are not valid for validity.reset_window_s; the position,
// heading and velocity, which the sources hold again, are.
TEST(VehicleObserver, AForcedResetLeavesTheVirtualSensorsNotValidWhereTheCarIsLearned) {
  est::ValidityConfig V;
  auto record = [&](bool suspect) {
    EstimateRecord r;
    r.std_x = r.std_y = 0.01, r.std_yaw = 0.001, r.std_vx = r.std_vy = 0.01;
    r.std_tyre_fz = {10, 10, 10, 10}, r.std_tyre_fx = {10, 10, 10, 10}, r.std_tyre_fy = {10, 10, 10, 10};
    est::SourcesState s;
    s.car_suspect = suspect;
    est::record_validity(V, s, r);
    return r;
  };
  const auto trusted = record(false), suspect = record(true);
  EXPECT_TRUE(trusted.valid);
  EXPECT_TRUE(trusted.validity.virtual_sensors && trusted.validity.tyre_loads && trusted.validity.tyre_forces);
  EXPECT_FALSE(suspect.valid);
  EXPECT_FALSE(suspect.validity.virtual_sensors || suspect.validity.tyre_loads || suspect.validity.tyre_forces);
  EXPECT_TRUE(suspect.validity.position && suspect.validity.heading && suspect.validity.velocity);
}

// validity.tyre_forces: the virtual sensors' flag and every wheel's Fx and Fy sigma under the bound.
TEST(VehicleObserver, TyreForcesAreValidOnlyWithEveryForcesSigmaUnderTheBound) {
  est::ValidityConfig V;
  V.max_tyre_force_std = 125;
  auto flag = [&](PerWheel fx, PerWheel fy, double std_vx) {
    EstimateRecord r;
    r.std_x = r.std_y = 0.01, r.std_yaw = 0.001, r.std_vx = std_vx, r.std_vy = 0.01;
    r.std_tyre_fx = fx, r.std_tyre_fy = fy;
    r.std_tyre_fz = {500, 500, 500, 500};  // the loads' sigma does not bound the forces'
    est::record_validity(V, est::SourcesState{}, r);
    return r.validity.tyre_forces;
  };
  EXPECT_TRUE(flag({10, 20, 30, 124}, {100, 110, 120, 124}, 0.01));
  EXPECT_FALSE(flag({10, 20, 126, 30}, {100, 110, 120, 124}, 0.01));
  EXPECT_FALSE(flag({10, 20, 30, 40}, {100, 126, 120, 124}, 0.01));
  EXPECT_FALSE(flag({10, 20, -1, 40}, {100, 110, 120, 124}, 0.01));  // a sigma not known yet
  EXPECT_FALSE(flag({10, 20, 30, 40}, {10, 20, 30, 40}, 1.0));  // velocity, and with it the virtual sensors, invalid
}

// A learned GNSS latency's sigma is an along-track error of the position: v dtau is added to
// std.x and std.y (the combined robustness drive, 300 s, latency learned: position false-valid
// 2.8 -> 1.3 %, x NEES 2.96 -> 1.88, RMSE unchanged).
TEST(VehicleObserver, TheLearnedLatencysSigmaIsInThePositionsSigma) {
  EstimateRecord r;
  r.std_x = 0.01, r.std_y = 0.02, r.std_vx = r.std_vy = 0.01, r.std_yaw = 0.001;
  est::SourcesState s;
  s.latency_std = 0.005, s.vx = 14, s.vy = -3;
  est::inflate_uncertainty(s, r);
  EXPECT_NEAR(r.std_x, std::hypot(0.01, 0.07), 1e-12);
  EXPECT_NEAR(r.std_y, std::hypot(0.02, 0.015), 1e-12);
  EXPECT_EQ(r.std_vx, 0.01);  // the velocity's own lag is a row matter, not published here
  est::SourcesState configured;  // a configured latency: no sigma of its own
  configured.vx = 14;
  r.std_x = 0.01;
  est::inflate_uncertainty(configured, r);
  EXPECT_EQ(r.std_x, 0.01);
}

// A car heavier than its vehicle file (200 kg at its CG: about 490 N more on each tyre): the
// observer cannot see the load in the tyre loads and forces it publishes, so only their sigma
// can say it.
// With the load the file gives taken as known, tyre_loads was set while Fz was more than 500 N
// off on most steps; with the payload prior (40 kg front, 80 kg rear: sigma 129-398 N per
// wheel) it is never set. 200 kg is 2.5 sigma of that prior, and the front loads' NEES says so:
// 894 -> 21 (Fz FL off by 598 N RMSE).
TEST(VehicleObserver, TyreLoadsAndForcesOfACarHeavierThanItsFileHoldTheLoadInTheirSigma) {
  auto sc = scenario("robustness/sedan_dlc_heavier.json", 4);
  sc.observer.gnss.latency_std = 0;  // the simulator's receiver is on time: the load's sigma alone
  sc.observer.validity.payload_std_kg = {0, 0};
  const auto known = exp::run_vehicle_experiment(sc, {});
  sc.observer.validity.payload_std_kg = {40, 80};  // the default
  const auto prior = exp::run_vehicle_experiment(sc, {});
  const double fv_known = known["false_valid"]["rate"]["tyre_fz"].get<double>();
  const double fv_prior = prior["false_valid"]["rate"]["tyre_fz"].get<double>();
  EXPECT_GT(fv_known, 0.5);
  EXPECT_EQ(fv_prior, 0.0);
  // the other outputs' flags do not move with it
  EXPECT_EQ(known["false_valid"]["rate"]["position"], prior["false_valid"]["rate"]["position"]);
  EXPECT_GT(known["consistency"]["output_nees"]["tyre_fz_fl"].get<double>(), 100.0);
  EXPECT_LT(prior["consistency"]["output_nees"]["tyre_fz_fl"].get<double>(),
            0.05 * known["consistency"]["output_nees"]["tyre_fz_fl"].get<double>());
  std::cout << "tyre Fz false-valid " << fv_known << " -> " << fv_prior << "; Fz FL NEES "
            << known["consistency"]["output_nees"]["tyre_fz_fl"] << " -> "
            << prior["consistency"]["output_nees"]["tyre_fz_fl"] << "; Fz FL RMSE "
            << rmse(prior, "observer", "tyre_fz_fl") << " N\n";

  // The forces too: a tyre's force at the observed slip scales with its load, so the load's
  // relative sigma is the force's (output_sigma.cpp). Without it the lateral forces' sigma was
  // optimistic on the heavier car and the forces were flagged valid on every step.
  auto fy_nees = [](const nlohmann::json& rep, const char* q) {
    return rep["consistency"]["output_nees"][q].get<double>();
  };
  auto share = [](const nlohmann::json& rep) { return rep["false_valid"]["valid_share"]["tyre_fy"].get<double>(); };
  for (const char* q : {"tyre_fy_fl", "tyre_fy_rl"}) {
    EXPECT_LT(fy_nees(prior, q), 0.7 * fy_nees(known, q)) << q;
    std::cout << q << " NEES " << fy_nees(known, q) << " -> " << fy_nees(prior, q) << "\n";
  }
  EXPECT_GT(fy_nees(known, "tyre_fy_fl"), 3.0);
  EXPECT_LT(fy_nees(prior, "tyre_fy_rl"), 2.0);  // the rear prior (80 kg) holds most of it
  EXPECT_LT(share(prior), share(known));
  EXPECT_GT(share(prior), 0.0);  // the straight before the lane change is flagged
  EXPECT_EQ(prior["false_valid"]["rate"]["tyre_fy"].get<double>(), 0.0);
  std::cout << "tyre forces flagged on " << share(known) << " -> " << share(prior) << " of the steps\n";

  // And the travels: the heavier car sits lower on its springs (dFz / k: travel 22 mm RMSE
  // off at the front here, 14 mm at the rear), which the model's travel does not, and their
  // sigma now holds the prior's settling (output_sigma.cpp; NEES 3100 -> 20 and 1300 -> 1.0),
  // where before it held only the 0.4 mm model floor.
  for (const char* q : {"travel_fl", "travel_rl"}) {
    EXPECT_GT(fy_nees(known, q), 100.0) << q;
    EXPECT_LT(fy_nees(prior, q), 0.05 * fy_nees(known, q)) << q;
    std::cout << q << " NEES " << fy_nees(known, q) << " -> " << fy_nees(prior, q) << ", RMSE "
              << rmse(prior, "observer", q) << " m\n";
  }
}

// The heading through the GNSS rests on the model's rear slip angle (add_rear_slip_error): on
// the lane change with tyres 10 % softer than the file the yaw's sigma was optimistic (NEES
// 3.15); with the slip angle's prior (20 %) it is not (0.24). The estimate does not move.
TEST(VehicleObserver, TheYawSigmaHoldsTheRearSlipAngleTheTyresMayDifferBy) {
  auto sc = exp::load_vehicle_scenario(std::string(MBO_SOURCE_DIR) + "/tests/estimation/dlc_tyres_minus10pct.json");
  sc.observer.imu.gyro_bias_std = 0;  // the simulator's gyro is calibrated: this sigma's term alone
  sc.observer.validity.rear_slip_angle_rel_std = 0;
  const auto none = exp::run_vehicle_experiment(sc, {});
  sc.observer.validity.rear_slip_angle_rel_std = 0.2;  // the default
  const auto prior = exp::run_vehicle_experiment(sc, {});
  const double n0 = none["consistency"]["output_nees"]["yaw"].get<double>();
  const double n1 = prior["consistency"]["output_nees"]["yaw"].get<double>();
  EXPECT_GT(n0, 2.0);
  EXPECT_LT(n1, 1.0);
  EXPECT_EQ(rmse(none, "observer", "yaw"), rmse(prior, "observer", "yaw"));
  std::cout << "yaw NEES " << n0 << " -> " << n1 << "\n";

  EstimateRecord r;
  r.std_yaw = 0.0003;
  est::add_rear_slip_error(-0.02, 0.2, r);
  EXPECT_NEAR(r.std_yaw, 0.0040112, 1e-7);  // hypot(0.0003, 0.2 x 0.02)
  r.std_yaw = -1;  // no sigma (yaw not observed) stays none
  est::add_rear_slip_error(0.02, 0.2, r);
  EXPECT_EQ(r.std_yaw, -1);
}

// filter.adaptive_plant_noise (plant_noise_adaptation.hpp), on in the shipped files: on the
// car that is its vehicle file, the chassis's plant noise falls as the GNSS innovations stay
// consistent, and the pessimistic sigma of tyre Fy (NEES 0.07 with the configured noise) and
// the sideslip error follow it. Measured, seed 1, 8 s: Fy NEES FL 0.07 -> 0.49, RL 0.07 ->
// 0.38; sideslip 0.0108 -> 0.0029 deg.
TEST(VehicleObserver, AdaptivePlantNoiseMakesTheMatchedLaneChangesFySigmaHonest) {
  auto sc = scenario("vehicle_double_lane_change.json", 8);
  sc.observer.validity.payload_std_kg = {0, 0};  // the truth is the vehicle file, load included
  const auto& a = sc.observer.adaptation;  // the defaults of docs/configuration.md
  ASSERT_TRUE(a.on);
  EXPECT_EQ(a.x, 0);  // observe: x y yaw spins; across the heading and yaw
  EXPECT_EQ(a.y, 1);
  EXPECT_EQ(a.yaw_index, 2);
  const auto adapted = exp::run_vehicle_experiment(sc, {});
  sc.observer.adaptation.on = false;
  const auto fixed = exp::run_vehicle_experiment(sc, {});
  const auto& n0 = fixed["consistency"]["output_nees"];
  const auto& n1 = adapted["consistency"]["output_nees"];
  for (const char* q : {"tyre_fy_fl", "tyre_fy_rl"}) {
    EXPECT_LT(n0[q].get<double>(), 0.2) << q;
    EXPECT_GT(n1[q].get<double>(), 0.3) << q;
    EXPECT_LT(n1[q].get<double>(), 2.0) << q;
  }
  EXPECT_LT(rmse(adapted, "observer", "sideslip_deg"), 0.5 * rmse(fixed, "observer", "sideslip_deg"));
  EXPECT_LT(rmse(adapted, "observer", "x"), 1.2 * rmse(fixed, "observer", "x"));
  std::cout << "tyre Fy NEES FL " << n0["tyre_fy_fl"] << " -> " << n1["tyre_fy_fl"] << ", RL " << n0["tyre_fy_rl"]
            << " -> " << n1["tyre_fy_rl"] << "; sideslip " << rmse(fixed, "observer", "sideslip_deg") << " -> "
            << rmse(adapted, "observer", "sideslip_deg") << " deg\n";
}

// Issue 20's acceptance on the shipped lane change: the tyre Fy sigma's NEES within [0.5, 2],
// on the car declared weighed (scenarios/patches/weighed_car.json: the truth carries no load,
// so the default payload prior's 40 / 80 kg, which every force's sigma holds, is off). Seeds
// 1-5 measured: 0.79 / 0.87 / 0.59 / 0.60; with the prior on, 0.010-0.020, a sigma for loads
// the car does not carry. Only the sigmas differ: the estimates are the same to the bit.
TEST(VehicleObserver, TheLaneChangesFySigmaIsHonestOnAWeighedCar) {
  MBO_LONG_DRIVE_TEST();
  const auto patch =
      nlohmann::json::parse(std::ifstream(std::string(MBO_SOURCE_DIR) + "/scenarios/patches/weighed_car.json"));
  const auto weighed_sc =
      exp::load_vehicle_scenario(std::string(MBO_SOURCE_DIR) + "/scenarios/vehicle_double_lane_change.json", &patch);
  const auto shipped_sc = scenario("vehicle_double_lane_change.json", weighed_sc.duration);
  std::vector<nlohmann::json> weighed, shipped;
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    weighed.push_back(exp::run_vehicle_experiment(weighed_sc, {seed}));
    shipped.push_back(exp::run_vehicle_experiment(shipped_sc, {seed}));
  }
  const auto w = exp::aggregate_reports(weighed);
  const auto s = exp::aggregate_reports(shipped);
  for (const char* q : {"tyre_fy_fl", "tyre_fy_fr", "tyre_fy_rl", "tyre_fy_rr"}) {
    const double nees = w["consistency"]["output_nees"][q].get<double>();
    std::cout << q << " NEES " << s["consistency"]["output_nees"][q] << " -> " << nees << "\n";
    EXPECT_GE(nees, 0.5) << q;
    EXPECT_LE(nees, 2.0) << q;
    EXPECT_LT(s["consistency"]["output_nees"][q].get<double>(), 0.1) << q;  // the prior's share
    EXPECT_EQ(rmse(w, "observer", q), rmse(s, "observer", q)) << q;
  }
}

// The adaptive plant noise takes the lateral noise to 1e-5 of its own on the matched car, and
// J P J' of the sideslip with it to 0.0011 deg, while the sideslip still wanders with each 1 m
// fix by about 0.003 deg: flagged valid 4 sigma off on 9.6 % of the steps (3 seeds of 30 s)
// until its sigma held that model error as a floor (vehicle_record.cpp).
TEST(VehicleObserver, TheSideslipSigmaHoldsItsModelErrorWhereThePlantNoiseAdapts) {
  // the simulator's gyro is calibrated (told so: the default's 0.3 deg/s took the NEES to 0.025)
  const auto patch = nlohmann::json::parse(R"({"filter": {"adaptive_plant_noise": {}}, "imu": {"gyro_bias_std": 0}})");
  auto sc = exp::load_vehicle_scenario(std::string(MBO_SOURCE_DIR) + "/scenarios/vehicle_circle_gnss_1m.json", &patch);
  sc.duration = 15;
  ASSERT_TRUE(sc.observer.adaptation.on);
  const auto rep = exp::run_vehicle_experiment(sc, {});
  const double nees = rep["consistency"]["output_nees"]["sideslip_deg"].get<double>();
  std::cout << "sideslip NEES " << nees << ", false-valid " << rep["false_valid"]["rate"]["sideslip"] << "\n";
  EXPECT_EQ(rep["false_valid"]["false_valid_steps"]["sideslip"].get<double>(), 0.0);
  EXPECT_GT(nees, 0.1);
  EXPECT_LT(nees, 2.0);
}

// A production bus's steering-wheel angle in 0.1 deg steps leaves the road wheels 0.0019 deg
// (1 sigma) off, an input error the covariance does not hold: with the adaptive plant noise the
// front tyre's Fy sigma was optimistic (NEES 3.0 over 3 seeds of the lane change) until the
// outputs' sigma took it in (OutputSigma's steering column). A sigma only: the estimates are
// the same to the bit.
TEST(VehicleObserver, TheSteeringWheelAnglesQuantumIsInTheFrontTyresSigma) {
  const auto patch = nlohmann::json::parse(R"({"filter": {"adaptive_plant_noise": {}}})");
  auto sc =
      exp::load_vehicle_scenario(std::string(MBO_SOURCE_DIR) + "/scenarios/production_double_lane_change.json", &patch);
  sc.duration = 10;
  sc.observer.validity.payload_std_kg = {0, 0};  // the truth is the vehicle file, load included
  ASSERT_GT(sc.observer.bus_inputs.steering.resolution, 0.0);  // from the bus's quantum
  const auto with = exp::run_vehicle_experiment(sc, {});
  sc.observer.bus_inputs.steering.resolution = 0;
  const auto without = exp::run_vehicle_experiment(sc, {});
  const double n1 = with["consistency"]["output_nees"]["tyre_fy_fl"].get<double>();
  const double n0 = without["consistency"]["output_nees"]["tyre_fy_fl"].get<double>();
  std::cout << "front tyre Fy NEES " << n0 << " -> " << n1 << "\n";
  EXPECT_GT(n0, 2.0);
  EXPECT_LT(n1, 2.0);
  EXPECT_GT(n1, 0.2);
  EXPECT_EQ(rmse(with, "observer", "tyre_fy_fl"), rmse(without, "observer", "tyre_fy_fl"));
}

// scenarios/patches/considered_gyro_bias.json: the z gyro's bias carried as an uncertainty the
// filter considers (Schmidt) and never learns, 0.3 deg/s, where the gyro is not calibrated.
// The lane change with a 0.57 deg/s bias: taken as calibrated the heading was flagged valid while 4
// sigma off on 27 % of the steps (yaw 1.2 deg RMSE); considered, on none, and the yaw error is
// a tenth (robustness suite, 60 s, 2 runs: yaw false-valid 24-57 % -> 0-3.6 % on the drives
// with a biased gyro).
TEST(VehicleObserver, AConsideredGyroBiasKeepsTheHeadingHonestWithoutLearningIt) {
  const std::string file = std::string(MBO_SOURCE_DIR) + "/scenarios/robustness/sedan_dlc_gyro_bias.json";
  std::ifstream in(std::string(MBO_SOURCE_DIR) + "/scenarios/patches/considered_gyro_bias.json");
  const auto patch = nlohmann::json::parse(in);
  const auto calibrated = nlohmann::json::parse(R"({"imu": {"gyro_bias_std": 0}})");  // taken as calibrated
  const auto shipped = exp::run_vehicle_experiment(exp::load_vehicle_scenario(file, &calibrated), {});
  const auto considered = exp::run_vehicle_experiment(exp::load_vehicle_scenario(file, &patch), {});
  const double fv0 = shipped["false_valid"]["rate"]["yaw"].get<double>();
  const double fv1 = considered["false_valid"]["rate"]["yaw"].get<double>();
  std::cout << "yaw false-valid " << fv0 << " -> " << fv1 << ", yaw RMSE " << rmse(shipped, "observer", "yaw") << " -> "
            << rmse(considered, "observer", "yaw") << " rad, heading valid on "
            << considered["false_valid"]["valid_share"]["yaw"] << " of the steps\n";
  EXPECT_GT(fv0, 0.1);
  EXPECT_EQ(fv1, 0.0);
  EXPECT_GT(considered["false_valid"]["valid_share"]["yaw"].get<double>(), 0.5);  // not by silence
  EXPECT_LT(rmse(considered, "observer", "yaw"), 0.3 * rmse(shipped, "observer", "yaw"));
  // considered, not learned: the bias stays at its start, its sigma at the prior's
  const auto& b = considered["calibration"]["gyro_bias_z"];
  EXPECT_EQ(b["value"].get<double>(), 0.0);
  EXPECT_NEAR(b["std"].get<double>(), 0.3 * M_PI / 180, 1e-6);
}

// The sensor parameters learn only from fixes good enough (gnss.learn_max_std): with the bound
// below the fixes' sigma the gyro bias and the wheel scales keep their start values exactly
// (Schmidt's consider update), and the run is still the observer's (position at GNSS level).
TEST(VehicleObserver, SensorParametersDoNotLearnFromFixesWorseThanTheBound) {
  auto sc = scenario("vehicle_double_lane_change.json", 4);
  sc.observer.imu.gyro_bias.on = true;
  sc.observer.wheels.scale.on = true;
  const auto learning = exp::run_vehicle_experiment(sc, {});
  sc.observer.gnss.learn_max_std = 0.5 * sc.observer.gnss.position_std;
  const auto held = exp::run_vehicle_experiment(sc, {});
  EXPECT_NE(learning["calibration"]["gyro_bias_z"]["value"].get<double>(), 0.0);
  EXPECT_NE(learning["calibration"]["wheel_scale_fl"]["value"].get<double>(), 1.0);
  EXPECT_EQ(held["calibration"]["gyro_bias_z"]["value"].get<double>(), 0.0);
  EXPECT_EQ(held["calibration"]["wheel_scale_fl"]["value"].get<double>(), 1.0);
  EXPECT_FALSE(held["calibration"]["gyro_bias_z"]["converged"].get<bool>());
  EXPECT_LT(rmse(held, "observer", "x"), 0.02);
}

TEST(VehicleObserver, AbsBrakingDoesNotTrustJacobiansThatJumpBetweenPeriods) {
  // ABS holds the tyres at their force peak, where dFx/dkappa swings from -230 to +3 1/s within
  // a lock/release cycle. Jacobians taken once every 50 steps then mislead the transition for
  // the period they cover: 0.12 m of x error in these 4 s when they are always used,
  // 0.025 m when a pair that moved by more than its own size is set aside.
  auto sc = scenario("vehicle_braking.json", 4);
  sc.observer.settings.jacobian_period = 50;
  const auto rep = exp::run_vehicle_experiment(sc, {});
  EXPECT_LT(rmse(rep, "observer", "x"), 0.04);
  EXPECT_EQ(rep["failures"]["resets"].get<int>(), 0);
}

TEST(VehicleObserver, RejectsAFiftyMetreGnssJumpAndKeepsItsPosition) {
  auto sc = scenario("vehicle_gnss_jump.json", 4);
  sc.sensors.jumps.at(0).from = 2.0;
  sc.sensors.jumps.at(0).to = 3.0;
  const auto rep = exp::run_vehicle_experiment(sc, {});
  const auto& j = rep["gnss_jumps"].at(0);
  // 1 s of 50 Hz fixes, every one (the one at 3.0 s may still carry the jump: float time)
  EXPECT_GE(j["gnss_position_rejected"].get<int>(), 50);
  EXPECT_LE(j["gnss_position_rejected"].get<int>(), 51);
  EXPECT_LT(j["max_position_error_m"].get<double>(), 0.1);
  EXPECT_EQ(rep["failures"]["resets"].get<int>(), 0);
}

TEST(VehicleObserver, BridgesAGnssOutageWithTheModelAndRecovers) {
  auto sc = scenario("vehicle_circle_gnss_outage.json", 9);
  sc.sensors.outages = {{3.0, 7.0}};  // 4 s at 12 m/s on a 40 m circle
  const auto rep = exp::run_vehicle_experiment(sc, {});
  const auto& o = rep["gnss_outages"].at(0);
  EXPECT_NEAR(o["distance_m"].get<double>(), 48.0, 1.0);
  // dead reckoning on the model, wheels and gyro: well under 1 % of the distance driven
  EXPECT_LT(o["error_percent_of_distance"].get<double>(), 1.0);
  EXPECT_GE(o["recovery_s"].get<double>(), 0.0);
  EXPECT_LT(o["recovery_s"].get<double>(), 1.0);
  EXPECT_EQ(rep["failures"]["resets"].get<int>(), 0);
}

// Runs the truth drive and feeds the observer, with `drop(m, t)` deciding which samples never
// arrive; returns the records.
template <class Drop>
std::vector<EstimateRecord> drive(const VehicleScenario& sc, Drop drop) {
  exp::TruthDrive truth(sc, 1);
  est::VehicleObserver obs(sc.model, sc.observer, sc.dt);
  obs.start(sc.manoeuvre.start, 0);
  std::vector<Measurement> meas;
  std::vector<EstimateRecord> out;
  while (!truth.done()) {
    meas.clear();
    truth.advance(meas);
    for (const auto& m : meas)
      if (!drop(m, truth.t())) obs.push(m);
    out.push_back(obs.step(truth.t()));
  }
  return out;
}

TEST(VehicleObserver, AGnssThatStopsTimesOutAndMakesTheEstimateInvalid) {
  auto sc = scenario("vehicle_circle_gnss_1m.json", 3);
  const auto gnss = [](const Measurement& m) {
    return m.channel >= Channel::gnss_lat && m.channel <= Channel::gnss_fix_quality;
  };
  const auto recs = drive(sc, [&](const Measurement& m, double t) { return t > 1.0 && gnss(m); });
  const auto gp = static_cast<std::size_t>(SensorKind::gnss_position);
  const double timeout = sc.observer.gnss.timeout_s;
  for (const auto& r : recs) {
    // after the start-up (the first fixes that settle the estimate), before the outage shows
    if (r.t > 0.2 && r.t < 1.0 + 0.5 * timeout) {
      EXPECT_FALSE(r.sensors[gp].timed_out) << "t = " << r.t;
      EXPECT_TRUE(r.validity.position) << "t = " << r.t;
      EXPECT_TRUE(r.valid) << "t = " << r.t;
    }
    if (r.t > 1.0 + timeout + 0.05) {
      EXPECT_TRUE(r.sensors[gp].timed_out) << "t = " << r.t;
      EXPECT_NE(r.faults & kFaultGnssTimeout, 0u) << "t = " << r.t;
      EXPECT_FALSE(r.valid) << "t = " << r.t;
      // dead reckoning: the position itself stays usable while its uncertainty is small
      EXPECT_TRUE(r.validity.position) << "t = " << r.t;
    }
  }
  // the model keeps running: the position uncertainty grows without the fixes
  EXPECT_GT(recs.back().std_x, recs[400].std_x);
}

TEST(VehicleObserver, WheelSensorsThatStopInvalidateTheVirtualSensors) {
  auto sc = scenario("vehicle_double_lane_change.json", 2);
  const auto recs = drive(sc, [](const Measurement& m, double t) {
    return t > 1.0 && m.channel >= Channel::wheel_count_fl && m.channel <= Channel::wheel_count_rr;
  });
  const auto wh = static_cast<std::size_t>(SensorKind::wheel_hall);
  ASSERT_TRUE(recs[450].validity.virtual_sensors);  // 0.9 s
  EXPECT_FALSE(recs[450].sensors[wh].timed_out);
  const auto& last = recs.back();
  EXPECT_TRUE(last.sensors[wh].timed_out);
  EXPECT_NE(last.faults & kFaultWheelTimeout, 0u);
  EXPECT_FALSE(last.validity.virtual_sensors);
  EXPECT_FALSE(last.valid);
}

TEST(VehicleObserver, SameSamplesGiveTheSameEstimatesBitForBit) {
  auto sc = scenario("vehicle_double_lane_change.json", 1);
  const auto a = drive(sc, [](const Measurement&, double) { return false; });
  const auto b = drive(sc, [](const Measurement&, double) { return false; });
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t k = 0; k < a.size(); ++k) {
    ASSERT_EQ(a[k].x, b[k].x) << k;
    ASSERT_EQ(a[k].sideslip_deg, b[k].sideslip_deg) << k;
    ASSERT_EQ(a[k].tyre_fz[0], b[k].tyre_fz[0]) << k;
  }
}

TEST(VehicleObserver, AdaptivePlantNoiseIsReadAndItsCoordinatesChecked) {
  auto j = observer_section("mbobserver.json");
  EXPECT_TRUE(read_observer(j).adaptation.on);  // on in the shipped file
  j["filter"]["adaptive_plant_noise"] = {{"enabled", false}};
  EXPECT_FALSE(read_observer(j).adaptation.on);
  j["filter"].erase("adaptive_plant_noise");
  EXPECT_FALSE(read_observer(j).adaptation.on);  // absent: off
  j["filter"]["adaptive_plant_noise"] = {{"min_scale", 0.001}};
  const auto c = read_observer(j);
  EXPECT_TRUE(c.adaptation.on);
  EXPECT_EQ(c.adaptation.min_scale, 0.001);
  // across the heading and yaw by default: x, y, yaw are the first three observed
  EXPECT_EQ(c.adaptation.x, 0);
  EXPECT_EQ(c.adaptation.y, 1);
  EXPECT_EQ(c.adaptation.yaw_index, 2);
  EXPECT_TRUE(c.adaptation.lateral && c.adaptation.yaw && !c.adaptation.longitudinal);
  j["filter"]["adaptive_plant_noise"]["axes"] = {"lateral", "roll"};
  try {
    read_observer(j);
    FAIL() << "an axis that is not one was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("/filter/adaptive_plant_noise/axes"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("roll"), std::string::npos) << e.what();
  }
  j["filter"]["adaptive_plant_noise"]["axes"] = {"yaw"};
  j["filter"]["observe"] = {"x", "y", "spin_fl", "spin_fr", "spin_rl", "spin_rr"};
  j["filter"]["plant_noise"].erase("yaw");
  j["filter"]["initial_std"].erase("yaw");
  j["filter"]["initial_std"].erase("yaw_dot");
  try {
    read_observer(j);
    FAIL() << "yaw's noise adapted while yaw is not observed";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("needs \"yaw\""), std::string::npos) << e.what();
  }
}

TEST(VehicleObserver, PayloadPriorAndTyreLoadAndForceBoundsAreReadAndChecked) {
  auto j = observer_section("mbobserver.json");
  const auto defaults = read_observer(j);
  EXPECT_EQ(defaults.validity.payload_std_kg, (std::array<double, 2>{40, 80}));
  EXPECT_EQ(defaults.validity.max_tyre_load_std, 125);
  EXPECT_EQ(defaults.validity.max_tyre_force_std, 125);
  EXPECT_EQ(defaults.validity.rear_slip_angle_rel_std, 0.2);
  EXPECT_EQ(defaults.validity.reset_window_s, 30);
  EXPECT_EQ(defaults.validity.payload_split_std_kg, 15);
  {
    auto k = j;
    k["validity"]["payload_split_std_kg"] = 0;  // none
    EXPECT_EQ(read_observer(k).validity.payload_split_std_kg, 0);
    k["validity"]["payload_split_std_kg"] = -5;
    try {
      read_observer(k);
      FAIL() << "a negative split sigma was accepted";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("/validity/payload_split_std_kg"), std::string::npos) << e.what();
    }
  }
  {
    auto k = j;
    k["validity"]["reset_window_s"] = 0;  // off
    EXPECT_EQ(read_observer(k).validity.reset_window_s, 0);
    k["validity"]["reset_window_s"] = -1;
    try {
      read_observer(k);
      FAIL() << "a negative reset window was accepted";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("/validity/reset_window_s"), std::string::npos) << e.what();
    }
  }
  j["validity"]["payload_std_kg"] = {0, 150};
  j["validity"]["max_tyre_load_std"] = 200;
  j["validity"]["max_tyre_force_std"] = 300;
  j["validity"]["rear_slip_angle_rel_std"] = 0.1;
  const auto c = read_observer(j);
  EXPECT_EQ(c.validity.max_tyre_force_std, 300);
  EXPECT_EQ(c.validity.rear_slip_angle_rel_std, 0.1);
  EXPECT_EQ(c.validity.payload_std_kg, (std::array<double, 2>{0, 150}));
  EXPECT_EQ(c.validity.max_tyre_load_std, 200);
  j["validity"]["payload_std_kg"] = {10};
  try {
    read_observer(j);
    FAIL() << "one payload sigma for two points was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("/validity/payload_std_kg"), std::string::npos) << e.what();
  }
  j["validity"]["payload_std_kg"] = {10, -1};
  EXPECT_THROW(read_observer(j), ConfigError);
  j["validity"]["payload_std_kg"] = {10, 10};
  j["validity"]["max_tyre_force_std"] = 0;  // no sigma is under it: a flag never set
  try {
    read_observer(j);
    FAIL() << "a zero force bound was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("/validity/max_tyre_force_std"), std::string::npos) << e.what();
  }
}

TEST(VehicleObserver, TheUnmodelledGyroBiasIsReadInDegreesPerSecondAndChecked) {
  auto j = observer_section("mbobserver.json");
  // an automotive MEMS gyro's turn-on bias unless told it is calibrated
  EXPECT_NEAR(read_observer(j).imu.gyro_bias_std, 0.3 * M_PI / 180, 1e-15);
  j["imu"]["gyro_bias_std"] = 0;
  EXPECT_EQ(read_observer(j).imu.gyro_bias_std, 0.0);
  j["imu"]["gyro_bias_std"] = 0.5;
  EXPECT_NEAR(read_observer(j).imu.gyro_bias_std, 0.5 * M_PI / 180, 1e-15);
  j["imu"]["gyro_bias_std"] = 11;
  try {
    read_observer(j);
    FAIL() << "a bias of 11 deg/s was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("/imu/gyro_bias_std"), std::string::npos) << e.what();
  }
}

TEST(VehicleObserver, TheRollingRadiusStdIsReadAsAFractionAndChecked) {
  auto j = observer_section("mbobserver.json");
  EXPECT_EQ(read_observer(j).validity.rolling_radius_rel_std, 0.005);  // tyres as their file, to 0.5 %
  j["validity"]["rolling_radius_rel_std"] = 0;
  EXPECT_EQ(read_observer(j).validity.rolling_radius_rel_std, 0.0);
  j["validity"]["rolling_radius_rel_std"] = 1;  // a percentage taken for a fraction
  try {
    read_observer(j);
    FAIL() << "a radius 100 % uncertain was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("/validity/rolling_radius_rel_std"), std::string::npos) << e.what();
  }
}

TEST(VehicleObserver, TheGyroScaleStdIsReadAsAFractionAndChecked) {
  auto j = observer_section("mbobserver.json");
  EXPECT_EQ(read_observer(j).imu.gyro_scale_std, 0.0);  // an exact scale unless told
  j["imu"]["gyro_scale_std"] = 0.005;
  EXPECT_EQ(read_observer(j).imu.gyro_scale_std, 0.005);
  j["imu"]["gyro_scale_std"] = 0.5;  // a percentage taken for a fraction
  try {
    read_observer(j);
    FAIL() << "a scale 50 % uncertain was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("/imu/gyro_scale_std"), std::string::npos) << e.what();
  }
}

TEST(VehicleObserver, CourseSideslipStdIsReadAndCheckedFromTheGnssSection) {
  // The course row's variance carries the model's sideslip error (docs/configuration.md).
  const auto base = observer_section("mbobserver.json");
  EXPECT_NEAR(read_observer(base).gnss.course_sideslip_std, M_PI / 180, 1e-15);  // the default: 1 deg
  auto j = base;
  j["gnss"]["course_sideslip_std"] = 0.005;
  EXPECT_EQ(read_observer(j).gnss.course_sideslip_std, 0.005);
  j["gnss"]["course_sideslip_std"] = -0.005;
  try {
    read_observer(j);
    FAIL() << "a negative standard deviation was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("/gnss/course_sideslip_std"), std::string::npos) << e.what();
  }
}

// A metre-class receiver: its error correlated over minutes is in the position's sigma, or
// in two Gauss-Markov error states; one or the other (docs/configuration.md).
TEST(VehicleObserver, TheReceiversCorrelatedErrorIsReadAsASigmaOrAsErrorStates) {
  const auto base = observer_section("mbobserver.json");
  EXPECT_EQ(read_observer(base).gnss.correlated_std, 0.0);
  EXPECT_EQ(read_observer(base).gnss.error_correlation_s, 0.0);
  auto j = base;
  j["gnss"]["correlated_std"] = 1.7;
  EXPECT_EQ(read_observer(j).gnss.correlated_std, 1.7);
  j["gnss"].erase("correlated_std");
  j["gnss"]["estimate_error"] = {{"std", 1.7}, {"correlation_s", 120}};
  const auto g = read_observer(j).gnss;
  EXPECT_EQ(g.error_std, 1.7);
  EXPECT_EQ(g.error_correlation_s, 120);
  EXPECT_NEAR(g.white_std, 0.17, 1e-15);  // the default: a tenth
  auto refused = [&](const nlohmann::json& section, const char* where) {
    try {
      read_observer(section);
      ADD_FAILURE() << "accepted: " << section["gnss"].dump();
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(where), std::string::npos) << e.what();
    }
  };
  j["gnss"]["correlated_std"] = 1.7;
  refused(j, "/gnss/estimate_error");
  j["gnss"].erase("correlated_std");
  j["gnss"]["estimate_error"].erase("correlation_s");
  refused(j, "missing required key \"correlation_s\"");
}

// The published position sigma holds the receiver's correlated error in quadrature.
TEST(VehicleObserver, TheReceiversCorrelatedErrorIsInThePositionsSigma) {
  EstimateRecord r;
  r.std_x = 0.2, r.std_y = 0.3, r.std_vx = r.std_vy = 0.01;
  est::SourcesState s;
  s.correlated_std = 1.7;
  est::inflate_uncertainty(s, r);
  EXPECT_NEAR(r.std_x, std::hypot(0.2, 1.7), 1e-12);
  EXPECT_NEAR(r.std_y, std::hypot(0.3, 1.7), 1e-12);
  EXPECT_EQ(r.std_vx, 0.01);
}

// The receiver's error as two Gauss-Markov states: a start at a fix is as uncertain as the
// receiver (the model placed 1.7 m off with a sigma of 5 cm was flagged valid), and the error
// states are the filter's, not calibration: not published.
TEST(VehicleObserver, AStartAtAFixIsAsUncertainAsTheReceiversErrorStatesSay) {
  auto sc = scenario("vehicle_double_lane_change.json", 1);
  sc.observer.gnss.error_std = 1.7;
  sc.observer.gnss.error_correlation_s = 120;
  sc.observer.gnss.white_std = 0.17;
  exp::TruthDrive truth(sc, 1);
  est::VehicleObserver obs(sc.model, sc.observer, sc.dt);
  ASSERT_EQ(obs.sensor_parameters().size(), 2u);
  EXPECT_FALSE(obs.sensor_parameters()[0].published);
  std::vector<Measurement> meas;
  EstimateRecord rec;
  int started = 0;
  while (!truth.done()) {  // from the first fix on (no start given)
    meas.clear();
    truth.advance(meas);
    for (const auto& m : meas) obs.push(m);
    rec = obs.step(truth.t());
    if (!obs.started()) continue;
    ++started;
    EXPECT_GT(rec.std_x, 1.0) << "t = " << rec.t;
    EXPECT_GT(rec.std_y, 1.0) << "t = " << rec.t;
    EXPECT_FALSE(rec.validity.position) << "t = " << rec.t;
  }
  EXPECT_GT(started, 400);
  for (const auto& c : rec.calibration) EXPECT_FALSE(c.estimated);
}

TEST(VehicleObserver, EstimatedInputsAreReadAndCheckedWithTheirPointers) {
  const auto base = observer_section("mbobserver.json");
  auto sc = scenario("vehicle_double_lane_change.json", 1);
  const auto c = read_observer(base);
  ASSERT_EQ(c.settings.estimated_inputs, std::vector<int>{sc.model->in.mu});
  EXPECT_EQ(c.settings.filter.input_rate_noise, std::vector<double>{1e-5});
  EXPECT_EQ(c.settings.filter.initial_std_p, std::vector<double>{0.01});
  EXPECT_EQ(c.settings.input_min, std::vector<double>{0.05});
  EXPECT_EQ(c.settings.input_max, std::vector<double>{1.5});
  auto fails_at = [&](const nlohmann::json& section, const std::string& where) {
    try {
      read_observer(section);
      ADD_FAILURE() << "accepted; expected an error at " << where;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(where), std::string::npos) << e.what();
    }
  };
  auto j = base;
  j["filter"]["force_error"]["estimate_inputs"]["wind_x"] = {{"plant_noise", 1}, {"initial_std", 1}};
  fails_at(j, "/filter/force_error/estimate_inputs: \"wind_x\" is not an input");
  j = base;
  j["filter"]["force_error"]["jacobian_period"] = 0;
  fails_at(j, "/filter/force_error/estimate_inputs: needs force_error.jacobian_period > 0");
  j = base;
  j["filter"]["force_error"]["estimate_inputs"]["mu"]["max"] = 0.9;  // the sedan's tyres: mu 1
  fails_at(j, "/filter/force_error/estimate_inputs/mu: the vehicle's tyre mu");
  j = base;
  j["filter"]["type"] = "errorEKF";  // read, but not used: the filter has no force error
  EXPECT_EQ(est::VehicleObserver(sc.model, read_observer(j), 0.002).observer().filter().size(), 14);
  j = base;
  j["filter"]["force_error"]["estimate_inputs"]["mu"]["min"] = 2.0;
  fails_at(j, "/filter/force_error/estimate_inputs/mu");
  j = base;
  j["filter"]["force_error"]["estimate_inputs"]["mu"].erase("initial_std");
  fails_at(j, "/filter/force_error/estimate_inputs/mu");
  j = base;
  j["filter"]["force_error"]["estimate_inputs"]["mu"]["typo"] = 1;
  fails_at(j, "typo");
}

// As shipped, and learning all it can: sensor parameters, an unmodelled gyro bias's sensitivity, the GNSS latency (its
// estimator's history and grid), payloads through the excitation gate (the consider updates) with their settled weight,
// a tyre scale only considered; on the production bus
// (its inputs, the steering's column of the outputs' sigma).
// The heavier car's lane change, learning the loads: its cornering from 2 s has the two learn
// along one direction (ErrorEkf::set_learning_along).
class StepAllocatesNothing : public ::testing::TestWithParam<std::pair<const char*, const char*>> {};

TEST_P(StepAllocatesNothing, OnceRunning) {
  const auto patch = nlohmann::json::parse(GetParam().second);
  auto sc = exp::load_vehicle_scenario(std::string(MBO_SOURCE_DIR) + "/scenarios/" + GetParam().first, &patch);
  sc.duration = std::string_view(GetParam().first).starts_with("robustness/") ? 4.0 : 1.5;
  exp::TruthDrive truth(sc, 1);
  est::VehicleObserver obs(sc.model, sc.observer, sc.dt);
  std::vector<Measurement> meas;
  meas.reserve(256);
  long allocations = 0, steps = 0;
  while (!truth.done()) {
    meas.clear();
    truth.advance(meas);
    // the first 0.5 s: start from the first fix, first use of every sensor
    const bool counted = truth.t() > 0.5;
    if (counted) mbo::test::alloc_count_start();
    for (const auto& m : meas) obs.push(m);
    obs.step(truth.t());
    if (counted) allocations += mbo::test::alloc_count_stop(), ++steps;
  }
  ASSERT_TRUE(obs.started());
  EXPECT_GT(steps, 400);
  EXPECT_EQ(allocations, 0) << "over " << steps << " steps";
}

INSTANTIATE_TEST_SUITE_P(
    VehicleObserver, StepAllocatesNothing,
    ::testing::Values(std::pair{"vehicle_double_lane_change.json", "{}"},
                      std::pair{"vehicle_double_lane_change.json",
                                R"({"imu": {"estimate_gyro_bias": {}}, "wheels": {"estimate_scale": {}},
                             "gnss": {"estimate_latency": {}}, "filter": {"force_error": {"settled_weight": true,
                             "estimate_inputs": {"payload_front": {"initial_std": 150, "plant_noise": 1},
                             "payload_rear": {"initial_std": 150, "plant_noise": 1},
                             "cornering_rear": {"initial_std": 0.1, "plant_noise": 1e-6, "learn": false}}}}})"},
                      std::pair{"vehicle_double_lane_change.json",
                                R"({"gnss": {"estimate_error": {"std": 1.7, "correlation_s": 120}}})"},
                      std::pair{
                          "vehicle_double_lane_change.json",
                          R"({"imu": {"gyro_bias_std": 0.3, "gyro_scale_std": 0.005}, "gnss": {"latency_std": 0.05},
                             "wheels": {"estimate_scale": {}}, "filter": {"force_error": {"estimate_inputs": {
                             "payload_front": {"initial_std": 150, "plant_noise": 1}}}}})"},
                      std::pair{"robustness/sedan_dlc_heavier.json",
                                R"({"filter": {"force_error": {"settled_weight": true, "estimate_inputs": {
                             "payload_front": {"initial_std": 100, "plant_noise": 0.01},
                             "payload_rear": {"initial_std": 100, "plant_noise": 0.01}}}}})"},
                      std::pair{"production_double_lane_change.json", "{}"}));

}  // namespace

TEST(VehicleObserver, TheOpenLoopIsNeverResetByItsGrowingCovariance) {
  // The open loop is the observer with nothing fused: its variances only grow (a wheel force
  // error's as t^5). With a low variance bound they pass it within the run; that must not be
  // taken for divergence and reset the model whose drift the report shows.
  auto sc = scenario("vehicle_double_lane_change.json", 4);
  ASSERT_EQ(sc.observer.filter_type, "errorEKF-FE");
  sc.observer.settings.filter.max_variance = 200;  // the open loop's spin variance reaches ~550 in 4 s
  const auto rep = exp::run_vehicle_experiment(sc, {});
  EXPECT_EQ(rep["failures"]["open_loop_resets"].get<int>(), 0);
  EXPECT_EQ(rep["failures"]["resets"].get<int>(), 0);  // the observer's stay bounded by its sensors
  EXPECT_GT(rmse(rep, "model", "x"), 0.05);  // and the open loop still drifts
}

TEST(VehicleObserver, AJumpOfTheTimeBaseRestartsFromTheFixesOfTheNewTime) {
  // The bundled drive; after 2 s its log's clock leaps 10 s forward while the data goes on.
  auto sc = scenario("vehicle_double_lane_change.json", 4);
  exp::TruthDrive truth(sc, 1);
  est::VehicleObserver obs(sc.model, sc.observer, sc.dt);
  obs.start(sc.manoeuvre.start, 0);
  std::vector<Measurement> meas;
  const double jump = 10.0;
  double shift = 0, worst_after = 0;
  int valid_after = 0, steps_after = 0;
  bool first_after = false;
  while (!truth.done()) {
    meas.clear();
    truth.advance(meas);
    if (shift == 0 && truth.t() > 2.0) {
      shift = jump;
      obs.resynchronise();
      first_after = true;
    }
    for (auto m : meas) {
      m.t += shift;
      obs.push(m);
    }
    const auto& r = obs.step(truth.t() + shift);
    if (first_after) {
      EXPECT_FALSE(r.valid);
      EXPECT_NE(r.faults & kFaultTimeJump, 0u);
      EXPECT_FALSE(obs.started());
      first_after = false;
    }
    if (shift > 0 && truth.t() > 2.5) {  // half a second after the jump
      ++steps_after;
      valid_after += r.valid;
      if (r.validity.position)
        worst_after =
            std::max(worst_after, std::hypot(r.x - truth.outputs().position.x(), r.y - truth.outputs().position.y()));
    }
  }
  EXPECT_EQ(obs.counters().time_jumps, 1u);
  EXPECT_GT(valid_after, 0.95 * steps_after) << "restarted from the fixes of the new time base";
  EXPECT_LT(worst_after, 0.1);
}

// A new start of the model keeps the loads the filter learned, as it keeps the sensors'
// parameters. Issue 18's combined drive with the loads learned and nothing else: its gyro bias,
// not learned here, resets the model twice in the first 12 s, then the time base jumps. Each
// new start used to begin again from the vehicle file's load (0 +- 150 kg at 12 s; 4 / 200 kg
// +- 77 kept now, truth 40 / 160).
TEST(VehicleObserver, ANewStartKeepsTheLoadsItLearned) {
  auto patch = nlohmann::json::parse(R"({"filter": {"force_error": {"estimate_inputs": {
      "payload_front": {"initial_std": 150, "plant_noise": 1},
      "payload_rear": {"initial_std": 150, "plant_noise": 1}}}}})");
  auto sc = exp::load_vehicle_scenario(std::string(MBO_SOURCE_DIR) + "/scenarios/robustness/sedan_mixed_combined.json",
                                       &patch);
  exp::TruthDrive truth(sc, 1);
  est::VehicleObserver obs(sc.model, sc.observer, sc.dt);
  obs.start(sc.manoeuvre.start, 0);
  constexpr std::size_t kFront = 11, kRear = 12;  // kCalibrationNames
  static_assert(kCalibrationNames[kFront] == "payload_front" && kCalibrationNames[kRear] == "payload_rear");
  std::vector<Measurement> meas;
  std::array<Calibration, kCalibrationCount> before{};
  double shift = 0;
  bool checked = false;
  while (!truth.done() && !checked) {
    meas.clear();
    truth.advance(meas);
    if (shift == 0 && truth.t() > 12.0) {  // the pull-away taught the loads
      EXPECT_GE(obs.counters().resets, 1u) << "the drive no longer resets: this checks the jump only";
      shift = 10.0;
      obs.resynchronise();
    }
    for (auto m : meas) {
      m.t += shift;
      obs.push(m);
    }
    const bool was = obs.started();
    const auto& r = obs.step(truth.t() + shift);
    if (shift == 0) before = r.calibration;
    if (shift > 0 && !was && obs.started()) {  // the restart from the first fix of the new time base
      checked = true;
      for (auto k : {kFront, kRear}) {
        ASSERT_TRUE(before[k].estimated && r.calibration[k].estimated);
        std::printf("%s %.2f +- %.2f kg kept\n", std::string(kCalibrationNames[k]).c_str(), before[k].value,
                    before[k].std);
        EXPECT_GT(std::abs(before[k].value), 1.0) << kCalibrationNames[k] << ": learned nothing to keep";
        EXPECT_LT(before[k].std, 0.9 * 150) << kCalibrationNames[k];
        EXPECT_DOUBLE_EQ(r.calibration[k].value, before[k].value) << kCalibrationNames[k];
        EXPECT_NEAR(r.calibration[k].std, before[k].std, 1e-9 * before[k].std) << kCalibrationNames[k];
      }
      EXPECT_NEAR(r.mass, obs.vehicle().params.total_mass() + before[kFront].value + before[kRear].value, 1e-9);
    }
  }
  EXPECT_TRUE(checked) << "the observer did not start again";
}

// A gyro z bias of 0.01 rad/s (0.57 deg/s, an uncalibrated MEMS part) on the bundled drive.
std::vector<EstimateRecord> biased_drive(const VehicleScenario& sc, est::VehicleObserver& obs, double duration,
                                         std::vector<double>* yaw_error) {
  exp::TruthDrive truth(sc, 1);
  obs.start(sc.manoeuvre.start, 0);
  std::vector<Measurement> meas;
  std::vector<EstimateRecord> out;
  while (!truth.done() && truth.t() < duration) {
    meas.clear();
    truth.advance(meas);
    for (auto m : meas) {
      if (m.channel == Channel::gyro_z) m.value += 0.01;
      obs.push(m);
    }
    out.push_back(obs.step(truth.t()));
    if (yaw_error) yaw_error->push_back(std::abs(est::wrap_angle(out.back().yaw - truth.outputs().yaw)));
  }
  return out;
}

// A car standing cannot yaw (StandstillAiding): while its wheels stand still, a zero-rate row
// holds the model's heading and the gyro, which then reads its bias and nothing else, is left
// out where the bias is not learned (the shipped default: considered, gyro_bias_std). On the
// mixed drive's first stop (21-27 s) with a 0.57 deg/s gyro bias the heading's error grew 2.3
// deg in 4 s with the model following the gyro; it holds now (the fixes through the antenna's
// lever arm even take a little of it back).
TEST(VehicleObserver, ACarStandingStillHoldsItsHeadingWhateverItsGyrosBias) {
  auto run = [](bool standstill, std::uint64_t* fused) {
    auto sc =
        exp::load_vehicle_scenario(std::string(MBO_SOURCE_DIR) + "/scenarios/robustness/sedan_mixed_baseline.json");
    sc.duration = 30;
    sc.observer.standstill.use = standstill;
    est::VehicleObserver obs(sc.model, sc.observer, sc.dt);
    std::vector<double> yaw_error;
    const auto recs = biased_drive(sc, obs, 30, &yaw_error);
    *fused = recs.back().sensors[static_cast<std::size_t>(SensorKind::standstill)].fused;
    auto error_at = [&](double t) { return yaw_error[static_cast<std::size_t>(std::lround(t / sc.dt)) - 1]; };
    return error_at(26.5) - error_at(22.5);  // how much the heading's error grew over the stop
  };
  std::uint64_t fused_off = 0, fused_on = 0;
  const double grew_off = run(false, &fused_off), grew_on = run(true, &fused_on);
  EXPECT_EQ(fused_off, 0u);
  ASSERT_GT(grew_off, 1.0 * M_PI / 180) << "the model no longer follows the gyro at rest: this checks nothing";
  EXPECT_GT(fused_on, 2000u) << "4.5 s of rows at 500 Hz";
  EXPECT_LT(grew_on, 0.001 * M_PI / 180);
  std::cout << "heading error grew over the stop by " << grew_off * 180 / M_PI << " -> " << grew_on * 180 / M_PI
            << " deg, " << fused_on << " zero-rate rows\n";
}

TEST(VehicleObserver, LearnsAGyroBiasAndARestartWithItIsConvergedAtOnce) {
  auto sc = scenario("vehicle_double_lane_change.json", 8);
  sc.observer.imu.gyro_bias = {true, 0.5 * M_PI / 180, 3e-9, -5 * M_PI / 180, 5 * M_PI / 180};
  auto rms_between = [](const std::vector<double>& e, double from, double to) {
    double s = 0;
    int n = 0;
    for (std::size_t i = 0; i < e.size(); ++i) {
      const double t = 0.002 * static_cast<double>(i + 1);
      if (t >= from && t <= to) s += e[i] * e[i], ++n;
    }
    return std::sqrt(s / n);
  };
  est::VehicleObserver cold(sc.model, sc.observer, sc.dt);
  std::vector<double> cold_yaw;
  const auto first = biased_drive(sc, cold, 8, &cold_yaw);
  const auto& learned = first.back().calibration[2];  // gyro_bias_z
  ASSERT_TRUE(learned.estimated);
  EXPECT_NEAR(learned.value, 0.01, 0.02 * M_PI / 180) << "within 0.02 deg/s";
  EXPECT_TRUE(learned.converged);
  // the next start from what was learned (as the daemon restores its calibration file)
  est::VehicleObserver warm(sc.model, sc.observer, sc.dt);
  ASSERT_TRUE(warm.restore_parameter("gyro_bias_z", learned.value, learned.std, 0));
  std::vector<double> warm_yaw;
  biased_drive(sc, warm, 5, &warm_yaw);
  // the converged filter: one that knows the bias to a thousandth of a degree per second
  est::VehicleObserver known(sc.model, sc.observer, sc.dt);
  ASSERT_TRUE(known.restore_parameter("gyro_bias_z", 0.01, 1e-3 * M_PI / 180, 0));
  std::vector<double> known_yaw;
  biased_drive(sc, known, 5, &known_yaw);
  const double cold_early = rms_between(cold_yaw, 1, 5), warm_early = rms_between(warm_yaw, 1, 5);
  const double converged = rms_between(known_yaw, 1, 5);
  std::printf("yaw RMS 1-5 s: cold %.2e, warm %.2e, converged %.2e rad; learned bias %.6f rad/s\n", cold_early,
              warm_early, converged, learned.value);
  // from 1 s to 5 s of the lane change the warm start is as good as the converged filter, the
  // cold one is not
  EXPECT_LT(warm_early, 1.2 * converged) << "cold " << cold_early << " converged " << converged;
  EXPECT_GT(cold_early, 2 * warm_early);
}

// ABS braking on a production bus (issue 20): the master pressure carries no per-wheel
// modulation, so the observer runs the car's ABS on its own wheels (brakes.abs) and, while that
// model limits a wheel, fuses the accelerometers into the chassis's longitudinal force error
// (brakes.abs_force_error). Each step of the chain must pay: the wheels stop locking, and the
// position comes within 1.5x of the Hall-count bus's figure (0.0046 m, 3 seeds; README).
TEST(VehicleObserver, ProductionBusAbsBrakingRunsTheCarsAbsOnTheModelAndMeasuresItsForce) {
  auto sc = scenario("production_braking.json", 6);
  ASSERT_GT(sc.observer.bus_inputs.brakes.abs_force_error, 0);
  const auto full = exp::run_vehicle_experiment(sc, {});
  sc.observer.bus_inputs.brakes.abs_force_error = 0;
  sc.observer.imu.use_accel = false;  // nothing measures the (then constant) force error on x
  const auto no_force_error = exp::run_vehicle_experiment(sc, {});
  sc.observer.bus_inputs.brakes.abs = false;
  const auto no_abs = exp::run_vehicle_experiment(sc, {});
  // the accelerometers are fused while the ABS acts (about 2.5 s of the 6 at 500 Hz), not before
  const double accel = full["sensors"]["accel"]["fused"].get<double>();
  EXPECT_GT(accel, 500.0);
  EXPECT_LT(accel, 0.6 * full["steps"].get<double>() * 2);  // two axes
  EXPECT_EQ(no_force_error["sensors"]["accel"]["fused"].get<double>(), 0.0);
  // without the ABS model the model's wheels lock: their speeds are far off
  EXPECT_LT(rmse(no_force_error, "observer", "wheel_speed_fl"), 0.5 * rmse(no_abs, "observer", "wheel_speed_fl"));
  EXPECT_LT(rmse(no_force_error, "observer", "sideslip_deg"), 0.7 * rmse(no_abs, "observer", "sideslip_deg"));
  // the accelerometers measure the ABS model's force error
  EXPECT_LT(rmse(full, "observer", "vx"), 0.85 * rmse(no_force_error, "observer", "vx"));
  EXPECT_LT(rmse(full, "observer", "x"), 1.5 * 0.0046);
  std::cout << "production ABS braking x " << rmse(no_abs, "observer", "x") << " -> "
            << rmse(no_force_error, "observer", "x") << " (ABS model) -> " << rmse(full, "observer", "x")
            << " m (and its force error)\n";
}

TEST(VehicleObserver, AbsForceErrorNeedsAForceErrorOnX) {
  const auto base = observer_section("production_example.json");
  EXPECT_EQ(read_observer(base).bus_inputs.brakes.abs_force_error, 10);
  auto j = base;
  j["filter"]["force_error"]["plant_noise"].erase("x");
  j["filter"]["force_error"]["initial_std"].erase("x");
  try {
    read_observer(j);
    FAIL() << "accepted abs_force_error without a force error on x";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("/brakes: abs_force_error needs"), std::string::npos) << e.what();
  }
  j["brakes"]["abs_force_error"] = 0;
  EXPECT_NO_THROW(read_observer(j));
}

// The tyres' stiffness as estimated model parameters (issue 18): on a car whose tyres are 10 %
// less stiff than its file says, the cornering scale of each axle is learned from the lane
// change itself, and the lateral virtual sensors follow; without it the observer's sideslip and
// tyre Fy are no better than the open loop's.
TEST(VehicleObserver, LearnsEachAxlesCorneringStiffnessAndWithItTheLateralForces) {
  auto sc = exp::load_vehicle_scenario(std::string(MBO_SOURCE_DIR) + "/tests/estimation/dlc_tyres_minus10pct.json");
  const auto fixed = exp::run_vehicle_experiment(sc, {});
  const auto json_patch = nlohmann::json::parse(R"({"filter": {"force_error": {"estimate_inputs": {
      "cornering_front": {"plant_noise": 1e-6, "initial_std": 0.1},
      "cornering_rear": {"plant_noise": 1e-6, "initial_std": 0.1},
      "slip_stiffness": {"plant_noise": 1e-6, "initial_std": 0.1}}}}})");
  sc = exp::load_vehicle_scenario(std::string(MBO_SOURCE_DIR) + "/tests/estimation/dlc_tyres_minus10pct.json",
                                  &json_patch);
  const auto learned = exp::run_vehicle_experiment(sc, {});
  const auto& cal = learned["calibration"];
  for (const char* axle : {"cornering_front", "cornering_rear"}) {
    EXPECT_NEAR(cal[axle]["value"].get<double>(), 0.9, 0.03) << axle;
    EXPECT_LT(cal[axle]["std"].get<double>(), 0.05) << axle;
  }
  EXPECT_LT(std::abs(cal["slip_stiffness"]["value"].get<double>() - 0.9), 0.1);
  for (const char* k : {"cornering_front", "cornering_rear", "slip_stiffness"})
    EXPECT_NEAR(cal[k]["truth"].get<double>(), 0.9, 1e-12) << k;  // the report's truth
  EXPECT_LT(rmse(learned, "observer", "sideslip_deg"), 0.5 * rmse(fixed, "observer", "sideslip_deg"));
  EXPECT_LT(rmse(learned, "observer", "tyre_fy_fl"), 0.5 * rmse(fixed, "observer", "tyre_fy_fl"));
  EXPECT_LT(rmse(learned, "observer", "tyre_fy_fl"), rmse(learned, "model", "tyre_fy_fl"));
  std::cout << "cornering " << cal["cornering_front"]["value"] << " / " << cal["cornering_rear"]["value"] << ", slip "
            << cal["slip_stiffness"]["value"] << "; sideslip " << rmse(fixed, "observer", "sideslip_deg") << " -> "
            << rmse(learned, "observer", "sideslip_deg") << " deg, Fy FL " << rmse(fixed, "observer", "tyre_fy_fl")
            << " -> " << rmse(learned, "observer", "tyre_fy_fl") << " N\n";
}

// Cornering shows the car's mass (m a_y is the tyres' sum of Fy) but not where it sits: there
// the two loads learn only together, as a mass at the model's CG loads their points. The lane
// change never brakes nor drives hard, so before they learned nothing on it. On the car 200 kg
// heavier at its CG, with the learned-car patch, they learn part of the mass in the 8 s, with
// the CG's split (0.88 of it on the front point), and the front tyre's load follows.
TEST(VehicleObserver, CorneringTeachesTheLoadsTheirSumAtTheModelsCg) {
  const std::string file = std::string(MBO_SOURCE_DIR) + "/scenarios/robustness/sedan_dlc_heavier.json";
  std::ifstream in(std::string(MBO_SOURCE_DIR) + "/scenarios/patches/self_calibration_learned_car.json");
  const auto patch = nlohmann::json::parse(in);
  auto sc = exp::load_vehicle_scenario(file, &patch);
  const auto learned = exp::run_vehicle_experiment(sc, {});
  const auto& cal = learned["calibration"];
  const double front = cal["payload_front"]["value"].get<double>(), rear = cal["payload_rear"]["value"].get<double>();
  EXPECT_GT(front + rear, 50) << "of the truth's 200 kg";
  EXPECT_LT(front + rear, 250);
  const auto& p = sc.model->params;
  const double share = (p.cg_m.x() - p.payload_rear().x()) / (p.payload_front().x() - p.payload_rear().x());
  EXPECT_NEAR(front / (front + rear), share, 0.02) << "the split held at the model's CG";
  EXPECT_LT(rmse(learned, "observer", "tyre_fz_fl"), 0.8 * rmse(learned, "model", "tyre_fz_fl"));
  EXPECT_LT(rmse(learned, "observer", "tyre_fy_fl"), 0.8 * rmse(learned, "model", "tyre_fy_fl"));
  std::cout << "loads " << front << " / " << rear << " kg (truth " << cal["payload_front"]["truth"] << " / "
            << cal["payload_rear"]["truth"] << "), Fz FL " << rmse(learned, "model", "tyre_fz_fl") << " -> "
            << rmse(learned, "observer", "tyre_fz_fl") << " N, Fy FL " << rmse(learned, "model", "tyre_fy_fl") << " -> "
            << rmse(learned, "observer", "tyre_fy_fl") << " N\n";
}

// The loads' split between the front and rear points is learned less exactly than the filter
// believes (issue 18's drive: +22 / -12 kg off with a sigma of 8.3 / 4.5 kg, NEES 6.5 / 9.1), so
// the published payloads carry a model error along (1, -1) (validity.payload_split_std_kg,
// output_sigma.hpp): each payload's variance grows by its square (their sum's does not: the
// loads and travels take the same covariance), and no estimate moves.
TEST(VehicleObserver, TheLoadsSplitModelErrorIsInThePublishedSigmaAndNotInTheEstimates) {
  const std::string file = std::string(MBO_SOURCE_DIR) + "/scenarios/robustness/sedan_dlc_heavier.json";
  std::ifstream in(std::string(MBO_SOURCE_DIR) + "/scenarios/patches/self_calibration_learned_car.json");
  const auto patch = nlohmann::json::parse(in);
  auto sc = exp::load_vehicle_scenario(file, &patch);
  sc.observer.validity.payload_split_std_kg = 0;
  const auto without = exp::run_vehicle_experiment(sc, {});
  sc.observer.validity.payload_split_std_kg = 15;
  const auto with = exp::run_vehicle_experiment(sc, {});
  for (const char* p : {"payload_front", "payload_rear"}) {
    const auto &a = without.at("calibration").at(p), &b = with.at("calibration").at(p);
    EXPECT_EQ(a.at("value").get<double>(), b.at("value").get<double>()) << p;
    const double sa = a.at("std").get<double>(), sb = b.at("std").get<double>();
    EXPECT_NEAR(sb * sb - sa * sa, 15.0 * 15.0, 1e-6 * sb * sb) << p;
  }
  for (const char* q : {"x", "vx", "sideslip_deg", "tyre_fz_fl", "tyre_fy_fl", "travel_fl"})
    EXPECT_EQ(rmse(without, "observer", q), rmse(with, "observer", q)) << q;
  std::cout << "payload sigma " << without.at("calibration").at("payload_front").at("std") << " / "
            << without.at("calibration").at("payload_rear").at("std") << " -> "
            << with.at("calibration").at("payload_front").at("std") << " / "
            << with.at("calibration").at("payload_rear").at("std") << " kg\n";
}

// The same tyres, 10 % softer than the file, with the scales only considered ("learn": false):
// they stay the file's, their sigma does not collapse, and the filter's gains and the
// published sigma hold what they may be (the sideslip's NEES falls).
TEST(VehicleObserver, ConsideredTyreScalesStayTheFilesAndWidenTheSideslipsSigma) {
  const std::string file = std::string(MBO_SOURCE_DIR) + "/tests/estimation/dlc_tyres_minus10pct.json";
  auto sc = exp::load_vehicle_scenario(file);
  const auto fixed = exp::run_vehicle_experiment(sc, {});
  const auto json_patch = nlohmann::json::parse(R"({"filter": {"force_error": {"estimate_inputs": {
      "cornering_front": {"plant_noise": 1e-6, "initial_std": 0.1, "learn": false},
      "cornering_rear": {"plant_noise": 1e-6, "initial_std": 0.1, "learn": false},
      "slip_stiffness": {"plant_noise": 1e-6, "initial_std": 0.1, "learn": false}}}}})");
  sc = exp::load_vehicle_scenario(file, &json_patch);
  const auto considered = exp::run_vehicle_experiment(sc, {});
  const auto& cal = considered["calibration"];
  for (const char* k : {"cornering_front", "cornering_rear", "slip_stiffness"}) {
    EXPECT_EQ(cal[k]["value"].get<double>(), 1.0) << k;
    EXPECT_GT(cal[k]["std"].get<double>(), 0.09) << k;
  }
  const auto nees = [](const nlohmann::json& r) {
    return r["consistency"]["output_nees"]["sideslip_deg"].get<double>();
  };
  std::cout << "sideslip NEES " << nees(fixed) << " -> " << nees(considered) << ", RMSE "
            << rmse(fixed, "observer", "sideslip_deg") << " -> " << rmse(considered, "observer", "sideslip_deg")
            << " deg\n";
  EXPECT_LT(nees(considered), 0.5 * nees(fixed));
}

// A receiver at 10 Hz whose fixes reach the bus 0.1 s after their epoch (issue 18), on the lane
// change at 80 km/h, started from the fixes as the daemon starts. Taken as now, a fix is 2.2 m
// behind: position metres off and resets. Fused at its own time (latency_s), the latency costs
// centimetres and nothing is valid that is wrong. Learned (estimate_latency) from the first
// turn of the lane change: before it the start's position is uncertain along the track by
// v sigma_tau and says so (not valid), after it the latency is within its sigma of 0.1 s and
// the position within centimetres.
TEST(VehicleObserver, GnssFixesAreFusedAtTheirOwnTimeAndTheirLatencyLearned) {
  const std::string file = std::string(MBO_SOURCE_DIR) + "/tests/estimation/dlc_gnss_latency.json";
  auto run = [&](const char* patch, double metrics_from) {
    const auto j = nlohmann::json::parse(patch);
    auto sc = exp::load_vehicle_scenario(file, &j);
    sc.metrics_from = metrics_from;
    return exp::run_vehicle_experiment(sc, {.seed = 2});
  };
  const auto taken_as_now = run(R"({})", 0.5);
  const auto configured = run(R"({"gnss": {"latency_s": 0.1}})", 0.5);
  // The matched car's misfits are the receiver's white noise: counted as such from the first
  // sample (early_correlation_s 0), the latency is learned within the 8-s lane change.
  const auto learned = run(R"({"gnss": {"estimate_latency": {"early_correlation_s": 0}}})", 3.0);
  EXPECT_GT(rmse(taken_as_now, "observer", "x"), 1.0);
  EXPECT_LT(rmse(configured, "observer", "x"), 0.02);
  EXPECT_EQ(configured["false_valid"]["rate"]["position"].get<double>(), 0.0);
  EXPECT_EQ(configured["failures"]["resets"].get<double>(), 0.0);
  const auto& lat = learned["calibration"]["gnss_latency"];
  EXPECT_NEAR(lat["value"].get<double>(), 0.1, 3 * lat["std"].get<double>());
  EXPECT_LT(lat["std"].get<double>(), 0.01);
  EXPECT_LT(rmse(learned, "observer", "x"), 0.1);
  EXPECT_EQ(learned["failures"]["resets"].get<double>(), 0.0);
  EXPECT_LT(learned["false_valid"]["rate"]["position"].get<double>(), 0.01);
  std::cout << "x RMSE: taken as now " << rmse(taken_as_now, "observer", "x") << " m, configured "
            << rmse(configured, "observer", "x") << " m, learned (from 3 s) " << rmse(learned, "observer", "x")
            << " m; latency " << lat["value"] << " +- " << lat["std"] << " s\n";
}

// Issue 18's combined drive (a heavier car on softer tyres, a gyro bias of 0.5 deg/s not yet
// learned, a receiver 0.1 s late): in its first lane change the model's own errors across the
// path last for seconds, and counted as the receiver's white noise they made the latency
// 0.000 +- 0.0044 s (seed 1, 12.6 s in), sure enough for the wheel scales to learn from fixes
// fused 0.1 s off. Until the misfits' batch means can tell how long they last, they are taken
// to last a second (gnss.estimate_latency.early_correlation_s): the latency's sigma holds its
// error from the first fix on, and the learning waits.
TEST(VehicleObserver, TheLatencyIsNotSureOfItselfBeforeItsMisfitsShowHowLongTheyLast) {
  const std::string file = std::string(MBO_SOURCE_DIR) + "/scenarios/robustness/sedan_mixed_combined.json";
  auto worst = [&](const nlohmann::json& patch) {
    auto sc = exp::load_vehicle_scenario(file, &patch);
    sc.duration = 20;
    const auto recs = drive(sc, [](const Measurement&, double) { return false; });
    const auto k = calibration_index("gnss_latency");
    double z = 0;  // the largest |latency - truth| / sigma
    for (const auto& r : recs)
      if (r.calibration[k].estimated && r.calibration[k].std > 0)
        z = std::max(z, std::abs(r.calibration[k].value - 0.1) / r.calibration[k].std);
    return z;
  };
  // the observer patch: the self-calibration patch with the latency learned
  const auto lasting = nlohmann::json::parse(R"({"imu": {"estimate_gyro_bias": {}},
                                                 "wheels": {"estimate_scale": {}, "scale_release": {"enabled": false}},
                                                 "gnss": {"estimate_latency": {}}})");
  auto independent = lasting;
  independent["gnss"]["estimate_latency"]["early_correlation_s"] = 0;
  const double z_independent = worst(independent), z_lasting = worst(lasting);
  std::cout << "largest |latency error| / sigma over 20 s: misfits independent " << z_independent
            << ", lasting a second " << z_lasting << "\n";
  EXPECT_GT(z_independent, 10.0) << "the drive no longer fools the latency: this checks nothing";
  EXPECT_LT(z_lasting, 4.0);
}

// The mixed drive's car park at 285 s: the steering angle moved faster than a steering can
// (held for 0.18 s as implausible), then came back 0.64 rad from the held one, and the model
// took it in one step. Its Newton iteration failed (the open loop's too) and the filter was
// reset: from the failed Newton's state (107 deg off in heading, moving forward) until the
// reset took the last step's outputs, and even then twice in the seconds that followed. The
// model's wheels now turn no faster than max_steer_rate: no failed step. One reset is left, at
// 288.9 s: on the held angle the model came to rest 0.14 m off and the fixes were rejected
// until the filter reset to them.
TEST(VehicleObserver, TheCarParkAfterAHeldSteeringAngleRunsWithoutAFailedStep) {
  MBO_LONG_DRIVE_TEST();
  const std::string file = std::string(MBO_SOURCE_DIR) + "/scenarios/robustness/sedan_mixed_baseline.json";
  const auto j = nlohmann::json::parse(R"({"gnss": {"estimate_latency": {}}})");
  auto sc = exp::load_vehicle_scenario(file, &j);
  sc.sensors.gnss_rate_hz = 10;
  sc.sensors.gnss_timing.latency_s = 0.1;
  sc.duration = 290;
  sc.metrics_from = 284;
  const auto rep = exp::run_vehicle_experiment(sc, {.seed = 1});
  EXPECT_EQ(rep["failures"]["model_step_failures"].get<double>(), 0.0);
  EXPECT_EQ(rep["failures"]["open_loop_model_step_failures"].get<double>(), 0.0);
  EXPECT_LE(rep["failures"]["resets"].get<double>(), 1.0);
  EXPECT_LT(rep["max_abs"]["observer"]["x"].get<double>(), 0.3);
  EXPECT_LT(rep["max_abs"]["observer"]["y"].get<double>(), 0.3);
}

// A model that cannot hold its sources is not valid, whatever the vote among them says. Issue
// 18's combined drive as shipped (nothing learned: gyro biases of 0.5 deg/s, a receiver 0.1 s
// late, a heavier car on softer tyres): the fixes are rejected, the model is reset to them and
// they are rejected again, every few seconds. Between the resets the motion sources agreed with
// the model, so the rejected fixes read as the receiver's fault and the position was valid
// while metres off (seed 1, 40 s: up to 1.4 m; 4 sigma off on 5.3 % of the steps before the
// position's sigma held the antenna's lever arm turned by the heading's, 0.06 % since).
TEST(VehicleObserver, ASecondForcedResetSoonAfterTheFirstLeavesOnlyTheAttitudeValid) {
  MBO_LONG_DRIVE_TEST();
  const std::string file = std::string(MBO_SOURCE_DIR) + "/scenarios/robustness/sedan_mixed_combined.json";
  auto run = [&](const char* patch) {
    const auto j = nlohmann::json::parse(patch);
    auto sc = exp::load_vehicle_scenario(file, &j);
    sc.duration = 40;
    sc.metrics_from = 10;
    return exp::run_vehicle_experiment(sc, {.seed = 1});
  };
  const auto without = run(R"({"validity": {"reset_window_s": 0}})");
  const auto with = run(R"({})");
  ASSERT_GE(with["failures"]["resets"].get<double>(), 2.0) << "the drive no longer resets: it checks nothing";
  EXPECT_EQ(rmse(with, "observer", "x"), rmse(without, "observer", "x")) << "validity changes no estimate";
  const auto& fv_without = without["false_valid"]["rate"];
  const auto& fv_with = with["false_valid"]["rate"];
  EXPECT_GT(without["false_valid"]["largest_valid_error"]["position"].get<double>(), 1.0);
  EXPECT_EQ(with["false_valid"]["largest_valid_error"]["position"].get<double>(), 0.0) << "never valid in the window";
  for (const char* q : {"position", "yaw", "velocity", "sideslip"}) EXPECT_EQ(fv_with[q].get<double>(), 0.0) << q;
  std::cout << "position flagged valid while 4 sigma off: " << fv_without["position"] << " without, "
            << fv_with["position"] << " with the reset window; resets " << with["failures"]["resets"] << "\n";
}

namespace {

// A robustness-suite scenario run once (seed 1) with an observer patch, cut to `duration` s if > 0.
nlohmann::json run_robustness(const std::string& name, const nlohmann::json& patch, double duration = 0) {
  auto sc = exp::load_vehicle_scenario(std::string(MBO_SOURCE_DIR) + "/scenarios/robustness/" + name + ".json", &patch);
  if (duration > 0) sc.duration = duration;
  return exp::run_vehicle_experiment(sc, {.seed = 1});
}

nlohmann::json patch_file(const std::string& name) {
  std::ifstream in(std::string(MBO_SOURCE_DIR) + "/scenarios/patches/" + name);
  return nlohmann::json::parse(in);
}

// The simulator's gyro and receiver are what the file says (no turn-on bias, fixes on time), so
// that a test of one sigma term sees that term alone; merged into `patch`.
nlohmann::json calibrated_sensors(nlohmann::json patch = nlohmann::json::object()) {
  patch["imu"]["gyro_bias_std"] = 0;
  patch["gnss"]["latency_std"] = 0;
  return patch;
}

// A consider term changes the published sigmas only: the two runs' estimates are the same.
void expect_same_estimates(const nlohmann::json& with, const nlohmann::json& without,
                           std::initializer_list<const char*> quantities = {"x", "y", "yaw", "vx", "vy", "sideslip_deg",
                                                                            "tyre_fy_fl"}) {
  for (const char* q : quantities) EXPECT_EQ(rmse(with, "observer", q), rmse(without, "observer", q)) << q;
}

}  // namespace

// The robustness suite's wheel scales are held until the fixes show that the tyres are not the
// file's (scale_release.hpp). On the matched lane change they stay held (published as
// unlearned: their prior's sigma, not converged) and cost nothing against scales not estimated;
// learned from the start they cost its speed 25 % (seed 1: vx 0.0067 -> 0.0083 m/s). On
// tyres 1 % small the test releases them (at 3.4 s) and the rest of the drive learns them to
// 0.01 % of the truth's (1.01037 against 1.01029, seed 1).
TEST(VehicleObserver, HeldWheelScalesAreReleasedOnlyWhereTheFixesShowTheTyresAreNotTheFiles) {
  const auto held = run_robustness("sedan_dlc_baseline", nlohmann::json::object());
  EXPECT_EQ(held["failures"]["wheel_scale_releases"].get<double>(), 0.0);
  for (const char* w : {"wheel_scale_fl", "wheel_scale_fr", "wheel_scale_rl", "wheel_scale_rr"}) {
    EXPECT_FALSE(held["calibration"][w]["converged"].get<bool>()) << w;
    EXPECT_EQ(held["calibration"][w]["std"].get<double>(), 0.02) << w;
  }
  const auto fixed = run_robustness("sedan_dlc_baseline", nlohmann::json::parse(R"({"wheels": {
      "estimate_scale": {"enabled": false}, "scale_release": {"enabled": false}}})"));
  const auto learned = run_robustness("sedan_dlc_baseline",
                                      nlohmann::json::parse(R"({"wheels": {"scale_release": {"enabled": false}}})"));
  for (const char* q : {"x", "vx"}) {
    EXPECT_LT(rmse(held, "observer", q), 1.05 * rmse(fixed, "observer", q)) << q;
    EXPECT_GT(rmse(learned, "observer", q), 1.1 * rmse(fixed, "observer", q)) << q << ": learning costs nothing now";
  }
  const auto small = run_robustness("sedan_dlc_radius_minus1pct", nlohmann::json::object());
  ASSERT_EQ(small["failures"]["wheel_scale_releases"].get<double>(), 1.0);
  // Released, the scales take what the held radius did to the model (estimate_held_radius): the
  // next fix corrects the position and the scales at once. Merely reopened, the model stayed
  // 0.4 m off and sure of it, the fixes rejected until a forced reset 1.4 s later (x 0.27 m).
  EXPECT_EQ(small["failures"]["resets"].get<double>(), 0.0);
  EXPECT_LT(rmse(small, "observer", "x"), 0.2);
  for (const char* w : {"wheel_scale_fl", "wheel_scale_fr", "wheel_scale_rl", "wheel_scale_rr"}) {
    // learned in the 4.5 s the drive has left after the release (the last wheel's sigma 0.16 %,
    // the converged flag's 0.15 % not yet reached)
    const auto& c = small["calibration"][w];
    EXPECT_NEAR(c["value"].get<double>(), c["truth"].get<double>(), 0.001) << w;
    EXPECT_LT(c["std"].get<double>(), 0.002) << w;
  }
  std::cout << "matched vx " << rmse(held, "observer", "vx") << " (scales fixed " << rmse(fixed, "observer", "vx")
            << ", learned from the start " << rmse(learned, "observer", "vx") << ") m/s; 1 % small: scale fl "
            << small["calibration"]["wheel_scale_fl"]["value"] << " (truth "
            << small["calibration"]["wheel_scale_fl"]["truth"] << ")\n";
}

// The combined drive as shipped (gyro biases and the receiver's latency neither learned nor
// configured) is reset by its fixes at 4.6 s and 8.3 s and releases its held scales at 10 s: the
// fixes disagree with the model for what it does not describe, and released with what the
// considered radius did to the model the scales took that for the radius (heading 0.020 ->
// 0.032 rad, vx 0.16 -> 0.24 m/s over 60 s). Within scale_release.after_reset_s of a forced
// reset they are only reopened; with it 0 they take the radius's error (seed 1, 40 s: heading
// 0.025 -> 0.017 rad).
TEST(VehicleObserver, HeldScalesReleasedSoonAfterAForcedResetAreOnlyReopened) {
  MBO_LONG_DRIVE_TEST();
  const auto shipped = run_robustness("sedan_mixed_combined", nlohmann::json::object(), 40);
  const auto no_window = run_robustness(
      "sedan_mixed_combined", nlohmann::json::parse(R"({"wheels": {"scale_release": {"after_reset_s": 0}}})"), 40);
  ASSERT_EQ(shipped["failures"]["wheel_scale_releases"].get<double>(), 1.0);
  ASSERT_GE(shipped["failures"]["resets"].get<double>(), 1.0) << "no reset: this checks nothing";
  EXPECT_LT(rmse(shipped, "observer", "yaw"), 0.9 * rmse(no_window, "observer", "yaw"));
  std::cout << "heading " << rmse(no_window, "observer", "yaw") << " -> " << rmse(shipped, "observer", "yaw")
            << " rad, vx " << rmse(no_window, "observer", "vx") << " -> " << rmse(shipped, "observer", "vx")
            << " m/s\n";
}

// Issue 18's combined drive self-calibrating, its receiver 0.1 s late and not told: at the first
// pull-away the late velocities (a tau behind) taught the wheel scales a speed 5 % low, sure to
// 0.01 %, and from then on every fix that would have corrected them was rejected; the model was
// reset to the fixes every 5 s with its scales as wrong and as sure as before (over these 40 s,
// seed 1: NEES 1050 on each scale, vx 0.39 m/s, 7 resets). A reset the fixes force makes the
// scales as uncertain as their prior again (keeping their values), and the fixes after it teach
// them anew (NEES 3.9 front, 104 rear, vx 0.21 m/s, 4 resets).
TEST(VehicleObserver, AResetTheFixesForceReopensTheLearnedWheelScales) {
  MBO_LONG_DRIVE_TEST();
  const auto rep = run_robustness("sedan_mixed_combined", patch_file("self_calibration.json"), 40);
  ASSERT_GE(rep["failures"]["resets"].get<double>(), 1.0) << "the drive no longer resets: it checks nothing";
  const auto& cal = rep["calibration"];
  for (const char* w : {"wheel_scale_fl", "wheel_scale_fr", "wheel_scale_rl", "wheel_scale_rr"}) {
    EXPECT_LT(cal[w]["nees"].get<double>(), 250.0) << w;
  }
  EXPECT_LT(rmse(rep, "observer", "vx"), 0.3);
  std::cout << "wheel scale fl NEES " << cal["wheel_scale_fl"]["nees"] << ", vx RMSE " << rmse(rep, "observer", "vx")
            << " m/s, resets " << rep["failures"]["resets"] << "\n";
}

// The same drive learning the car as well (the learned-car patch), its receiver's lag still not
// told: the first pull-away teaches the scales about 5 % high (1.06 for 1.010), which the
// considered latency's part of their published sigma holds (0.026). The reset the fixes force
// 7.3 s in (the scales are not reopened where the car is learned) forgot that part with the
// motion's: the scales published 0.0016 and "converged", 30-40 sigma off (NEES 1700-2200 over
// 60 s). The start from a fix sets the motion anew, not the parameters it keeps.
TEST(VehicleObserver, AResetFromAFixKeepsWhatTheConsideredLatencyDidToTheLearnedScales) {
  const auto rep = run_robustness("sedan_mixed_combined", patch_file("self_calibration_learned_car.json"), 10);
  ASSERT_GE(rep["failures"]["resets"].get<double>(), 1.0) << "the drive no longer resets: it checks nothing";
  for (const char* w : {"wheel_scale_fl", "wheel_scale_fr", "wheel_scale_rl", "wheel_scale_rr"}) {
    const auto& c = rep["calibration"][w];
    const double off = std::abs(c["value"].get<double>() - c["truth"].get<double>());
    ASSERT_GT(off, 0.01) << w << ": the lag no longer teaches it wrong; this checks nothing";
    EXPECT_LT(off, 4 * c["std"].get<double>()) << w << " sigma " << c["std"];
    EXPECT_FALSE(c["converged"].get<bool>()) << w;
    EXPECT_EQ(c["false_converged"].get<double>(), 0.0) << w << ": a calibration file would keep it as learned";
  }
}

// A gyro that drifts faster than its configured random walk (the learned-car patch says a
// 5 deg/h part; the sensors-from-prior drive's gyro wanders as the default's 80 deg/h) left the
// heading sure of a bias it no longer had. Each stop measures the bias (BiasWalkCheck): the
// first, 21 s in, finds it many sigma off and scales the walk, and the heading's sigma grows
// as the bias does from then on (seed 1, 60 s: flagged valid while 4 sigma off 16 % -> 4 % of
// the steps, valid on as many).
TEST(VehicleObserver, AStopThatFindsTheGyroBiasFarOffWidensItsRandomWalk) {
  MBO_LONG_DRIVE_TEST();
  auto run = [](bool check) {
    auto patch = patch_file("self_calibration_learned_car.json");
    patch["standstill"]["bias_walk"]["enabled"] = check;
    return run_robustness("sedan_mixed_sensors_from_prior", patch, 60);
  };
  const auto with = run(true), without = run(false);
  const double fv_with = with["false_valid"]["rate"]["yaw"].get<double>(),
               fv_without = without["false_valid"]["rate"]["yaw"].get<double>();
  ASSERT_GT(fv_without, 0.1) << "the heading is no longer too sure without the check: this checks nothing";
  EXPECT_LT(fv_with, 0.06);
  EXPECT_GT(with["false_valid"]["valid_share"]["yaw"].get<double>(),
            0.95 * without["false_valid"]["valid_share"]["yaw"].get<double>());
  EXPECT_LT(rmse(with, "observer", "yaw"), rmse(without, "observer", "yaw"));
  std::cout << "heading flagged valid while 4 sigma off: " << fv_without << " -> " << fv_with << ", yaw RMSE "
            << rmse(without, "observer", "yaw") << " -> " << rmse(with, "observer", "yaw") << " rad\n";
}

// The same drive with the car learned as well (the learned-car patch): after each reset the
// fixes force, what the model learned of the car came from a model that did not hold its
// sources, and for validity.reset_window_s no step's virtual sensors are valid.
TEST(VehicleObserver, AfterAForcedResetNoVirtualSensorIsValidWhereTheCarIsLearned) {
  const auto patch = patch_file("self_calibration_learned_car.json");
  auto sc = exp::load_vehicle_scenario(std::string(MBO_SOURCE_DIR) + "/scenarios/robustness/sedan_mixed_combined.json",
                                       &patch);
  sc.duration = 40;
  const auto recs = drive(sc, [](const Measurement&, double) { return false; });
  const double window = sc.observer.validity.reset_window_s;
  double last_reset = -1e9;
  std::uint64_t resets = 0;
  int after = 0, valid_after = 0;
  for (const auto& r : recs) {
    if (r.resets > resets) resets = r.resets, last_reset = r.t;
    if (r.t - last_reset >= window) continue;
    ++after;
    if (r.validity.virtual_sensors || r.validity.tyre_loads || r.validity.tyre_forces || r.valid) ++valid_after;
  }
  ASSERT_GT(after, 0) << "the drive no longer resets: it checks nothing";
  EXPECT_EQ(valid_after, 0);
  std::cout << resets << " resets, " << after << " steps within the window after one\n";
}

// A gyro reading 0.5 % high (its scale factor, here considered by imu.gyro_scale_std and not
// learned, as the learned-car patch did before it learned it) on the matched mixed drive, the
// car learned (the receiver on time): every turn's yaw rate reads as a car that turns more for
// its steer, and the learned
// cornering scales take it (seed 1, 60 s: rear 0.77 for 1.00, front 0.91). Their published
// sigma was the filter's alone, 0.031 (7 sigma off); it holds the considered scale error now
// (0.25), as a learned gyro bias's already did. The estimates are the same either way.
TEST(VehicleObserver, ALearnedCorneringScaleCarriesTheGyrosConsideredScaleError) {
  MBO_LONG_DRIVE_TEST();
  auto run = [](double gyro_scale_std) {
    auto patch = patch_file("self_calibration_learned_car.json");
    patch["imu"]["gyro_scale_std"] = gyro_scale_std;
    patch["imu"]["estimate_gyro_scale"] = nullptr;  // considered, not learned (the test below learns it)
    patch["gnss"]["latency_std"] = 0;  // the receiver is on time: the scale's term alone
    auto sc = exp::load_vehicle_scenario(
        std::string(MBO_SOURCE_DIR) + "/scenarios/robustness/sedan_mixed_baseline.json", &patch);
    sc.duration = 60;
    sc.sensors.gyro_errors.scale[2] = 0.005;
    return exp::run_vehicle_experiment(sc, {.seed = 1});
  };
  const auto with = run(0.005), without = run(0);
  expect_same_estimates(with, without);
  const auto& c = with["calibration"]["cornering_rear"];
  const double error = std::abs(c["value"].get<double>() - c["truth"].get<double>());
  ASSERT_GT(error, 0.05) << "the scale error no longer moves the learned scale: this checks nothing";
  const double sd_with = c["std"].get<double>(),
               sd_without = without["calibration"]["cornering_rear"]["std"].get<double>();
  EXPECT_GT(error, 3 * sd_without);
  EXPECT_LT(error, 3 * sd_with);
  EXPECT_LT(sd_with, 1.0);
  std::cout << "rear cornering scale " << c["value"] << " for " << c["truth"] << ", sigma " << sd_without << " -> "
            << sd_with << "\n";
}

// The same gyro, 0.5 % high, with its scale factor learned (imu.estimate_gyro_scale): the
// heading the fixes give after each turn tells the scale from the car, so the cornering scales
// are no longer taught the gyro's error (seed 1, 60 s: rear 0.77 -> 0.97 for 1.00, the scale
// learned as 0.0050 +- 0.0002, sideslip 0.026 -> 0.009 deg).
TEST(VehicleObserver, ALearnedGyroScaleKeepsTheTurnsFromTeachingTheCorneringScales) {
  MBO_LONG_DRIVE_TEST();
  auto run = [](bool learn_scale) {
    auto patch = patch_file("self_calibration_learned_car.json");
    patch["gnss"]["latency_std"] = 0;
    patch["imu"]["gyro_scale_std"] = 0.005;
    patch["imu"]["estimate_gyro_scale"] = learn_scale ? nlohmann::json::object() : nlohmann::json();
    auto sc = exp::load_vehicle_scenario(
        std::string(MBO_SOURCE_DIR) + "/scenarios/robustness/sedan_mixed_baseline.json", &patch);
    sc.duration = 60;
    sc.sensors.gyro_errors.scale[2] = 0.005;
    return exp::run_vehicle_experiment(sc, {.seed = 1});
  };
  const auto learned = run(true), considered = run(false);
  auto cornering_error = [](const nlohmann::json& r) {
    const auto& c = r["calibration"]["cornering_rear"];
    return std::abs(c["value"].get<double>() - c["truth"].get<double>());
  };
  ASSERT_FALSE(considered["calibration"].contains("gyro_scale_z"));
  ASSERT_GT(cornering_error(considered), 0.1) << "the scale error no longer misleads the car: this checks nothing";
  const auto& s = learned["calibration"]["gyro_scale_z"];
  EXPECT_DOUBLE_EQ(s["truth"].get<double>(), 0.005);
  EXPECT_TRUE(s["converged"].get<bool>());
  EXPECT_NEAR(s["value"].get<double>(), 0.005, 3 * s["std"].get<double>());
  EXPECT_LT(s["std"].get<double>(), 0.001);
  EXPECT_LT(cornering_error(learned), 0.05);
  const double slip_learned = learned["rmse"]["observer"]["sideslip_deg"].get<double>(),
               slip_considered = considered["rmse"]["observer"]["sideslip_deg"].get<double>();
  EXPECT_LT(slip_learned, 0.5 * slip_considered);
  std::cout << "gyro scale " << s["value"] << " +- " << s["std"] << "; rear cornering scale "
            << considered["calibration"]["cornering_rear"]["value"] << " -> "
            << learned["calibration"]["cornering_rear"]["value"] << "; sideslip " << slip_considered << " -> "
            << slip_learned << " deg\n";
}

// A gyro's turn-on bias the filter does not learn, 0.3 deg/s (imu.gyro_bias_std, the default;
// scenarios/patches/unmodelled_gyro_bias.json says it in full). Taken as calibrated
// (gyro_bias_std 0), the lane change with a 0.57 deg/s z bias had its heading flagged valid
// while 4 sigma off on a quarter of the steps, with a sigma of hundredths of a degree. The sigma
// holds what such a bias does to this filter's estimates (a consider analysis), which stay what
// they were (unlike the Schmidt filter of the test above).
TEST(VehicleObserver, AnUnmodelledGyroBiasIsInThePublishedSigmaAndNotInTheEstimates) {
  const auto without = run_robustness("sedan_dlc_gyro_bias", nlohmann::json::parse(R"({"imu": {"gyro_bias_std": 0}})"));
  const auto with = run_robustness("sedan_dlc_gyro_bias", nlohmann::json::object());
  EXPECT_EQ(run_robustness("sedan_dlc_gyro_bias", patch_file("unmodelled_gyro_bias.json"))["rmse"], with["rmse"]);
  expect_same_estimates(with, without);
  const auto& fv_without = without["false_valid"]["rate"];
  const auto& fv_with = with["false_valid"]["rate"];
  EXPECT_GT(fv_without["yaw"].get<double>(), 0.1);
  EXPECT_EQ(fv_with["yaw"].get<double>(), 0.0);
  EXPECT_EQ(fv_with["sideslip"].get<double>(), 0.0);
  EXPECT_LE(fv_with["position"].get<double>(), fv_without["position"].get<double>());
  // the heading is still valid where it is known: the sigma is honest, not a flag kept off
  EXPECT_GT(with["false_valid"]["valid_share"]["yaw"].get<double>(), 0.8);
  std::cout << "heading flagged valid while 4 sigma off: " << fv_without["yaw"] << " -> " << fv_with["yaw"]
            << ", valid on " << with["false_valid"]["valid_share"]["yaw"] << " of the steps\n";
}

// The car's tyres 1 % smaller than its file (the robustness suite's case): the wheels, which the
// filter trusts, carry the model 1 % fast; the fixes are rejected and the position drifts
// 0.6 m, flagged valid with a sigma of centimetres. The radius's 1-sigma (0.5 %, the default),
// carried by a consider analysis of the wheel rows, puts that drift in the published sigma.
TEST(VehicleObserver, AnUnmodelledRollingRadiusIsInThePublishedSigmaAndNotInTheEstimates) {
  // the gyro and receiver taken as calibrated (they are), so that the radius's term is all the
  // sigma holds; no wheel scale estimated, since held scales, once released, take what the
  // considered radius did to the model (estimate_held_radius) and the estimates move with it
  const auto no_scales = nlohmann::json::parse(R"({"wheels": {"estimate_scale": {"enabled": false},
      "scale_release": {"enabled": false}}})");
  auto no_radius = no_scales;
  no_radius["validity"]["rolling_radius_rel_std"] = 0;
  const auto without = run_robustness("sedan_dlc_radius_minus1pct", calibrated_sensors(no_radius));
  const auto with = run_robustness("sedan_dlc_radius_minus1pct", calibrated_sensors(no_scales));
  expect_same_estimates(with, without);
  const auto& fv_without = without["false_valid"]["rate"];
  const auto& fv_with = with["false_valid"]["rate"];
  EXPECT_GT(fv_without["position"].get<double>(), 0.1);
  EXPECT_EQ(fv_with["position"].get<double>(), 0.0);
  EXPECT_LE(fv_with["velocity"].get<double>(), fv_without["velocity"].get<double>());
  // valid where the fixes hold the position: the sigma is honest, not a flag kept off
  EXPECT_GT(with["false_valid"]["valid_share"]["position"].get<double>(), 0.4);
  std::cout << "position flagged valid while 4 sigma off: " << fv_without["position"] << " -> " << fv_with["position"]
            << ", valid on " << with["false_valid"]["valid_share"]["position"] << " of the steps\n";
}

// The single-frequency drive's receiver is 0.1 s late and nobody says so. Self-calibrating, the
// filter holds the wheels' scales uncertain and follows the late velocity: 0.25 m/s off in
// each stop with a sigma of 5 cm, flagged valid. gnss.latency_std (here 0.05 s) carries what
// an unknown latency does (dh/dlatency times its error, on every GNSS row) into the sigmas.
TEST(VehicleObserver, AnUnmodelledGnssLatencyIsInThePublishedSigmaAndNotInTheEstimates) {
  MBO_LONG_DRIVE_TEST();
  auto run = [](double latency_std) {
    auto patch = patch_file("self_calibration.json");
    patch["gnss"]["latency_std"] = latency_std;
    return run_robustness("sedan_mixed_gnss_single", patch, 60);
  };
  const auto without = run(0), with = run(0.05);
  expect_same_estimates(with, without);
  const auto& fv_without = without["false_valid"]["rate"];
  const auto& fv_with = with["false_valid"]["rate"];
  EXPECT_GT(fv_without["velocity"].get<double>(), 0.1);
  EXPECT_LT(fv_with["velocity"].get<double>(), 0.01);
  EXPECT_LE(fv_with["yaw"].get<double>(), fv_without["yaw"].get<double>());
  EXPECT_GT(with["false_valid"]["valid_share"]["velocity"].get<double>(), 0.9);
  std::cout << "velocity flagged valid while 4 sigma off: " << fv_without["velocity"] << " -> " << fv_with["velocity"]
            << ", valid on " << with["false_valid"]["valid_share"]["velocity"] << " of the steps\n";
}

// A learned wheel scale publishes the wheel its Hall sensor counts (the model's spin times the
// scale). The outputs' Jacobian was taken between that published spin and the model's own, so
// the spins' sigma held their difference over the step h: the lane change's wheel-speed NEES
// 2e-7 and spin-angle NEES 7e-10 (sigmas 2000x and 40000x their errors). Now J is the model's
// and the scale's error enters as the published spin's does.
TEST(VehicleObserver, ALearnedWheelScaleLeavesTheSpinsSigmaHonest) {
  const auto rep =
      run_robustness("sedan_dlc_radius_minus1pct", calibrated_sensors(patch_file("self_calibration.json")));
  const auto& nees = rep["consistency"]["output_nees"];
  for (const char* q : {"wheel_speed_fl", "wheel_speed_rr", "wheel_spin_angle_fl", "wheel_spin_angle_rr"}) {
    ASSERT_TRUE(nees.contains(q)) << q;
    EXPECT_GT(nees[q].get<double>(), 0.01) << q;
    EXPECT_LT(nees[q].get<double>(), 3.0) << q;
  }
  std::cout << "learned wheel scales: wheel speed FL NEES " << nees["wheel_speed_fl"] << ", spin angle FL NEES "
            << nees["wheel_spin_angle_fl"] << "\n";
}

// A start-up line for each sensor error left at the default for a part nobody measured, saying
// what it costs (the position not valid above 72 km/h) and what to set instead.
TEST(VehicleObserver, TheStartUpLogNamesTheSensorErrorsLeftAtTheirDefaults) {
  auto j = observer_section("mbobserver.json");  // says latency_std 0, nothing of the gyro's bias
  const auto lines = [&] { return est::unmeasured_sensor_defaults(read_observer(j), JsonReader(j, "obs.json")); };
  auto said = lines();
  ASSERT_EQ(said.size(), 1u);
  EXPECT_NE(said[0].find("observer.imu.gyro_bias_std is 0.3 deg/s by default"), std::string::npos) << said[0];
  j["gnss"].erase("latency_std");
  said = lines();
  ASSERT_EQ(said.size(), 2u);
  EXPECT_NE(said[0].find("observer.gnss.latency_std is 0.05 s by default"), std::string::npos) << said[0];
  EXPECT_NE(said[0].find("not valid above 72 km/h (validity.max_position_std 1 m)"), std::string::npos) << said[0];
  j["imu"]["gyro_bias_std"] = 0.3;  // said, even if it is the default's value
  EXPECT_EQ(lines().size(), 1u);
  j["gnss"]["estimate_latency"] = nlohmann::json::object();  // learned: no consider term
  EXPECT_TRUE(lines().empty());
}

TEST(VehicleObserver, TheGnssLatencyStdIsReadInSecondsAndChecked) {
  auto j = observer_section("mbobserver.json");
  EXPECT_EQ(read_observer(j).gnss.latency_std, 0.0);  // the embedded default's receiver is on time
  j["gnss"].erase("latency_std");
  EXPECT_EQ(read_observer(j).gnss.latency_std, 0.05);  // an unmeasured receiver's, by default
  j["gnss"]["latency_std"] = 0.05;
  EXPECT_EQ(read_observer(j).gnss.latency_std, 0.05);
  j["gnss"]["latency_std"] = 2;
  try {
    read_observer(j);
    FAIL() << "a latency uncertain by 2 s was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("/gnss/latency_std"), std::string::npos) << e.what();
  }
}

TEST(VehicleObserver, StiffnessScalesAreReadWithTheirRangeAroundOne) {
  const auto base = observer_section("mbobserver.json");
  auto sc = scenario("vehicle_double_lane_change.json", 1);
  auto j = base;
  j["filter"]["force_error"]["estimate_inputs"]["cornering_rear"] = {{"plant_noise", 1e-6}, {"initial_std", 0.1}};
  const auto c = read_observer(j);
  ASSERT_EQ(c.settings.estimated_inputs.size(), 2u);
  EXPECT_EQ(c.settings.estimated_inputs[0], sc.model->in.cornering_rear);  // keys in order
  EXPECT_EQ(c.settings.input_min[0], 0.5);
  EXPECT_EQ(c.settings.input_max[0], 1.5);
  j["filter"]["force_error"]["estimate_inputs"]["cornering_rear"]["min"] = 1.1;
  try {
    read_observer(j);
    FAIL() << "accepted a range without the file's own stiffness";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("/filter/force_error/estimate_inputs/cornering_rear: [min, max] must hold 1"),
              std::string::npos)
        << e.what();
  }
}

TEST(VehicleObserver, AScaleReleaseNeedsTheScalesItReleasesAndAHeldSigmaBelowTheirPrior) {
  auto j = observer_section("mbobserver.json");
  j["wheels"]["scale_release"] = nlohmann::json::object();
  auto refused = [&](const std::string& what) {
    try {
      read_observer(j);
      ADD_FAILURE() << "accepted: " << j["wheels"].dump();
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("/wheels/scale_release" + what), std::string::npos) << e.what();
    }
  };
  refused(": needs \"estimate_scale\"");
  j["wheels"]["estimate_scale"] = {{"initial_std", 0.02}};
  EXPECT_TRUE(read_observer(j).wheels.release.on);
  EXPECT_EQ(read_observer(j).wheels.release.window_s, 2.0);
  j["wheels"]["scale_release"]["held_std"] = 0.05;
  refused(": \"held_std\" must be below estimate_scale's initial_std");
  j["wheels"]["scale_release"] = {{"enabled", false}, {"held_std", 0.05}};
  EXPECT_FALSE(read_observer(j).wheels.release.on);
  j["wheels"]["scale_release"] = {{"window_s", 0}};
  refused("/window_s: must be in (0, 600], got 0");
}

namespace {

// A run's calibration block of one parameter: the report has its truth, RMSE and NEES.
const nlohmann::json& calibrated(const nlohmann::json& rep, const char* name) {
  EXPECT_TRUE(rep.contains("calibration") && rep["calibration"].contains(name)) << name;
  const auto& c = rep["calibration"][name];
  for (const char* key : {"value", "std", "truth", "rmse", "nees"}) EXPECT_TRUE(c.contains(key)) << name << "." << key;
  return c;
}

}  // namespace

// Issue 18's parameter NEES: the gyro z bias learned on the lane change whose gyroscope reads
// 0.01 rad/s high is scored against that bias, and the score moves with the estimate's error:
// a bias held by its range far from the truth with a small sigma gives a NEES in the hundreds.
TEST(VehicleObserver, ReportsTheLearnedGyroBiasAgainstTheScenariosBias) {
  auto sc = scenario("robustness/sedan_dlc_gyro_bias.json", 6);
  ASSERT_EQ(sc.sensors.gyro_errors.bias[2], 0.01);
  sc.observer.imu.gyro_bias.on = true;
  const auto rep = exp::run_vehicle_experiment(sc, {});
  const auto& c = calibrated(rep, "gyro_bias_z");
  EXPECT_DOUBLE_EQ(c["truth"].get<double>(), 0.01);
  const double value = c["value"].get<double>(), sd = c["std"].get<double>(), nees = c["nees"].get<double>();
  const double rmse_bias = c["rmse"].get<double>();
  EXPECT_TRUE(std::isfinite(nees));
  EXPECT_GT(nees, 0.0);
  EXPECT_LT(nees, 5.0) << "an honest sigma";
  // learned by the end: within 3 sigma of the truth, and the RMSE holds the start (value 0,
  // error 0.01) as well, so it is above the final error
  EXPECT_LT(std::abs(value - 0.01), 3 * sd);
  EXPECT_GT(rmse_bias, std::abs(value - 0.01));
  EXPECT_LT(rmse_bias, 0.01);
  // the other axes are not estimated (gyro_axes "z"): no block, no truth
  EXPECT_FALSE(rep["calibration"].contains("gyro_bias_x"));
  // The range caps the estimate at a fifth of the truth while its sigma shrinks as before.
  sc.observer.imu.gyro_bias.max = 0.002;
  const auto capped = exp::run_vehicle_experiment(sc, {});
  const auto& k = calibrated(capped, "gyro_bias_z");
  EXPECT_LE(k["value"].get<double>(), 0.002 + 1e-12);
  EXPECT_GT(k["rmse"].get<double>(), 0.007);
  EXPECT_GT(k["nees"].get<double>(), 100 * nees);
}

// The MEMS drive's gyro has a scale error (0.5 %) besides its bias: learning the bias in turns of
// one sense takes the scale error for bias, 5 sigma off (NEES 30), and the heading with it.
// imu.gyro_scale_std carries that error (coefficient: the rate read) into the learned bias's
// sigma and the heading's; the estimates do not change.
TEST(VehicleObserver, AnUnmodelledGyroScaleIsInTheLearnedBiasAndHeadingSigmas) {
  MBO_LONG_DRIVE_TEST();
  auto run = [](double scale_std) {
    auto patch = patch_file("self_calibration.json");
    patch["gnss"]["latency_std"] = 0;  // its receiver is on time: the scale's term alone
    patch["imu"]["gyro_scale_std"] = scale_std;
    return run_robustness("sedan_mixed_imu_mems", patch, 60);
  };
  const auto without = run(0), with = run(0.005);
  expect_same_estimates(with, without, {"x", "yaw", "vx", "sideslip_deg"});
  const double nees0 = calibrated(without, "gyro_bias_z")["nees"].get<double>();
  const double nees1 = calibrated(with, "gyro_bias_z")["nees"].get<double>();
  EXPECT_GT(nees0, 5.0);
  EXPECT_LT(nees1, 2.0);
  EXPECT_GT(without["false_valid"]["rate"]["yaw"].get<double>(), 0.05);
  EXPECT_LT(with["false_valid"]["rate"]["yaw"].get<double>(), 0.01);
  EXPECT_GT(with["false_valid"]["valid_share"]["yaw"].get<double>(), 0.9);
  std::cout << "gyro bias NEES " << nees0 << " -> " << nees1 << "; heading flagged valid while 4 sigma off "
            << without["false_valid"]["rate"]["yaw"] << " -> " << with["false_valid"]["rate"]["yaw"] << "\n";
}

// A learned wheel scale cannot be known better than the Hall model describes the counts: a
// constant radius for a tyre whose load and speed change, counts on time. On the CAN drive,
// whose counts are 10 ms late, the scales settle 0.08-0.16 % from the truth's with a filter
// sigma of 0.01 % (NEES 250-600 before that floor was in the published sigma).
TEST(VehicleObserver, TheLearnedWheelScalesSigmaHoldsWhatTheHallModelCannotFollow) {
  MBO_LONG_DRIVE_TEST();
  const auto rep = run_robustness("sedan_mixed_can", patch_file("self_calibration.json"), 60);
  for (const char* w : {"wheel_scale_fl", "wheel_scale_fr", "wheel_scale_rl", "wheel_scale_rr"}) {
    const auto& c = calibrated(rep, w);
    const double err = std::abs(c["value"].get<double>() - c["truth"].get<double>());
    EXPECT_GT(err, 5e-4) << w << ": the model's own error, which the data cannot remove";
    EXPECT_GE(c["std"].get<double>(), 1e-3) << w;
    EXPECT_LT(err, 3 * c["std"].get<double>()) << w;
    EXPECT_LT(c["nees"].get<double>(), 10.0) << w;
    std::cout << w << " " << c["value"] << " +- " << c["std"] << " (truth " << c["truth"] << "), NEES " << c["nees"]
              << "\n";
  }
}

// The wheel scale's truth is r_model / r_effective (the Hall counts over the model's spin):
// with the truth's tyres 1 % smaller it is about 1 / 0.99, and the scales learned are within
// their sigma of it.
TEST(VehicleObserver, ReportsTheWheelScalesAgainstTheTruthsTyres) {
  auto sc = scenario("robustness/sedan_dlc_radius_minus1pct.json", 6);
  sc.observer.wheels.scale = {true, 0.02, 1e-9, 0.9, 1.1};  // scenarios/patches/self_calibration.json
  const auto rep = exp::run_vehicle_experiment(sc, {});
  for (const char* w : {"wheel_scale_fl", "wheel_scale_fr", "wheel_scale_rl", "wheel_scale_rr"}) {
    const auto& c = calibrated(rep, w);
    // R_e = R0 - penetration / 3 at the same load: a little more than 1 / 0.99
    EXPECT_GT(c["truth"].get<double>(), 1 / 0.99) << w;
    EXPECT_LT(c["truth"].get<double>(), 1 / 0.99 + 1e-3) << w;
    EXPECT_LT(std::abs(c["value"].get<double>() - c["truth"].get<double>()), 3 * c["std"].get<double>()) << w;
    EXPECT_GT(c["nees"].get<double>(), 0.0) << w;
  }
  // no GNSS latency, accelerometer or payload estimated: none reported
  EXPECT_FALSE(rep["calibration"].contains("gnss_latency"));
  EXPECT_FALSE(rep["calibration"].contains("payload_front"));
}

// A learned wheel scale k = R_model / R_car is also the arm the drive and brake torques need:
// the car's wheel makes Fx = T / R_car, the model's from k T. Observers from the same start with
// no sensor but the driver's torque, or brake pressure, for 1 s: the model's speed gained, or
// lost, from it (over a coasting one's) is k times what the file's radius gives (without it:
// the same, and issue 18's drive learned a car 1 % smaller-tyred as 1 % lighter).
TEST(VehicleObserver, ALearnedWheelScaleGivesTheModelsWheelsTheTorquesItsRadiusNeeds) {
  auto sc = scenario("vehicle_double_lane_change.json", 1);
  sc.observer.wheels.scale = {true, 0.02, 1e-9, 0.9, 1.1};
  auto speed_after = [&](double scale, std::initializer_list<Channel> channels, double value) {
    est::VehicleObserver obs(sc.model, sc.observer, sc.dt);
    for (const char* w : {"wheel_scale_fl", "wheel_scale_fr", "wheel_scale_rl", "wheel_scale_rr"})
      EXPECT_TRUE(obs.restore_parameter(w, scale, 1e-6, 0));
    obs.start(sc.manoeuvre.start, 0);
    EstimateRecord r;
    for (int k = 1; k <= 500; ++k) {
      const double t = 0.002 * k;
      if (k % 5 == 0)
        for (Channel c : channels) obs.push({t, c, value});
      r = obs.step(t);
    }
    return r.v_long;
  };
  const auto drive = {Channel::drive_torque_fl, Channel::drive_torque_fr};
  const auto brake = {Channel::brake_pressure_fl, Channel::brake_pressure_fr, Channel::brake_pressure_rl,
                      Channel::brake_pressure_rr};
  auto gained = [&](double scale, std::initializer_list<Channel> channels, double value) {
    return speed_after(scale, channels, value) - speed_after(scale, channels, 0);
  };
  const double file = gained(1.0, drive, 300), smaller = gained(0.97, drive, 300);
  // 2 x 300 N m on 0.317 m over 1 s in a car of 1630 kg: about 1.1 m/s
  EXPECT_GT(file, 0.8);
  EXPECT_NEAR(smaller / file, 0.97, 0.003);
  std::printf("speed gained from the torque: file's radius %.4f m/s, scale 0.97 %.4f m/s (%.4f)\n", file, smaller,
              smaller / file);
  // 15 bar on every wheel, below the tyres' peak: about 1.8 m/s lost
  const double braked = gained(1.0, brake, 15e5), braked_smaller = gained(0.97, brake, 15e5);
  EXPECT_LT(braked, -1.5);
  EXPECT_NEAR(braked_smaller / braked, 0.97, 0.003);
  std::printf("speed lost to the brakes: file's radius %.4f m/s, scale 0.97 %.4f m/s (%.4f)\n", braked, braked_smaller,
              braked_smaller / braked);
}

// The report's "mass" (issue 18's "mass within 3 %"): the truth's whole mass, its file's with the
// perturbation in, against the observer's file's plus the payload it estimates. Nothing
// estimated: the observer and the open loop are the file's car, 200 kg light all along.
TEST(VehicleObserver, TheReportScoresTheCarsMassAgainstTheTruthsPerturbedOne) {
  auto doc = load_json_file(std::string(MBO_SOURCE_DIR) + "/scenarios/vehicle_double_lane_change.json");
  for (auto k : {"truth", "model"}) doc[k]["vehicle"] = std::string(MBO_SOURCE_DIR) + "/config/vehicles/sedan.json";
  doc["perturb"] = {{"mass_kg", 200.0}, {"cg_x_m", -0.15}};
  const auto path = std::filesystem::temp_directory_path() / ("mbo_mass_report_" + std::to_string(getpid()) + ".json");
  std::ofstream(path) << doc.dump(2);
  auto sc = exp::load_vehicle_scenario(path);
  std::filesystem::remove(path);
  sc.duration = 1;
  const auto rep = exp::run_vehicle_experiment(sc, {});
  EXPECT_NEAR(rmse(rep, "observer", "mass"), 200, 1e-9);
  EXPECT_NEAR(rmse(rep, "model", "mass"), 200, 1e-9);
  EXPECT_NEAR(rep["max_abs"]["observer"]["mass"].get<double>(), 200, 1e-9);
}

// The rolling radius the Hall counts imply (issue 18's "rolling radii within 0.1 %"): the model's
// at its load over the learned wheel scale. Tyres 1 % small: the open loop rolls on the file's
// radius, 1 % (3 mm) off; the observer learning the wheel scales from GNSS is within a fraction
// of it, and without them it is as far off as the open loop.
TEST(VehicleObserver, TheRollingRadiusTheCountsImplyIsTheModelsOverTheLearnedScale) {
  const auto with = run_robustness("sedan_dlc_radius_minus1pct", patch_file("self_calibration.json"));
  const auto without = run_robustness("sedan_dlc_radius_minus1pct", nlohmann::json::parse(R"({"wheels": {
      "estimate_scale": {"enabled": false}, "scale_release": {"enabled": false}}})"));
  for (const char* w : {"rolling_radius_fl", "rolling_radius_rr"}) {
    const double open = rmse(with, "model", w), obs = rmse(with, "observer", w);
    std::cout << w << ": open loop " << open << " m, learned scale " << obs << " m, none "
              << rmse(without, "observer", w) << " m\n";
    EXPECT_NEAR(open, 0.01 * 0.312, 0.0005) << w;
    EXPECT_LT(obs, 0.3 * open) << w;
    EXPECT_NEAR(rmse(without, "observer", w), open, 0.1 * open) << w;
  }
}

// Hall counts 10 ms late on a CAN bus (the robustness suite's CAN drive), with the wheel scales
// learned: read as now, the slip they hide goes into the scales and the wheel speeds; with
// wheels.latency_s the rows compare them with the wheels' angles 10 ms ago.
TEST(VehicleObserver, LateHallCountsAreComparedWithTheWheelsAngleThatLongAgo) {
  MBO_LONG_DRIVE_TEST();
  auto patch = patch_file("self_calibration.json");
  const auto now = run_robustness("sedan_mixed_can", patch, 30);
  patch["wheels"]["latency_s"] = 0.01;
  const auto late = run_robustness("sedan_mixed_can", patch, 30);
  for (const char* q : {"wheel_speed_fl", "wheel_speed_rl", "vx", "x"}) {
    std::cout << q << ": counts read as now " << rmse(now, "observer", q) << ", 10 ms late "
              << rmse(late, "observer", q) << "\n";
    EXPECT_LT(rmse(late, "observer", q), 0.7 * rmse(now, "observer", q)) << q;
  }
}

// The suite's noise floor (mbobserver-experiment --suite --floor): the same run with the
// observer's model the truth's car as drawn for it. Its loads are the truth's (the open loop's
// tyre Fz: 591 N RMS off at the front left with the file's car, 200 kg light; 3.4 N on the
// truth's own) and so is its mass, and the
// observer on it is the better (4 s: x 0.018 m on the file's car, 0.003 m on the truth's own).
// Not its open-loop position: that drifts from the bus's sampled inputs on any car (0.05-0.09
// m in these 4 s).
TEST(VehicleObserver, WithTheTruthsOwnCarAsTheModelTheLoadsAreTheTruths) {
  auto sc = exp::load_vehicle_scenario(std::string(MBO_SOURCE_DIR) + "/scenarios/robustness/sedan_dlc_heavier.json");
  sc.duration = 4;
  const auto nominal = exp::run_vehicle_experiment(sc, {});
  sc.model_is_truth = true;
  const auto matched = exp::run_vehicle_experiment(sc, {});
  std::cout << "open loop Fz FL: file's car " << rmse(nominal, "model", "tyre_fz_fl") << " N, truth's own "
            << rmse(matched, "model", "tyre_fz_fl") << " N; observer x " << rmse(nominal, "observer", "x") << " / "
            << rmse(matched, "observer", "x") << " m\n";
  EXPECT_GT(rmse(nominal, "model", "tyre_fz_fl"), 300);
  EXPECT_LT(rmse(matched, "model", "tyre_fz_fl"), 0.1 * rmse(nominal, "model", "tyre_fz_fl"));
  EXPECT_NEAR(rmse(matched, "model", "mass"), 0, 1e-9);  // the truth's mass, drawn for the run
  EXPECT_NEAR(rmse(nominal, "model", "mass"), 200, 1e-9);
  EXPECT_LT(rmse(matched, "observer", "x"), 0.5 * rmse(nominal, "observer", "x"));
}
