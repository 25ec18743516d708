// The false-valid rate of the experiment and eval reports (false_valid.hpp): an output counts
// on a step only when its own flag is set and an error is beyond 4 sigma or the output's bound.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "mbobserver/experiment/false_valid.hpp"

using namespace mbo;

namespace {

std::size_t output(const std::string& name) {
  const auto& outs = exp::validity_outputs();
  for (std::size_t o = 0; o < outs.size(); ++o)
    if (outs[o].name == name) return o;
  ADD_FAILURE() << "no output " << name;
  return 0;
}

}  // namespace

TEST(FalseValid, AValidOutputCountsWhenAnyOfItsErrorsIsBeyondFourSigma) {
  exp::FalseValidRate fv;
  const std::size_t pos = output("position");
  const std::vector<double> sigma = {0.1, 0.2};
  fv.add(pos, true, std::vector<double>{0.39, -0.79}, sigma);  // inside on both axes
  fv.next_step();
  fv.add(pos, true, std::vector<double>{0.0, -0.81}, sigma);  // y beyond 4 sigma_y
  fv.next_step();
  fv.add(pos, false, std::vector<double>{50.0, 50.0}, sigma);  // wrong, but not published as valid
  fv.next_step();
  fv.add(pos, true, std::vector<double>{0.41, 0.0}, sigma);  // x beyond 4 sigma_x
  fv.next_step();
  EXPECT_EQ(fv.steps(), 4u);
  EXPECT_EQ(fv.false_valid_steps(pos), 2u) << "one count per step, not per axis";
  EXPECT_DOUBLE_EQ(fv.rate(pos), 0.5);
  EXPECT_EQ(fv.false_valid_steps(output("yaw")), 0u);
}

TEST(FalseValid, NonFiniteErrorsAndSigmasAreBeyondTheBound) {
  exp::FalseValidRate fv;
  const std::size_t yaw = output("yaw");
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  fv.add(yaw, true, std::vector<double>{nan}, std::vector<double>{0.01});
  fv.next_step();
  fv.add(yaw, true, std::vector<double>{0.001}, std::vector<double>{nan});  // no sigma published
  fv.next_step();
  fv.add(yaw, true, std::vector<double>{inf}, std::vector<double>{inf});
  fv.next_step();
  EXPECT_EQ(fv.false_valid_steps(yaw), 3u);
}

TEST(FalseValid, TyreForcesWithoutSigmaUseTheirStatedAbsoluteBound) {
  const std::size_t fy = output("tyre_fy");
  const auto& out = exp::validity_outputs()[fy];
  ASSERT_FALSE(out.has_sigma());
  ASSERT_EQ(out.quantities.size(), 4u) << "one per wheel";
  EXPECT_DOUBLE_EQ(out.bound, 500.0);
  exp::FalseValidRate fv;
  const std::vector<double> unused(4, 0.0);
  fv.add(fy, true, std::vector<double>{499, -499, 0, 10}, unused);
  fv.next_step();
  fv.add(fy, true, std::vector<double>{0, 0, -501, 0}, unused);
  fv.next_step();
  EXPECT_EQ(fv.false_valid_steps(fy), 1u);
}

TEST(FalseValid, StepsWhereAnOutputIsNotScoredStillCountInTheDenominator) {
  exp::FalseValidRate fv;
  const std::size_t slip = output("sideslip");
  fv.add(slip, true, std::vector<double>{5.0}, std::vector<double>{0.1});
  fv.next_step();
  for (int i = 0; i < 3; ++i) fv.next_step();  // standing still: sideslip not scored
  EXPECT_DOUBLE_EQ(fv.rate(slip), 0.25);
}

// A flag never set never lies: valid_share says what that silence costs.
TEST(FalseValid, TheValidShareCountsTheStepsAnOutputsFlagWasSet) {
  exp::FalseValidRate fv;
  const std::size_t fx = output("tyre_fx");
  const std::vector<double> small(4, 10.0), sigma(4, 0.0);
  fv.add(fx, true, small, sigma);
  fv.next_step();
  fv.add(fx, false, small, sigma);
  fv.next_step();
  fv.add(fx, true, std::vector<double>{0, 0, 600, 0}, sigma);  // set and wrong: both counts
  fv.next_step();
  fv.next_step();  // not scored
  EXPECT_DOUBLE_EQ(fv.valid_share(fx), 0.5);
  EXPECT_DOUBLE_EQ(fv.rate(fx), 0.25);
  EXPECT_DOUBLE_EQ(fv.valid_share(output("position")), 0.0);
  EXPECT_DOUBLE_EQ(fv.report()["valid_share"]["tyre_fx"].get<double>(), 0.5);
  EXPECT_EQ(exp::validity_outputs()[fx].flag, "tyre_forces");
}

// How far wrong a valid output was: 50 m off while flagged invalid does not count, 0.81 m
// while valid does, whatever its sigma; a non-finite error while valid has no finite bound.
TEST(FalseValid, TheLargestValidErrorIsTheWorstErrorOnAStepTheFlagWasSet) {
  exp::FalseValidRate fv;
  const std::size_t pos = output("position"), yaw = output("yaw");
  const std::vector<double> sigma = {0.1, 0.2};
  fv.add(pos, true, std::vector<double>{0.39, -0.79}, sigma);
  fv.next_step();
  fv.add(pos, false, std::vector<double>{50.0, -50.0}, sigma);
  fv.next_step();
  fv.add(pos, true, std::vector<double>{0.0, -0.81}, sigma);
  fv.next_step();
  fv.add(pos, true, std::vector<double>{0.2, 0.1}, sigma);
  fv.next_step();
  EXPECT_DOUBLE_EQ(fv.largest_valid_error(pos), 0.81);
  EXPECT_DOUBLE_EQ(fv.report()["largest_valid_error"]["position"].get<double>(), 0.81);
  EXPECT_DOUBLE_EQ(fv.largest_valid_error(yaw), 0.0) << "never valid";
  fv.add(yaw, true, std::vector<double>{std::numeric_limits<double>::quiet_NaN()}, std::vector<double>{0.01});
  fv.next_step();
  fv.add(yaw, true, std::vector<double>{0.001}, std::vector<double>{0.01});
  fv.next_step();
  EXPECT_TRUE(fv.report()["largest_valid_error"]["yaw"].is_null()) << "a NaN while valid is unbounded";
}

TEST(FalseValid, TheReportGivesRateStepsAndBoundPerOutputAndLeavesOutTheSkipped) {
  exp::FalseValidRate fv;
  fv.add(output("velocity"), true, std::vector<double>{1.0, 0.0}, std::vector<double>{0.1, 0.1});
  fv.next_step();
  fv.next_step();
  std::vector<bool> skip(exp::validity_outputs().size(), false);
  skip[output("tyre_fz")] = true;
  const auto j = fv.report(skip);
  EXPECT_EQ(j["sigmas"], 4.0);
  EXPECT_EQ(j["steps"], 2);
  EXPECT_DOUBLE_EQ(j["rate"]["velocity"].get<double>(), 0.5);
  EXPECT_EQ(j["false_valid_steps"]["velocity"], 1);
  EXPECT_EQ(j["rate"]["position"], 0.0);
  EXPECT_EQ(j["bound"]["position"], "4 sigma");
  EXPECT_EQ(j["bound"]["tyre_fx"], 500.0);
  EXPECT_FALSE(j["rate"].contains("tyre_fz"));
}
