// The aiding units of the vehicle observer on their own: a source's samples and their ages,
// its health, the GNSS unit's rows, first pose and rejection timer, the wheel unit's rows.
#include <gtest/gtest.h>

#include <cmath>

#include "mbobserver/estimation/aiding/gnss.hpp"
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
  h.account({true, 0, 1, 0.5});
  h.account({false, 0, 1, 2.0});
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

TEST(GnssAiding, TheFirstFixPlacesTheChassisBehindTheAntenna) {
  GnssAiding g(fixed_origin(), *sedan());
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

TEST(GnssAiding, OnlyARunOfRejectedPositionsLongerThanTheLimitAsksForAReset) {
  auto cfg = fixed_origin();
  cfg.reset_after_rejection_s = 0.95;
  GnssAiding g(cfg, *sedan());
  MeasurementRows rows;
  const UpdateResult rejected{false, 9, 1, 4}, accepted{true, 0.1, 1, 0.01};
  double t = 0;
  auto step = [&](const UpdateResult& u) {
    t += 0.1;
    g.gather(t, rows);  // a new step: what the last one fused is forgotten
    g.account(SensorKind::gnss_position, u);
    return g.rejected_too_long(t);
  };
  for (int k = 0; k < 10; ++k) EXPECT_FALSE(step(rejected)) << k;
  EXPECT_FALSE(step(accepted));  // one accepted fix restarts the run
  for (int k = 0; k < 10; ++k) EXPECT_FALSE(step(rejected)) << k;
  EXPECT_TRUE(step(rejected));  // 1.0 s (> 0.95 s) after the first rejection of the run
  EXPECT_FALSE(step(rejected));  // and the timer starts again
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
  w.gather(1.0, s, rows);
  ASSERT_EQ(rows.rows().size(), 2u);
  EXPECT_EQ(rows.rows()[0].row, 1);  // fr
  EXPECT_EQ(rows.rows()[1].row, 2);  // rl
  EXPECT_NEAR(rows.rows()[1].value, 65536 * teeth_angle * 3 + 10.5 * teeth_angle, 1e-9);
  EXPECT_NEAR(rows.rows()[0].value, 0.5 * teeth_angle, 1e-12);
}
