// When the motion teaches a parameter (excitation.hpp): each kind's rule on the low-passed motion.
#include <cmath>

#include <gtest/gtest.h>

#include "mbobserver/estimation/excitation.hpp"

using namespace mbo::est;

TEST(Excitation, EachKindOfParameterHasItsRule) {
  EXPECT_EQ(excitation_of("gyro_bias_z"), Excitation::always);
  EXPECT_EQ(excitation_of("accel_bias_x"), Excitation::always);
  EXPECT_EQ(excitation_of("mu"), Excitation::always);
  EXPECT_EQ(excitation_of("wheel_scale_rl"), Excitation::always);
  EXPECT_EQ(excitation_of("payload_front"), Excitation::longitudinal);
  EXPECT_EQ(excitation_of("slip_stiffness"), Excitation::longitudinal);
  EXPECT_EQ(excitation_of("cornering_rear"), Excitation::lateral);
}

TEST(Excitation, TheMotionDecidesAfterItsLowPass) {
  ExcitationMonitor m;  // min_speed 3, min_accel 1, 0.2 s
  m.update(0.5, 0, 0, 0.002);  // standing: only `always`
  EXPECT_TRUE(m.excited(Excitation::always));
  for (auto e : {Excitation::longitudinal, Excitation::lateral}) EXPECT_FALSE(m.excited(e));
  // cruising at 20 m/s
  for (int k = 0; k < 1000; ++k) m.update(20, 0.1, 0.2, 0.002);
  EXPECT_FALSE(m.excited(Excitation::longitudinal));
  EXPECT_FALSE(m.excited(Excitation::lateral));
  // a single step of braking is vibration, not a manoeuvre
  m.update(20, -6, 0, 0.002);
  EXPECT_FALSE(m.excited(Excitation::longitudinal));
  // braking for a second (5 time constants), then cornering
  for (int k = 0; k < 500; ++k) m.update(20, -6, 0, 0.002);
  EXPECT_NEAR(m.a_long(), -6, 0.1);
  EXPECT_TRUE(m.excited(Excitation::longitudinal));
  for (int k = 0; k < 500; ++k) m.update(15, 0, -4, 0.002);
  EXPECT_TRUE(m.excited(Excitation::lateral));
  EXPECT_FALSE(m.excited(Excitation::longitudinal));
  // a NaN from a failed step changes nothing; a restart forgets
  m.update(std::nan(""), 0, 0, 0.002);
  EXPECT_TRUE(m.excited(Excitation::lateral));
  m.restart();
  EXPECT_FALSE(m.excited(Excitation::lateral));
  // off: every parameter always learns
  ExcitationConfig off;
  off.on = false;
  ExcitationMonitor all(off);
  EXPECT_TRUE(all.excited(Excitation::lateral));
}
