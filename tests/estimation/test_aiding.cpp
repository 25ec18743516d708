// The aiding units of the vehicle observer on their own: a source's samples and their ages,
// its health, the GNSS unit's rows, first pose and rejection timer, the wheel unit's rows.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "mbobserver/estimation/aiding/gnss.hpp"
#include "mbobserver/estimation/aiding/imu.hpp"
#include "mbobserver/estimation/aiding/model_inputs.hpp"
#include "mbobserver/estimation/aiding/standstill.hpp"
#include "mbobserver/estimation/aiding/wheel_hall.hpp"
#include "mbobserver/estimation/error_state.hpp"
#include "mbobserver/experiment/vehicle_experiment.hpp"

namespace {

using namespace mbo;
using namespace mbo::est;
using namespace mbo::est::aiding;

std::shared_ptr<const models::Vehicle> sedan() {
  static auto v =
      exp::load_vehicle_scenario(std::string(MBO_SOURCE_DIR) + "/scenarios/vehicle_double_lane_change.json").model;
  return v;
}

Measurement sample(double t, Channel c, double v) { return {t, c, v}; }

constexpr double kLat0 = 45.0, kLon0 = 9.0;

GnssConfig fixed_origin() {
  GnssConfig c;
  c.origin_from_first_fix = false;
  c.lat0 = kLat0, c.lon0 = kLon0, c.alt0 = 0;
  c.antenna = {1.0, 0.3, 1.2};
  return c;
}

// lat, lon of a point `e` m east and `n` m north of the origin
std::pair<double, double> geodetic(double e, double n) {
  GeographicLib::LocalCartesian enu(kLat0, kLon0, 0);
  double lat, lon, h;
  enu.Reverse(e, n, 0, lat, lon, h);
  return {lat, lon};
}

void push_fix(GnssAiding& g, double t, double e, double n) {
  auto [lat, lon] = geodetic(e, n);
  g.hold(sample(t, Channel::gnss_lat, lat));
  g.hold(sample(t, Channel::gnss_lon, lon));
}

}  // namespace

TEST(ErrorStateLayout, BlocksFollowEachOther) {
  const ErrorStateLayout L{7, 4, 1};
  EXPECT_EQ(L.z().offset, 0);
  EXPECT_EQ(L.zd(2), 9);
  EXPECT_EQ(L.accel(0), 14);
  EXPECT_EQ(L.input(0), 18);
  EXPECT_EQ(L.size(), 19);
  EXPECT_EQ(L.kinematic().size, 14);
}

TEST(ChannelSamples, KeepTheNewestUntilAStepAtOrAfterItTakesIt) {
  ChannelSamples<Channel::gyro_x, 3> s;
  EXPECT_TRUE(s.hold(sample(1.0, Channel::gyro_y, 0.1)));
  EXPECT_FALSE(s.hold(sample(0.9, Channel::gyro_y, 0.2)));  // older: stale, not kept
  double v = 0, t = 0;
  EXPECT_FALSE(s.take(Channel::gyro_y, 0.999, v, t));  // newer than the step
  EXPECT_TRUE(s.take(Channel::gyro_y, 1.0 - 1e-7, v, t));  // the same instant
  EXPECT_EQ(v, 0.1);
  EXPECT_FALSE(s.take(Channel::gyro_y, 2.0, v, t));  // used up
  EXPECT_EQ(s.last_taken(Channel::gyro_y), 1.0);
  EXPECT_EQ(s.last_taken(Channel::gyro_x), -1);
  EXPECT_TRUE((ChannelSamples<Channel::gyro_x, 3>::owns(Channel::gyro_z)));
  EXPECT_FALSE((ChannelSamples<Channel::gyro_x, 3>::owns(Channel::wheel_count_fl)));
}

TEST(SourceHealth, AgeTimeoutAndTheFilteredTestRatio) {
  SourceHealth h;
  h.set_timeout(0.1);
  h.update(0.0);
  EXPECT_TRUE(h.timed_out());  // nothing yet
  EXPECT_EQ(h.published().age_ms, -1);
  h.sampled(1.0);
  h.account(0, {true, 0, 1, 0.5}, 1.0);
  h.account(1, {false, 0, 1, 2.0}, 1.0);
  h.update(1.05);
  EXPECT_FALSE(h.timed_out());
  EXPECT_NEAR(h.published().age_ms, 50, 1e-9);
  EXPECT_NEAR(h.published().test_ratio, 0.2, 1e-12);  // a tenth of the step's largest
  EXPECT_EQ(h.published().fused, 1u);
  EXPECT_EQ(h.published().rejected, 1u);
  h.update(1.2);
  EXPECT_TRUE(h.timed_out());
  EXPECT_NEAR(h.published().test_ratio, 0.18, 1e-12);
}

