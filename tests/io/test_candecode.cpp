// mbobserver-candecode end to end: JSON per frame, unknown ids reported, exit 2 with one line
// for an unreadable DBC or log.
#include <cstdlib>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "mbobserver/io/candump.hpp"
#include "mbobserver/io/signal_map.hpp"
#include "test_util.hpp"

using ::testing::HasSubstr;

namespace {

struct Out {
  int code;
  std::string out, err;
};

Out candecode(const std::string& args, const std::string& tag) {
  auto dir = mbo::test::scratch_dir("candecode_" + tag);
  std::string cmd = MBO_CANDECODE;
  cmd.append(" ").append(args).append(" >").append(mbo::test::quote(dir / "out"));
  cmd.append(" 2>").append(mbo::test::quote(dir / "err"));
  int status = std::system(cmd.c_str());
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return {code, mbo::test::read_text(dir / "out"), mbo::test::read_text(dir / "err")};
}

int lines(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }

}  // namespace

TEST(Candecode, DecodesALogOneJsonObjectPerFrame) {
  auto dir = mbo::test::scratch_dir("candecode_log");
  auto dbc = mbo::test::source_dir() / "config/can/vehicle.dbc";
  mbo::io::SignalMap map = mbo::io::SignalMap::from_config(
      mbo::JsonReader::from_file(mbo::test::source_dir() / "config/can/vehicle_signals.json"));
  std::array<double, mbo::kChannelCount> v{};
  v[static_cast<int>(mbo::Channel::gyro_z)] = 0.25;
  std::string log;
  for (const auto& tx : map.tx_frames()) {
    mbo::io::CanFrame f;
    map.encode(tx, v, 10.5, f);
    log += mbo::io::format_candump_line(f, "can0");
  }
  log += "(10.600000) can0 7AB#0102\n";
  log += "(10.700000) can0 this-line-is-bad\n";
  log += "(10.800000) can0 20000080#0000000000000000\n";
  mbo::test::write_text(dir / "a.log", log);
  Out o = candecode("--dbc " + mbo::test::quote(dbc) + " " + mbo::test::quote(dir / "a.log"), "a");
  ASSERT_EQ(o.code, 0) << o.err;
  ASSERT_EQ(lines(o.out), 12);
  std::vector<nlohmann::json> objs;
  std::istringstream in(o.out);
  for (std::string l; std::getline(in, l);) objs.push_back(nlohmann::json::parse(l));
  nlohmann::json gyro;
  for (const auto& o : objs)
    if (o["name"] == "IMU_Gyro") gyro = o;
  EXPECT_EQ(gyro["name"], "IMU_Gyro");
  EXPECT_EQ(gyro["id"], 129);
  EXPECT_EQ(gyro["extended"], false);
  EXPECT_EQ(gyro["t"], 10.5);
  EXPECT_EQ(gyro["bus"], "can0");
  EXPECT_NEAR(gyro["signals"]["GyroZ"].get<double>(), 0.25, 1e-12);
  const auto& unknown = objs[10];
  EXPECT_EQ(unknown["id"], 0x7AB);
  EXPECT_TRUE(unknown["name"].is_null());
  EXPECT_EQ(unknown["unknown"], true);
  EXPECT_EQ(objs[11]["error"], true);
  EXPECT_THAT(o.err, HasSubstr("12 frames, 10 decoded, 1 with unknown ids (1 distinct: 0x7AB (1))"));
  EXPECT_THAT(o.err, HasSubstr("1 error frames"));
  EXPECT_THAT(o.err, HasSubstr("1 bad lines skipped"));
  EXPECT_THAT(o.err, HasSubstr("a.log:12: candump: frame: no '#' after the id"));
}

TEST(Candecode, UnreadableInputExitsTwoWithOneLine) {
  auto dbc = mbo::test::source_dir() / "config/can/vehicle.dbc";
  auto dir = mbo::test::scratch_dir("candecode_bad");
  Out a = candecode("--dbc /nonexistent.dbc " + mbo::test::quote(dbc), "bad1");
  EXPECT_EQ(a.code, 2);
  EXPECT_EQ(lines(a.err), 1) << a.err;
  EXPECT_THAT(a.err, HasSubstr("/nonexistent.dbc: cannot open DBC file"));
  Out b = candecode("--dbc " + mbo::test::quote(dbc) + " /nonexistent.log", "bad2");
  EXPECT_EQ(b.code, 2);
  EXPECT_EQ(lines(b.err), 1) << b.err;
  EXPECT_THAT(b.err, HasSubstr("/nonexistent.log: cannot open"));
  mbo::test::write_text(dir / "broken.dbc", "BO_ 1 M: 8 N\n SG_ S : 0|8@7+ (1,0) [0|0] \"\" N\n");
  Out c = candecode("--strict --dbc " + mbo::test::quote(dir / "broken.dbc") + " " + mbo::test::quote(dbc), "bad3");
  EXPECT_EQ(c.code, 2);
  EXPECT_EQ(lines(c.err), 1) << c.err;
  EXPECT_THAT(c.err, HasSubstr("broken.dbc:2: SG_: S: byte order must be @0 or @1"));
  Out d = candecode("--dbc " + mbo::test::quote(dbc) + " " + mbo::test::quote(dbc), "bad4");
  EXPECT_EQ(d.code, 2);
  EXPECT_THAT(d.err, HasSubstr("not a candump -l or Vector ASC log"));
  Out e = candecode("", "bad5");
  EXPECT_EQ(e.code, 2);
}
