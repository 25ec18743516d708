// A drive simulated onto a production car's bus (issue 20: wheel speeds at 50 Hz in 0.03 km/h
// steps, the steering-wheel angle at a ratio of 15.5, engine torque and gear, the
// master-cylinder pressure on can0; IMU and GNSS on can1, where id 128 means something else)
// replays through the daemon as accurately as the Hall-count bus of the same manoeuvre; its
// records carry WGS84 positions that round-trip to the ENU ones.
#include <cmath>
#include <string>

#include <gtest/gtest.h>
#include <GeographicLib/LocalCartesian.hpp>

#include "harness.hpp"

using namespace mbo::dtest;

TEST(ProductionBus, LaneChangeReplaysWithinOneAndAHalfOfTheHallBus) {
  const fs::path config = fs::path(MBO_SOURCE_DIR) / "config" / "production_example.json";
  const Replay r = replay(config, MBO_PROD_LOG, "prod");
  ASSERT_EQ(r.result.code, 0) << r.result.err;
  EXPECT_EQ(r.summary["frames"]["decoded"], r.summary["frames"]["received"]);  // both buses, id 128 twice
  EXPECT_GT(r.summary["valid_steps"].get<double>(), 0.95 * r.summary["steps"].get<double>());
  EXPECT_GT(r.summary["sensors"]["wheel_speeds"]["fused"].get<double>(), 1500);
  EXPECT_EQ(r.summary["sensors"]["wheels"]["fused"], 0);
  const Result eval = run(
      MBO_EVAL, {"--truth", MBO_PROD_TRUTH, "--estimates", r.record.string(), "--metrics-from", "0.5"}, "prod_eval");
  ASSERT_EQ(eval.code, 0) << eval.err;
  const json rmse = json::parse(eval.out)["rmse"]["observer"];
  // the Hall-count bus of this manoeuvre (README): x 0.0027, y 0.0042 m, sideslip 0.0113 deg,
  // tyre Fx about 6 N; targets 1.5x for position and sideslip, 2x for Fx
  EXPECT_LT(rmse["x"].get<double>(), 1.5 * 0.0027);
  EXPECT_LT(rmse["y"].get<double>(), 1.5 * 0.0042);
  EXPECT_LT(rmse["sideslip_deg"].get<double>(), 1.5 * 0.0113);
  for (const char* w : {"fl", "fr", "rl", "rr"})
    EXPECT_LT(rmse[std::string("tyre_fx_") + w].get<double>(), 2 * 6.0) << w;

  // lat, lon, alt and the origin: back to East-North-Up within a millimetre
  std::size_t checked = 0;
  for (const auto& line : lines_of(r.record)) {
    const json e = json::parse(line);
    if (!e["health"]["valid"].get<bool>()) continue;
    const json& o = e["origin"];
    const GeographicLib::LocalCartesian enu(o["lat"].get<double>(), o["lon"].get<double>(), o["alt"].get<double>());
    double x = 0, y = 0, z = 0;
    const json& s = e["state"];
    enu.Forward(s["lat"].get<double>(), s["lon"].get<double>(), s["alt"].get<double>(), x, y, z);
    ASSERT_LT(std::hypot(x - s["x"].get<double>(), y - s["y"].get<double>(), z - s["z"].get<double>()), 1e-3) << line;
    ++checked;
  }
  EXPECT_GT(checked, 3000u);
}