TEST(GnssAiding, AFixBecomesEastNorthRowsWithTheReceiversSigma) {
  GnssAiding g(fixed_origin(), *sedan());
  MeasurementRows rows;
  push_fix(g, 1.0, 12.0, -5.0);
  g.gather(1.0, rows);
  ASSERT_EQ(rows.rows().size(), 2u);  // no height: no vertical row
  EXPECT_NEAR(rows.rows()[0].value, 12.0, 1e-6);
  EXPECT_NEAR(rows.rows()[1].value, -5.0, 1e-6);
  EXPECT_EQ(MeasurementRows::kind(rows.rows()[0]), SensorKind::gnss_position);
  EXPECT_NEAR(rows.rows()[0].variance, 0.02 * 0.02, 1e-15);  // the configured sigma
  rows.clear();
  push_fix(g, 1.1, 12.5, -5.0);
  g.hold(sample(1.1, Channel::gnss_std_lon, 0.5));  // GST: east sigma
  g.gather(1.1, rows);
  EXPECT_NEAR(rows.rows()[0].variance, 0.25, 1e-15);
  EXPECT_NEAR(rows.rows()[1].variance, 0.02 * 0.02, 1e-15);
}

TEST(GnssAiding, SpeedAndCourseGiveVelocityRowsAndAHeadingAboveTheMinimumSpeed) {
  GnssAiding g(fixed_origin(), *sedan());
  MeasurementRows rows;
  g.hold(sample(1.0, Channel::gnss_course, M_PI / 2));  // due east
  g.hold(sample(1.0, Channel::gnss_speed, 2.0));  // below course_min_speed (3 m/s)
  g.gather(1.0, rows);
  ASSERT_EQ(rows.rows().size(), 2u);
  EXPECT_NEAR(rows.rows()[0].value, 2.0, 1e-12);  // east
  EXPECT_NEAR(rows.rows()[1].value, 0.0, 1e-12);
  rows.clear();
  g.hold(sample(1.1, Channel::gnss_speed, 10.0));
  g.gather(1.1, rows);
  ASSERT_EQ(rows.rows().size(), 3u);
  EXPECT_EQ(MeasurementRows::kind(rows.rows()[2]), SensorKind::gnss_course);
  EXPECT_NEAR(rows.rows()[2].value, 0.0, 1e-12);  // heading east is yaw 0
  rows.clear();
  g.hold(sample(1.2, Channel::gnss_speed, 0.1));  // standing: zero velocity, whatever the course
  g.gather(1.2, rows);
  ASSERT_EQ(rows.rows().size(), 2u);
  EXPECT_EQ(rows.rows()[0].value, 0.0);
}

// A latency that varies fix to fix by sigma (gnss.latency_jitter_std) moves a fix by v sigma,
// a velocity by a sigma and the course by its rate times sigma: each row's variance grows by
// that square, v, a and the rate the receiver's own.
TEST(GnssAiding, ALatencyJitterWidensEachRowByWhatItMovesIt) {
  GnssConfig c = fixed_origin();
  c.latency_jitter_std = 0.02;
  GnssAiding g(c, *sedan());
  MeasurementRows rows;
  g.hold(sample(1.0, Channel::gnss_course, M_PI / 2));  // due east at 20 m/s
  g.hold(sample(1.0, Channel::gnss_speed, 20.0));
  g.gather(1.0, rows);
  ASSERT_EQ(rows.rows().size(), 3u);
  EXPECT_NEAR(rows.rows()[0].variance, 0.01, 1e-15);  // no acceleration known yet
  // 0.1 s later: 22 m/s, the course 0.05 rad to the right (north of east is left)
  g.hold(sample(1.1, Channel::gnss_course, M_PI / 2 + 0.05));
  g.hold(sample(1.1, Channel::gnss_speed, 22.0));
  push_fix(g, 1.1, 100.0, 0.0);
  rows.clear();
  g.gather(1.1, rows);
  ASSERT_EQ(rows.rows().size(), 5u);  // fix east, north; velocity east, north; course
  // the fix with the velocity before it: 20 m/s east
  EXPECT_NEAR(rows.rows()[0].variance, 0.02 * 0.02 + 20.0 * 20.0 * 0.02 * 0.02, 1e-12);
  EXPECT_NEAR(rows.rows()[1].variance, 0.02 * 0.02, 1e-12);
  const double ae = (22.0 * std::sin(M_PI / 2 + 0.05) - 20.0) / 0.1, an = 22.0 * std::cos(M_PI / 2 + 0.05) / 0.1;
  EXPECT_NEAR(rows.rows()[2].variance, 0.01 + ae * ae * 4e-4, 1e-9);
  EXPECT_NEAR(rows.rows()[3].variance, 0.01 + an * an * 4e-4, 1e-9);
  const double course_var = 0.01 / (22.0 * 22.0) + c.course_sideslip_std * c.course_sideslip_std;
  EXPECT_NEAR(rows.rows()[4].variance, course_var + 0.5 * 0.5 * 4e-4, 1e-12);  // 0.05 rad in 0.1 s
}

