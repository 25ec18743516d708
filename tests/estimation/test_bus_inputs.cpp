// A production car's inputs turned into the model's (aiding/bus_inputs.hpp, issue 20): the
// steering-wheel table and its slope, the driveline's gear, final drive, efficiency and the
// AWD split against speed (torque conserved), and the brake switch's pressures, whose brake
// torques decelerate the car's mass at the configured rate once ramped in; the car's ABS on the
// model's wheels.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "mbobserver/core/json_reader.hpp"
#include "mbobserver/estimation/aiding/bus_inputs.hpp"
#include "mbobserver/experiment/vehicle_experiment.hpp"

namespace {

using namespace mbo;
using namespace mbo::est;
using namespace mbo::est::aiding;

constexpr double kDeg = M_PI / 180;

std::shared_ptr<const models::Vehicle> sedan() {
  static auto v =
      exp::load_vehicle_scenario(std::string(MBO_SOURCE_DIR) + "/scenarios/vehicle_double_lane_change.json").model;
  return v;
}

BusInputsConfig read(const nlohmann::json& observer) {
  BusInputsConfig c;
  read_bus_inputs_config(JsonReader(observer, "observer.json", "/observer"), c);
  return c;
}

const nlohmann::json kAwd = nlohmann::json::parse(R"({
  "steering": {"table": {"steering_wheel_deg": [-540, 0, 90, 540], "road_wheel_deg": [-36, 0, 6, 30]}},
  "driveline": {"layout": "AWD", "gear_ratios": {"1": 3.6, "2": 2.1, "-1": 3.3}, "final_drive": 3.9,
                "efficiency": 0.9, "centre_split": {"speed_kmh": [0, 100], "front_share": [0.6, 0.4]}},
  "brakes": {"front_ratio": 1.0, "rear_ratio": 0.7, "switch_deceleration": 3, "switch_ramp_s": 0.3}
})");

}  // namespace

TEST(BusInputs, SteeringWheelTableAndItsSlopeGiveTheRoadWheelAngleAndRate) {
  const BusInputs b(read(kAwd), *sedan());
  EXPECT_NEAR(b.road_wheel_angle(45 * kDeg), 3 * kDeg, 1e-12);  // halfway along 0..90
  EXPECT_NEAR(b.road_wheel_angle(-270 * kDeg), -18 * kDeg, 1e-12);
  EXPECT_NEAR(b.road_wheel_angle(900 * kDeg), 30 * kDeg, 1e-12) << "held beyond the table";
  // the rate through the local slope: 6/90 below 90 deg, 24/450 above
  EXPECT_NEAR(b.road_wheel_rate(45 * kDeg, 1.0), 6.0 / 90, 1e-12);
  EXPECT_NEAR(b.road_wheel_rate(300 * kDeg, 1.0), 24.0 / 450, 1e-12);
  auto ratio = kAwd;
  ratio["steering"] = {{"ratio", 15.5}};
  const BusInputs r(read(ratio), *sedan());
  EXPECT_NEAR(r.road_wheel_angle(1.55), 0.1, 1e-12);
  EXPECT_NEAR(r.road_wheel_rate(0.3, 3.1), 0.2, 1e-12);
}

// The steering-wheel angle's quantum, uniform over one step, as a road-wheel sigma: through the
// ratio, or the table's steepest slope (kAwd: 1/15 below 90 deg of the wheel, 0.053 above).
TEST(BusInputs, TheSteeringWheelAnglesQuantumGivesTheRoadWheelAnglesSigma) {
  auto c = read(nlohmann::json::parse(R"({"steering": {"ratio": 15.5, "resolution_deg": 0.1}})"));
  EXPECT_NEAR(road_wheel_angle_std(c.steering), 0.1 * kDeg / std::sqrt(12.0) / 15.5, 1e-15);
  auto t = kAwd;
  t["steering"]["resolution_deg"] = 0.5;
  c = read(t);
  EXPECT_NEAR(road_wheel_angle_std(c.steering), 0.5 * kDeg / std::sqrt(12.0) / 15, 1e-15);
  EXPECT_EQ(road_wheel_angle_std(read(kAwd).steering), 0.0);  // not given: no input error
  EXPECT_THROW(read(nlohmann::json::parse(R"({"steering": {"ratio": 15.5, "resolution_deg": -1}})")), ConfigError);
}