TEST(GnssAiding, TheFirstFixPlacesTheChassisBehindTheAntenna) {
  auto cfg = fixed_origin();
  cfg.start_fixes = 1;  // this fix alone
  GnssAiding g(cfg, *sedan());
  EXPECT_FALSE(g.first_fix_pose(0.5).has_value());
  push_fix(g, 1.0, 100.0, 50.0);
  g.hold(sample(1.0, Channel::gnss_course, 0.0));  // due north: yaw pi/2
  g.hold(sample(1.0, Channel::gnss_speed, 20.0));
  EXPECT_FALSE(g.first_fix_pose(0.99).has_value());  // the fix is not in yet
  auto pose = g.first_fix_pose(1.0);
  ASSERT_TRUE(pose.has_value());
  EXPECT_NEAR(pose->yaw, M_PI / 2, 1e-12);
  EXPECT_EQ(pose->speed, 20.0);
  // antenna = chassis + rotation(yaw) * arm (horizontal part)
  const Eigen::Vector3d arm = sedan()->chassis_local(fixed_origin().antenna);
  EXPECT_NEAR(pose->x - arm.y(), 100.0, 1e-6);
  EXPECT_NEAR(pose->y + arm.x(), 50.0, 1e-6);
}

// A reset starts from the last fix with the receiver's speed, which has no sign, and its course,
// where the antenna moves. Backing up (the model's speed < 0), the car heads against its course
// and moves backwards: started forward, the mixed drive's reversing in the car park was reset
// twice more within a second, 1 m off.
TEST(GnssAiding, AResetWhileReversingKeepsTheCarBackingUp) {
  GnssAiding g(fixed_origin(), *sedan());
  MeasurementRows rows;
  push_fix(g, 1.0, 100.0, 50.0);
  g.hold(sample(1.0, Channel::gnss_course, 0.0));  // moving due north
  g.hold(sample(1.0, Channel::gnss_speed, 5.0));
  g.gather(1.0, rows);
  models::VehicleStart forward, backing;
  forward.speed = 4.0, backing.speed = -4.0;  // the model's, before the reset
  ASSERT_TRUE(g.pose_from_recent_fix(1.0, forward));
  ASSERT_TRUE(g.pose_from_recent_fix(1.0, backing));
  EXPECT_NEAR(forward.yaw, M_PI / 2, 1e-12);  // facing north
  EXPECT_EQ(forward.speed, 5.0);
  EXPECT_NEAR(std::abs(backing.yaw), M_PI / 2, 1e-12);  // facing south
  EXPECT_LT(backing.yaw, 0.0);
  EXPECT_EQ(backing.speed, -5.0);
  // the same antenna position either way: the chassis sits behind it along its own heading
  const Eigen::Vector3d arm = sedan()->chassis_local(fixed_origin().antenna);
  EXPECT_NEAR(forward.y + arm.x(), backing.y - arm.x(), 1e-6);
}

TEST(GnssAiding, ARunOfRejectedPositionsOnAnyAxisLongerThanTheLimitAsksForAReset) {
  auto cfg = fixed_origin();
  cfg.reset_after_rejection_s = 0.95;
  GnssAiding g(cfg, *sedan());
  MeasurementRows rows;
  const UpdateResult rejected{false, 9, 1, 4}, accepted{true, 0.1, 1, 0.01};
  double t = 0;
  auto step = [&](const UpdateResult& u) {
    t += 0.1;
    g.gather(t, rows);
    g.account(ScalarMeasurement{static_cast<int>(SensorKind::gnss_position), 1, 0, 1, 5}, u, t);  // north
    return g.rejected_too_long(t);
  };
  for (int k = 0; k < 10; ++k) EXPECT_FALSE(step(rejected)) << k;
  EXPECT_FALSE(step(accepted));  // one accepted fix restarts the run
  for (int k = 0; k < 10; ++k) EXPECT_FALSE(step(rejected)) << k;
  EXPECT_TRUE(step(rejected));  // 1.0 s (> 0.95 s) after the first rejection of the run
  g.restart();  // the observer resets the model to the fix and starts the unit again
  EXPECT_FALSE(step(rejected));
}

TEST(GnssAiding, OneMultipathFixDoesNotStartTheObserverOnlyFixesThatAgreeDo) {
  GnssAiding g(fixed_origin(), *sedan());  // start_fixes 3
  const double v = 20, dt = 0.02;  // 20 m/s due east, 50 Hz
  double t = 1.0;
  auto fix = [&](double e_offset) {
    push_fix(g, t, v * (t - 1.0) + e_offset, 0.0);
    g.hold(sample(t, Channel::gnss_speed, v));
    g.hold(sample(t, Channel::gnss_course, M_PI / 2));
    auto pose = g.first_fix_pose(t);
    t += dt;
    return pose;
  };
  EXPECT_FALSE(fix(50.0));  // the first fix 50 m east of where the car is
  EXPECT_FALSE(fix(0.0));  // disagrees with it: the count starts again here
  EXPECT_FALSE(fix(0.0));
  const auto pose = fix(0.0);  // the third fix in a row that agrees
  ASSERT_TRUE(pose.has_value());
  const Eigen::Vector3d arm = sedan()->chassis_local(fixed_origin().antenna);
  EXPECT_NEAR(pose->x + arm.x(), v * 0.06, 1e-3);  // antenna east = chassis + arm (yaw 0)
}

TEST(SourceHealth, ARowIsInconsistentOnARunOfRejectionsOrALargeFilteredNis) {
  SourceHealth h;
  h.set_timeout(1);
  MonitorConfig c;  // tau 0.2 s, limit 9, 2 rejections
  h.set_monitor(c);
  const UpdateResult fine{true, 1.0, 1.0, 0.04}, outlier{false, 100.0, 1.0, 400};
  double t = 0;
  h.update(t);
  EXPECT_TRUE(h.consistent());  // no sample yet: nothing to say
  for (int k = 0; k < 50; ++k) h.account(0, fine, t += 0.02), h.update(t);
  EXPECT_TRUE(h.consistent());
  EXPECT_NEAR(h.nis(), 1.0, 1e-9);
  h.account(0, outlier, t += 0.02), h.update(t);
  EXPECT_FALSE(h.consistent());  // capped at 100, one sample moves the low-pass above 9
  h.account(0, fine, t += 0.02), h.update(t);
  EXPECT_FALSE(h.consistent());
  for (int k = 0; k < 30; ++k) h.account(0, fine, t += 0.02), h.update(t);
  EXPECT_TRUE(h.consistent());  // it fades within a few time constants
  // a row with samples is consistent once five in a row are accepted (settle_samples)
  for (int k = 0; k < 4; ++k) h.account(1, fine, t += 0.02), h.update(t);
  EXPECT_FALSE(h.consistent());
  h.account(1, fine, t += 0.02), h.update(t);
  EXPECT_TRUE(h.consistent());
  // two rejections in a row, even of small innovations, are inconsistent at once
  const UpdateResult gated{false, 1.0, 1.0, 1.1};
  h.account(1, gated, t += 0.02), h.update(t);
  EXPECT_FALSE(h.consistent());  // one rejection: not yet five accepted since
  for (int k = 0; k < 5; ++k) h.account(1, fine, t += 0.02), h.update(t);
  EXPECT_TRUE(h.consistent());
  h.account(1, gated, t += 0.02), h.account(1, gated, t += 0.02), h.update(t);
  EXPECT_EQ(h.row(1).rejected_in_a_row(), 2);
  // a reset of the row's state (a wheel reset to its counts) settles again
  h.restart_row(1);
  h.update(t);
  EXPECT_FALSE(h.consistent());
  for (int k = 0; k < 5; ++k) h.account(1, fine, t += 0.02), h.update(t);
  EXPECT_TRUE(h.consistent());
}

TEST(WheelHallAiding, CountsBecomeOneRowPerWheelNearTheModelsAngle) {
  auto v = sedan();
  WheelHallAiding w(WheelSensorConfig{}, *v);
  mb::State s = mb::initial_state(v->model);
  const double teeth_angle = 2 * M_PI / 40;
  s.q[v->wheels[2].spin] = 65536 * teeth_angle * 3 + 10.2 * teeth_angle;  // three counter wraps on
  MeasurementRows rows;
  w.hold(sample(1.0, Channel::wheel_count_rl, 10));
  w.hold(sample(1.0, Channel::wheel_count_fr, 0));
  w.gather(1.0, s, models::VehicleInputs{}, Eigen::VectorXd(), rows);
  ASSERT_EQ(rows.rows().size(), 2u);
  EXPECT_EQ(rows.rows()[0].row, 1);  // fr
  EXPECT_EQ(rows.rows()[1].row, 2);  // rl
  EXPECT_NEAR(rows.rows()[1].value, 65536 * teeth_angle * 3 + 10.5 * teeth_angle, 1e-9);
  EXPECT_NEAR(rows.rows()[0].value, 0.5 * teeth_angle, 1e-12);
}