TEST(BusInputs, DrivelineConservesTorqueAndSplitsItByLayoutAndSpeed) {
  const BusInputs awd(read(kAwd), *sedan());
  bool known = false;
  EXPECT_DOUBLE_EQ(awd.gear_ratio(2, known), 2.1);
  EXPECT_TRUE(known);
  EXPECT_DOUBLE_EQ(awd.gear_ratio(-1, known), 3.3);
  EXPECT_EQ(awd.gear_ratio(0, known), 0.0) << "neutral: no torque reaches the wheels";
  EXPECT_FALSE(known);
  const double engine = 200, total = 200 * 3.6 * 3.9 * 0.9;
  for (double kmh : {0.0, 50.0, 100.0, 150.0}) {
    const auto T = awd.wheel_torques(engine, 3.6, kmh / 3.6);
    EXPECT_NEAR(std::accumulate(T.begin(), T.end(), 0.0), total, 1e-9) << kmh;
    EXPECT_DOUBLE_EQ(T[0], T[1]) << "an open differential splits evenly";
    EXPECT_DOUBLE_EQ(T[2], T[3]);
    const double front = std::clamp(0.6 - 0.2 * kmh / 100, 0.4, 0.6);
    EXPECT_NEAR((T[0] + T[1]) / total, front, 1e-12) << kmh << " km/h";
  }
  for (auto [layout, front] : {std::pair{"FWD", 1.0}, std::pair{"RWD", 0.0}}) {
    auto c = kAwd;
    c["driveline"] = {{"layout", layout}, {"fixed_ratio", 9.0}};
    const BusInputs b(read(c), *sedan());
    EXPECT_DOUBLE_EQ(b.gear_ratio(7, known), 9.0) << "no gear table: the fixed reduction";
    const auto T = b.wheel_torques(100, 9.0, 10);
    EXPECT_NEAR(T[0] + T[1], front * 900, 1e-9) << layout;
    EXPECT_NEAR(T[2] + T[3], (1 - front) * 900, 1e-9) << layout;
  }
}

TEST(BusInputs, BrakeSwitchPressuresDecelerateTheCarAtTheConfiguredRateOnceRampedIn) {
  const auto v = sedan();
  BusInputs b(read(kAwd), *v);
  ModelInputs in(InputsConfig{});
  const auto& p = v->params;
  // the brake force at the road of the four wheels' torques: sum gain p / r
  auto deceleration = [&] {
    const auto& P = in.inputs().brake_pressure;
    double torque = 0;
    for (int w = 0; w < 4; ++w) torque += p.axles[w < 2 ? 0 : 1].brake_gain_Nm_per_Pa * P[w];
    return torque / p.axles[0].tyre.radius_m / p.total_mass();
  };
  auto at = [&](double t, double pressed) {
    b.hold(Measurement{t, Channel::brake_switch, pressed});
    b.convert(t, 20, in);
    in.gather(t);
  };
  at(1.0, 1);
  EXPECT_NEAR(deceleration(), 0.0, 1e-12) << "the ramp starts at the press";
  at(1.15, 1);
  EXPECT_NEAR(deceleration(), 1.5, 1e-9) << "halfway up the 0.3 s ramp";
  at(1.4, 1);
  EXPECT_NEAR(deceleration(), 3.0, 1e-9);
  const auto& P = in.inputs().brake_pressure;
  EXPECT_NEAR(P[2] / P[0], 0.7, 1e-12) << "the rear line's ratio";
  EXPECT_DOUBLE_EQ(P[0], P[1]);
  at(1.5, 0);
  EXPECT_EQ(deceleration(), 0.0) << "released";
  at(1.6, 1);
  at(1.75, 1);
  EXPECT_NEAR(deceleration(), 1.5, 1e-9) << "a new press ramps in again";
}