TEST(ModelInputs, AnInputOnItsDbcLimitOrJumpingFasterThanPhysicsKeepsItsLastPlausibleValue) {
  ModelInputs in(InputsConfig{});  // steering at most 200 deg/s at the road wheel
  auto steer = [&](double t, double deg, std::uint8_t flags = 0) {
    in.hold({t, Channel::steer_angle, deg * M_PI / 180, flags});
    in.gather(t);
    return in.inputs().steer * 180 / M_PI;
  };
  EXPECT_NEAR(steer(0.00, 2.0), 2.0, 1e-12);
  EXPECT_NEAR(steer(0.01, 3.5), 3.5, 1e-12);  // 150 deg/s: a driver can do that
  EXPECT_FALSE(in.implausible());
  EXPECT_NEAR(steer(0.02, 65.534, kAtLimit), 3.5, 1e-12);  // on the DBC's limit: a glitch
  EXPECT_TRUE(in.implausible());
  EXPECT_NEAR(steer(0.03, 30.0), 3.5, 1e-12);  // 26.5 deg in 20 ms: no car steers that fast
  EXPECT_NEAR(steer(0.04, 4.0), 4.0, 1e-12);  // back within reach of the last plausible value
  EXPECT_FALSE(in.implausible());
  EXPECT_EQ(in.implausible_samples(), 2u);
  // a brake pressure of zero is at the DBC's minimum and is no glitch: decoding does not flag
  // it (io/signal_map.cpp), and a pressure step of 150 bar in 10 ms is within 30000 bar/s
  in.hold({0.05, Channel::brake_pressure_fl, 150e5, 0});
  in.gather(0.05);
  EXPECT_EQ(in.inputs().brake_pressure[0], 150e5);
}

// The mixed drive's car park: the angle was held for 0.18 s (it moved faster than a steering
// can), then came back 0.64 rad from the held one, within reach of it after so long. Taken in
// one step the model's driving constraint could not follow (Newton failed, a reset, the open
// loop's too); the model's wheels now turn there at max_steer_rate, and the rate they are told
// is no faster either.
TEST(ModelInputs, AnAngleThatComesBackFarFromTheHeldOneIsReachedAtTheFastestSteeringRate) {
  const InputsConfig c;
  ModelInputs in(c);
  const double dt = 0.002;
  double t = 0;
  for (; t < 0.1; t += dt) in.hold({t, Channel::steer_angle, 0.063, 0}), in.gather(t);
  in.hold({t, Channel::steer_angle, 0.5, 0});  // 0.44 rad in 2 ms: held
  in.gather(t);
  EXPECT_TRUE(in.implausible());
  EXPECT_NEAR(in.inputs().steer, 0.063, 1e-12);
  for (t += dt; t < 0.28; t += dt) in.gather(t);  // silent while held
  in.hold({t, Channel::steer_angle, 0.68, 0});  // within 3.5 rad/s x 0.18 s of 0.063
  in.gather(t);
  EXPECT_FALSE(in.implausible());
  double before = in.inputs().steer;
  EXPECT_NEAR(before, 0.063 + c.max_steer_rate * dt, 1e-9);  // one step's reach, not 0.62 rad
  EXPECT_LE(std::abs(in.inputs().steer_rate), c.max_steer_rate);
  int steps = 1;
  for (; in.inputs().steer < 0.68 - 1e-12 && steps < 1000; ++steps) {
    t += dt;
    in.gather(t);
    EXPECT_LE(in.inputs().steer - before, c.max_steer_rate * dt + 1e-12);
    before = in.inputs().steer;
  }
  EXPECT_NEAR(steps, 0.617 / (c.max_steer_rate * dt), 2);  // there in 0.18 s
}

TEST(ModelInputs, TheSteeringAngleIsCarriedToTheStepsTimeWithItsRateForAtMostTwentyMs) {
  ModelInputs in(InputsConfig{});
  // a ramp of 10 deg/s sampled at 100 Hz, taken by 500 Hz steps
  for (int k = 0; k < 20; ++k) in.hold({0.01 * k, Channel::steer_angle, 0.1 * k * M_PI / 180, 0}), in.gather(0.01 * k);
  const double rate = in.inputs().steer_rate * 180 / M_PI;
  EXPECT_NEAR(rate, 10.0, 0.02);  // the low-pass of a constant rate tends to that rate
  in.gather(0.196);  // 6 ms after the last sample (1.9 deg): 1.96 deg, not 1.9
  EXPECT_NEAR(in.inputs().steer * 180 / M_PI, 1.9 + 0.006 * rate, 1e-9);
  EXPECT_NEAR(in.inputs().steer * 180 / M_PI, 1.96, 2e-4);
  in.gather(0.5);  // a silent input is carried no further than 20 ms
  EXPECT_NEAR(in.inputs().steer * 180 / M_PI, 1.9 + 0.02 * rate, 1e-9);
}

// inputs.latency_s: a steering angle that reaches the observer 20 ms after it was read is the
// angle of 20 ms ago; carried over that too, a ramp's angle at the step is its own, not 0.2 deg
// behind. Silent, it is carried no further than the latency plus the 20 ms of a held sample.
TEST(ModelInputs, ALateSteeringAngleIsCarriedOverItsLatency) {
  InputsConfig c;
  c.latency_s = 0.02;
  ModelInputs late(c), on_time(InputsConfig{});
  auto truth_deg = [](double t) { return 10.0 * t; };  // 10 deg/s
  for (int k = 0; k < 20; ++k) {
    const double t = 0.01 * k;  // arrival; each sample was read 20 ms before
    late.hold({t, Channel::steer_angle, truth_deg(t - 0.02) * M_PI / 180, 0});
    late.gather(t);
    on_time.hold({t, Channel::steer_angle, truth_deg(t - 0.02) * M_PI / 180, 0});
    on_time.gather(t);
  }
  const double rate = late.inputs().steer_rate * 180 / M_PI;  // 9.989: the low-pass of 10 deg/s
  late.gather(0.196);
  on_time.gather(0.196);
  EXPECT_NEAR(late.inputs().steer * 180 / M_PI, truth_deg(0.17) + 0.026 * rate, 1e-9);
  EXPECT_NEAR(late.inputs().steer * 180 / M_PI, truth_deg(0.196), 1e-3);
  EXPECT_NEAR(on_time.inputs().steer * 180 / M_PI, truth_deg(0.196) - 0.2, 1e-3);  // the latency's lag
  late.gather(0.5);  // last sample read at 0.17: carried to 0.17 + 0.02 + 0.02
  EXPECT_NEAR(late.inputs().steer * 180 / M_PI, truth_deg(0.17) + 0.04 * rate, 1e-9);
  EXPECT_THROW(read_inputs_config(JsonReader(nlohmann::json{{"latency_s", 0.5}}, "inputs")), std::exception);
}

TEST(ImuAiding, AGyroThatRepeatsItsValueIsStuckAndNotFused) {
  ImuConfig c;
  c.gyro_axes = {false, false, true};
  ImuAiding imu(c, *sedan());
  MeasurementRows rows;
  double t = 0;
  int fused = 0;
  for (int k = 0; k < 100; ++k, t += 0.002) {  // 0.2 s at 500 Hz, the value frozen after 0.1 s
    const double rate = k < 50 ? 0.01 * std::sin(0.3 * k) : 0.0123;
    imu.hold({t, Channel::gyro_z, rate});
    rows.clear();
    imu.gather(t, rows);
    fused += static_cast<int>(rows.rows().size());
  }
  // the frozen value is fused until it has repeated for stuck_after_s (0.05 s): 25 samples
  EXPECT_EQ(fused, 50 + 25);
  EXPECT_EQ(imu.health(SensorKind::gyroscope).published().implausible, 25u);
}

TEST(WheelHallAiding, ACounterThatStopsOnAFreeRollingWheelIsStuckButALockedWheelIsNot) {
  auto v = sedan();
  const double tooth = 2 * M_PI / 40;
  auto run = [&](double brake_pa) {
    WheelHallAiding w(WheelSensorConfig{}, *v);
    mb::State s = mb::initial_state(v->model);
    models::VehicleInputs in{};
    in.brake_pressure.fill(brake_pa);
    MeasurementRows rows;
    int fl_rows = 0;
    for (int k = 0; k < 40; ++k) {
      const double t = 0.002 * k, angle = 70.0 * t;  // the model's wheels turn at 70 rad/s
      for (int wh = 0; wh < 4; ++wh) s.q[v->wheels[wh].spin] = angle;
      for (int wh = 0; wh < 4; ++wh) {
        const double counted = wh == 0 && k >= 10 ? 70.0 * 0.018 : angle;  // FL stops at 18 ms
        w.hold({t, static_cast<Channel>(index_of(Channel::wheel_count_fl) + wh), std::floor(counted / tooth)});
      }
      rows.clear();
      w.gather(t, s, in, Eigen::VectorXd(), rows);
      for (const auto& r : rows.rows()) fl_rows += r.row == 0;
    }
    return std::pair{fl_rows, w.stuck(0)};
  };
  const auto [free_rows, free_stuck] = run(0);
  EXPECT_TRUE(free_stuck);
  EXPECT_LT(free_rows, 20);  // not fused once the model has turned 3 teeth past the last count
  const auto [braked_rows, braked_stuck] = run(50e5);  // 50 bar: a wheel may lock
  EXPECT_FALSE(braked_stuck);
  EXPECT_EQ(braked_rows, 40);
}