TEST(BusInputs, TheCarsAbsLimitsEachWheelsBrakeForceToItsTyresPeakAtTheModelsLoadAndFriction) {
  const auto v = sedan();
  const auto& p = v->params;
  models::VehicleOutputs o;
  o.speed = 25;
  const std::array<double, 4> Fz{5000, 4800, 3000, 2600};
  for (int w = 0; w < 4; ++w) o.wheel[w].Fz = Fz[w];
  // the brake force at the road of a wheel's pressure, and the tyre's peak force (its Fx over
  // slip, sampled: the curve's maximum, found independently of the formula apply_abs uses)
  auto road_force = [&](const models::VehicleInputs& in, int w) {
    return p.axles[w < 2 ? 0 : 1].brake_gain_Nm_per_Pa * in.brake_pressure[w] / p.axles[w < 2 ? 0 : 1].tyre.radius_m;
  };
  auto peak_force = [&](int w, double mu) {
    const auto& tm = v->tyres[w]->model();
    // Magic Formula D sin(C atan(B k - E (B k - atan(B k)))) over B k: its largest value
    const auto& l = tm.p.longitudinal;
    const double D = tm.mu_effective(mu, Fz[w]) * l.peak_factor * Fz[w];
    double peak = 0;
    for (double y = 0; y < 20; y += 1e-3)
      peak = std::max(peak, D * std::sin(l.C * std::atan(y - l.E * (y - std::atan(y)))));
    return peak;
  };
  auto braked = [&](const nlohmann::json& brakes, double master, double mu, double speed) {
    auto c = kAwd;
    if (brakes.is_object()) c["brakes"].update(brakes);
    BusInputs b(read(c), *v);
    ModelInputs in(InputsConfig{});
    b.hold(Measurement{1.0, Channel::brake_master_pressure, master});
    b.convert(1.0, speed, in);
    in.gather(1.0);
    o.speed = speed;
    b.apply_abs(o, mu, in.inputs());
    return in.inputs();
  };
  const double mu = v->tyres[0]->model().p.mu;
  // a light press passes untouched
  const auto light = braked({}, 5e5, mu, 25);
  EXPECT_DOUBLE_EQ(light.brake_pressure[0], 5e5);
  EXPECT_DOUBLE_EQ(light.brake_pressure[2], 0.7 * 5e5);
  // a panic press: every wheel's brake force held at 0.95 of its tyre's peak, per wheel load
  const auto panic = braked({}, 2e7, mu, 25);
  for (int w = 0; w < 4; ++w) {
    EXPECT_NEAR(road_force(panic, w) / peak_force(w, mu), 0.95, 2e-3) << w;
    EXPECT_LT(panic.brake_pressure[w], 0.7 * 2e7) << w;
  }
  EXPECT_GT(road_force(panic, 0), road_force(panic, 3)) << "more load, more brake";
  // on a road of half the friction, about half the force (the load sensitivity is the same)
  const auto ice = braked({}, 2e7, 0.5 * mu, 25);
  EXPECT_NEAR(road_force(ice, 0) / road_force(panic, 0), 0.5, 1e-9);
  EXPECT_NEAR(road_force(braked({{"abs_force_fraction", 0.8}}, 2e7, mu, 25), 1) / peak_force(1, mu), 0.8, 2e-3);
  // off below walking pace, and when the car has no ABS
  EXPECT_DOUBLE_EQ(braked({}, 2e7, mu, 1.5).brake_pressure[0], 2e7);
  EXPECT_DOUBLE_EQ(braked({{"abs", false}}, 2e7, mu, 25).brake_pressure[0], 2e7);
}

TEST(BusInputs, ABadDrivelineIsRefusedWithItsPointer) {
  auto c = kAwd;
  c["driveline"]["gear_ratios"] = {{"first", 3.6}};
  try {
    read(c);
    FAIL() << "accepted a gear named by a word";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("/observer/driveline/gear_ratios/first"), std::string::npos) << e.what();
  }
}