TEST(GnssAiding, FixesAgreeWithinTheReceiversOwnSigma) {
  // A single-frequency receiver (GST 1 m) scatters its fixes by metres: they still agree.
  GnssAiding g(fixed_origin(), *sedan());
  const double scatter[] = {0.0, 1.6, -1.2, 0.9};  // east offsets of about 1 sigma
  double t = 1.0;
  std::optional<models::VehicleStart> pose;
  for (double e : scatter) {
    push_fix(g, t, e, 0.0);
    g.hold(sample(t, Channel::gnss_std_lat, 1.0));
    g.hold(sample(t, Channel::gnss_std_lon, 1.0));
    g.hold(sample(t, Channel::gnss_speed, 0.0));
    pose = g.first_fix_pose(t);
    t += 0.1;
  }
  EXPECT_TRUE(pose.has_value());
  // with the configured 2 cm the same fixes would never agree
  auto tight = fixed_origin();
  tight.use_gst = false;
  GnssAiding h(tight, *sedan());
  t = 1.0;
  for (double e : scatter) {
    push_fix(h, t, e, 0.0);
    h.hold(sample(t, Channel::gnss_speed, 0.0));
    pose = h.first_fix_pose(t);
    t += 0.1;
  }
  EXPECT_FALSE(pose.has_value());
}

// A row's innovation bias (RowMonitor::bias): a persistent offset of half the innovation's
// sigma is found within a few seconds at 50 Hz, its size to the noise's precision; white
// innovations show none (at 3 standard errors, about one sample in 370 by chance); rejected
// rows do not count; a restart forgets.
TEST(RowMonitorBias, FindsAPersistentOffsetAndNotTheNoise) {
  aiding::MonitorConfig c;  // 2 s, 3 standard errors
  std::mt19937_64 rng(4);
  std::normal_distribution<double> noise(0, 1);
  const double S = 0.02 * 0.02;
  aiding::RowMonitor biased, white;
  int white_flagged = 0;
  for (int k = 0; k < 1000; ++k) {  // 20 s at 50 Hz
    const double t = 0.02 * k;
    UpdateResult u;
    u.accepted = true;
    u.variance = S;
    u.innovation = 0.01 + 0.02 * noise(rng);
    biased.update(u, t, c);
    u.innovation = 0.02 * noise(rng);
    white.update(u, t, c);
    if (k > 100) white_flagged += white.bias(c) > 0;
  }
  EXPECT_NEAR(biased.bias(c), 0.01, 0.004);
  EXPECT_LT(white_flagged, 30) << "of 899 steps";
  UpdateResult rejected;
  rejected.accepted = false;
  rejected.variance = S;
  rejected.innovation = 5.0;
  for (int k = 0; k < 10; ++k) white.update(rejected, 20 + 0.02 * k, c);
  EXPECT_LT(white.bias(c), 0.01) << "a rejected row is no evidence of a bias";
  biased.restart(false);
  EXPECT_EQ(biased.bias(c), 0.0);
}

namespace {

// A standstill unit fusing the z gyro, Hall counters wrapping at 65536, a receiver of 0.1 m/s.
StandstillAiding standstill_unit(const StandstillConfig& c = {}) {
  return StandstillAiding(c, *sedan(), Eigen::Matrix3d::Identity(), {false, false, true}, {65536, 65536, 65536, 65536},
                          0.1, 0.0002);
}

// Four counters at `counts` (+ per-wheel offsets) at time t, and the gyro's z rate.
void push_wheels(StandstillAiding& s, double t, double counts, double gyro_z = 0.001) {
  for (int w = 0; w < 4; ++w) s.observe(sample(t, static_cast<Channel>(index_of(Channel::wheel_count_fl) + w), counts));
  s.observe(sample(t, Channel::gyro_z, gyro_z));
}

}  // namespace

// The car stands once its four counters have not moved (beyond a toggling tooth) for
// still_for_s; then one zero-rate row per fused gyro axis. A counter that counts on, a receiver
// whose speed is beyond its noise, a model still sliding or a gyro that turns each say it
// moves.
TEST(StandstillAiding, StillCountersForTheirTimeMakeAZeroRateRowUnlessAnotherSourceSaysItMoves) {
  auto s = standstill_unit();
  const double still = s.config().still_for_s;
  for (int k = 0; k <= 100; ++k) push_wheels(s, 0.01 * k, 65535 + (k % 2));  // toggling at the wrap
  EXPECT_FALSE(s.decide(0.5, 0.0)) << "not yet still for " << still << " s";
  for (int k = 101; k <= 150; ++k) push_wheels(s, 0.01 * k, 65535 + (k % 2));
  ASSERT_TRUE(s.decide(1.5, 0.0));
  MeasurementRows rows;
  s.gather(rows);
  ASSERT_EQ(rows.rows().size(), 1u);
  EXPECT_EQ(MeasurementRows::kind(rows.rows()[0]), SensorKind::standstill);
  EXPECT_EQ(rows.rows()[0].row, 2);
  EXPECT_EQ(rows.rows()[0].value, 0.0);
  EXPECT_FALSE(s.decide(1.5, 0.3)) << "the model is still moving";
  // a receiver at rest reads its noise: 0.3 m/s is 3 sigma, no veto; 0.6 m/s is one
  s.observe(sample(1.5, Channel::gnss_speed, 0.3));
  EXPECT_TRUE(s.decide(1.51, 0.0));
  s.observe(sample(1.52, Channel::gnss_speed, 0.6));
  EXPECT_FALSE(s.decide(1.53, 0.0));
  for (int k = 153; k <= 255; ++k) push_wheels(s, 0.01 * k, 65535);
  EXPECT_FALSE(s.decide(1.52 + still - 0.01, 0.0)) << "its veto lasts still_for_s";
  EXPECT_TRUE(s.decide(1.52 + still + 0.01, 0.0));
  // a gyro turning at 0.05 rad/s (a creep on full lock no tooth shows)
  push_wheels(s, 2.6, 65535, 0.05);
  EXPECT_FALSE(s.decide(2.6, 0.0));
  // counting on: two teeth from where the still time began
  auto t = standstill_unit();
  for (int k = 0; k <= 150; ++k) push_wheels(t, 0.01 * k, k < 140 ? 100 : 102);
  EXPECT_FALSE(t.decide(1.5, 0.0));
  // counters that stop arriving (timed out) say nothing: not standing
  auto u = standstill_unit();
  for (int k = 0; k <= 150; ++k) push_wheels(u, 0.01 * k, 100);
  EXPECT_TRUE(u.decide(1.5, 0.0));
  EXPECT_FALSE(u.decide(2.0, 0.0));
  // and nothing at all when off
  StandstillConfig off;
  off.use = false;
  auto v = standstill_unit(off);
  for (int k = 0; k <= 150; ++k) push_wheels(v, 0.01 * k, 100);
  EXPECT_FALSE(v.decide(1.5, 0.0));
}

// A car pulling away on a turned wheel turns before any tooth or max_gyro_rate shows it: the
// gyro leaving its mean at rest by 5 of its sigmas (0.001 rad/s here) ends the stop, whatever
// its bias; its noise within 3 sigma does not.
TEST(StandstillAiding, AGyroLeavingItsMeanAtRestEndsTheStopBeforeTheWheelsTurn) {
  auto s = standstill_unit();
  const double bias = 0.008, sigma = 0.0002;
  for (int k = 0; k <= 200; ++k) push_wheels(s, 0.01 * k, 100, bias + 3 * sigma * ((k % 3) - 1));
  ASSERT_TRUE(s.decide(2.0, 0.0)) << "a gyro at its bias with noise within 3 sigma stands";
  // from 2.0 s the chassis turns at 0.02 rad/s per second: 0.004 rad/s at 2.2 s, a fifth of
  // max_gyro_rate, and no counter moves
  double left_at = -1;
  for (int k = 201; k <= 220; ++k) {
    const double t = 0.01 * k;
    push_wheels(s, t, 100, bias + 0.02 * (t - 2.0));
    if (left_at < 0 && !s.decide(t, 0.0)) left_at = t;
  }
  ASSERT_GT(left_at, 0) << "still standing while turning at 0.004 rad/s";
  EXPECT_LE(left_at, 2.061) << "the rate passed 0.001 rad/s at 2.05 s";
  // without the test (gyro_change_sigma 0) only max_gyro_rate ends it
  StandstillConfig no_test;
  no_test.gyro_change_sigma = 0;
  auto u = standstill_unit(no_test);
  for (int k = 0; k <= 220; ++k) {
    const double t = 0.01 * k;
    push_wheels(u, t, 100, bias + (t > 2.0 ? 0.02 * (t - 2.0) : 0.0));
  }
  EXPECT_TRUE(u.decide(2.2, 0.0));
}

// A production bus: the ABS unit's wheel speeds read 0 (their signals stop below walking
// pace), its reference speed too.
TEST(StandstillAiding, WheelSpeedsAtZeroOnAProductionBusMakeItStand) {
  auto s = standstill_unit();
  for (int k = 0; k <= 120; ++k) {
    const double t = 0.01 * k;
    for (int w = 0; w < 4; ++w) s.observe(sample(t, static_cast<Channel>(index_of(Channel::wheel_speed_fl) + w), 0.0));
    s.observe(sample(t, Channel::vehicle_speed, k < 10 ? 1.0 : 0.0));
  }
  EXPECT_FALSE(s.decide(1.05, 0.0)) << "the reference speed was 1 m/s until 0.09 s";
  EXPECT_TRUE(s.decide(1.2, 0.0));
}
