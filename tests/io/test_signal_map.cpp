// The "can" config section: mapping DBC signals to channels with units; errors name the
// config file and the JSON pointer; decode and encode are inverse.
#include <cmath>
#include <cstring>
#include <numbers>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "mbobserver/io/signal_map.hpp"
#include "test_util.hpp"

using namespace mbo::io;
using mbo::Channel;
using ::testing::HasSubstr;

namespace {

std::filesystem::path example() { return mbo::test::source_dir() / "config/can/vehicle_signals.json"; }

// A config next to a copy of vehicle.dbc, with `signals` as the "signals" object.
std::string config_error(const std::string& name, const std::string& signals, const std::string& extra = "") {
  auto dir = mbo::test::scratch_dir("signal_map");
  std::filesystem::copy_file(mbo::test::source_dir() / "config/can/vehicle.dbc", dir / "vehicle.dbc",
                             std::filesystem::copy_options::overwrite_existing);
  mbo::test::write_text(dir / "odd.dbc",
                        "BO_ 1 Odd: 8 N\n"
                        " SG_ Angle : 0|16@1- (0.01,0) [0|0] \"Unit_DegreOfArc\" N\n"
                        " SG_ Rate : 16|16@1- (0.01,0) [0|0] \"\" N\n");
  mbo::test::write_text(dir / name,
                        "{\"dbc\": [\"vehicle.dbc\", \"odd.dbc\"]" + extra + ", \"signals\": " + signals + "}");
  try {
    SignalMap::from_config(mbo::JsonReader::from_file(dir / name));
  } catch (const mbo::ConfigError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST(SignalMap, ExampleConfigMapsEveryChannel) {
  SignalMap map = SignalMap::from_config(mbo::JsonReader::from_file(example()));
  // every channel of the simulated car's bus (the production-bus channels have their own config)
  const std::size_t hall_bus = static_cast<std::size_t>(Channel::gnss_fix_quality) + 1;
  EXPECT_EQ(map.mappings().size(), hall_bus);
  for (std::size_t c = 0; c < hall_bus; ++c)
    EXPECT_NE(map.mapping(static_cast<Channel>(c)), nullptr) << mbo::kChannelNames[c];
  EXPECT_EQ(map.counter_modulus(Channel::wheel_count_rr), 65536u);
  EXPECT_FALSE(map.counter_modulus(Channel::gyro_z).has_value());
  EXPECT_DOUBLE_EQ(map.mapping(Channel::steer_angle)->scale, std::numbers::pi / 180);
  EXPECT_DOUBLE_EQ(map.mapping(Channel::brake_pressure_fl)->scale, 1e5);
  EXPECT_DOUBLE_EQ(map.mapping(Channel::gnss_lat)->scale, 1.0);
  ASSERT_EQ(map.interfaces().size(), 1u);
  EXPECT_EQ(map.interfaces()[0].name, "can0");
  EXPECT_EQ(map.filter_ids().size(), 10u);
  EXPECT_EQ(map.tx_frames().size(), 10u);
  EXPECT_EQ(map.max_per_frame(), 4u);
}

TEST(SignalMap, EncodeThenDecodeGivesTheChannelValues) {
  SignalMap map = SignalMap::from_config(mbo::JsonReader::from_file(example()));
  std::array<double, mbo::kChannelCount> v{};
  v[static_cast<int>(Channel::accel_x)] = 9.80665;
  v[static_cast<int>(Channel::gyro_z)] = -0.123456;
  v[static_cast<int>(Channel::wheel_count_fl)] = 65536.0 * 3 + 17;  // wraps
  v[static_cast<int>(Channel::steer_angle)] = 0.1;
  v[static_cast<int>(Channel::brake_pressure_rr)] = 4.5e6;
  v[static_cast<int>(Channel::gnss_lat)] = 48.117300123456789;
  v[static_cast<int>(Channel::gnss_course)] = 6.0;
  v[static_cast<int>(Channel::gnss_fix_quality)] = 4;
  std::array<double, mbo::kChannelCount> got{};
  got.fill(std::nan(""));
  std::vector<mbo::Measurement> out(map.max_per_frame());
  for (const auto& tx : map.tx_frames()) {
    mbo::io::CanFrame f;
    EXPECT_TRUE(map.encode(tx, v, 1.25, f));
    std::size_t n = map.decode(f, out);
    EXPECT_EQ(n, tx.mappings.size());
    for (std::size_t i = 0; i < n; ++i) {
      EXPECT_EQ(out[i].t, 1.25);
      got[static_cast<std::size_t>(out[i].channel)] = out[i].value;
    }
  }
  EXPECT_NEAR(got[static_cast<int>(Channel::accel_x)], 9.80665, 0.5e-4);
  EXPECT_NEAR(got[static_cast<int>(Channel::gyro_z)], -0.123456, 0.5e-5);
  EXPECT_EQ(got[static_cast<int>(Channel::wheel_count_fl)], 17);
  EXPECT_NEAR(got[static_cast<int>(Channel::steer_angle)], 0.1, 0.001 * std::numbers::pi / 180);
  EXPECT_NEAR(got[static_cast<int>(Channel::brake_pressure_rr)], 4.5e6, 500);
  EXPECT_EQ(got[static_cast<int>(Channel::gnss_lat)], 48.117300123456789);  // IEEE double
  EXPECT_NEAR(got[static_cast<int>(Channel::gnss_course)], 6.0, 0.5e-4);
  EXPECT_EQ(got[static_cast<int>(Channel::gnss_fix_quality)], 4);
  for (std::size_t c = 0; c <= static_cast<std::size_t>(Channel::gnss_fix_quality); ++c)
    EXPECT_FALSE(std::isnan(got[c])) << c;
  // Unmapped ids, remote and error frames give nothing.
  mbo::io::CanFrame other;
  other.id = 0x7AB;
  other.len = 8;
  EXPECT_EQ(map.decode(other, out), 0u);
  other.id = 0x080;
  other.remote = true;
  EXPECT_EQ(map.decode(other, out), 0u);
}

TEST(SignalMap, ErrorsNameTheConfigFileAndPointer) {
  EXPECT_THAT(config_error("a.json", R"({"gyro_z": {"signal": "IMU_Gyr.GyroZ"}})"),
              HasSubstr("a.json: /signals/gyro_z/signal: no message \"IMU_Gyr\""));
  EXPECT_THAT(config_error("b.json", R"({"gyro_z": {"signal": "IMU_Gyro.GyroQ"}})"),
              HasSubstr("b.json: /signals/gyro_z/signal: message IMU_Gyro has no signal \"GyroQ\""));
  EXPECT_THAT(config_error("c.json", R"({"gyro_w": {"signal": "IMU_Gyro.GyroZ"}})"),
              HasSubstr("c.json: /signals/gyro_w: unknown channel \"gyro_w\""));
  EXPECT_THAT(config_error("d.json", R"({"gyro_z": {"signal": "IMU_Gyro.GyroZ", "unit": "deg/s"}})"),
              HasSubstr("d.json: /signals/gyro_z/unit: unit \"deg/s\" disagrees with the DBC's \"rad/s\""));
  EXPECT_THAT(config_error("e.json", R"({"steer_angle": {"signal": "Odd.Angle"}})"),
              HasSubstr("e.json: /signals/steer_angle: unknown unit \"Unit_DegreOfArc\""));
  EXPECT_THAT(config_error("f.json", R"({"gyro_z": {"signal": "Odd.Rate"}})"),
              HasSubstr("f.json: /signals/gyro_z: Odd.Rate has no unit in the DBC"));
  EXPECT_THAT(config_error("g.json", R"({"gyro_z": {"signal": "IMU_Gyro.GyroZ", "scale": 2}})"),
              HasSubstr("g.json: /signals/gyro_z/scale: unit \"rad/s\" of IMU_Gyro.GyroZ converts by itself"));
  EXPECT_THAT(config_error("h.json", R"({"accel_x": {"signal": "Steering.RoadWheelAngle"}})"),
              HasSubstr("h.json: /signals/accel_x: unit \"deg\" of Steering.RoadWheelAngle is an angle, accel_x needs "
                        "an acceleration"));
  EXPECT_THAT(config_error("i.json", R"({"wheel_count_fl": {"signal": "IMU_Gyro.GyroZ"}})"),
              HasSubstr("i.json: /signals/wheel_count_fl/signal: IMU_Gyro.GyroZ cannot be a wheel counter"));
  EXPECT_THAT(config_error("j.json", R"({"gyro_z": {"signal": "IMU_Gyro.GyroZ", "sclae": 1}})"),
              HasSubstr("j.json: /signals/gyro_z/sclae: unknown key"));
  EXPECT_THAT(config_error("k.json", R"({"gyro_z": {"signal": "GyroZ"}})"),
              HasSubstr("k.json: /signals/gyro_z/signal: expected \"Message.Signal\""));
  EXPECT_THAT(config_error("l.json", R"({"wheel_count_fl": {"signal": "Wheel_Counts.Count_FL", "modulus": 70000}})"),
              HasSubstr("l.json: /signals/wheel_count_fl/modulus: must be in [2, 65536]"));
  EXPECT_THAT(config_error("n.json", R"({"wheel_count_fl": {"signal": "Wheel_Counts.Count_FL", "unit": "rad"}})"),
              HasSubstr("n.json: /signals/wheel_count_fl/unit: a wheel counter counts teeth"));
  EXPECT_EQ(config_error("o.json", R"({"wheel_count_fl": {"signal": "Wheel_Counts.Count_FL", "unit": "ticks"}})"),
            "no error");
  EXPECT_THAT(config_error("m.json", "{}", R"(, "interfaces": [{"name": "a-very-long-can-name0"}])"),
              HasSubstr("m.json: /interfaces/0/name: must be 1..15 characters"));
}

TEST(SignalMap, UnknownUnitsNeedScaleOrADeclaredUnit) {
  auto dir = mbo::test::scratch_dir("signal_map_units");
  mbo::test::write_text(dir / "odd.dbc",
                        "BO_ 1 Odd: 8 N\n"
                        " SG_ Angle : 0|16@1- (0.01,0) [0|0] \"Unit_DegreOfArc\" N\n"
                        " SG_ Rate : 16|16@1- (0.01,0) [0|0] \"\" N\n");
  mbo::test::write_text(dir / "ok.json", R"({"dbc": "odd.dbc", "signals": {
      "steer_angle": {"signal": "Odd.Angle", "unit": "deg", "invert": true},
      "gyro_z": {"signal": "Odd.Rate", "scale": 0.001}}})");
  SignalMap map = SignalMap::from_config(mbo::JsonReader::from_file(dir / "ok.json"));
  EXPECT_DOUBLE_EQ(map.mapping(Channel::steer_angle)->scale, -std::numbers::pi / 180);
  EXPECT_DOUBLE_EQ(map.mapping(Channel::gyro_z)->scale, 0.001);
  mbo::io::CanFrame f;
  f.id = 1;
  f.len = 8;
  f.data[0] = 100;  // 1.00 "degree of arc"
  f.data[2] = 0xE8;  // 1000 * 0.01 = 10 -> * 0.001
  f.data[3] = 0x03;
  std::vector<mbo::Measurement> out(map.max_per_frame());
  ASSERT_EQ(map.decode(f, out), 2u);
  if (out[0].channel != Channel::steer_angle) std::swap(out[0], out[1]);
  EXPECT_EQ(out[0].channel, Channel::steer_angle);
  EXPECT_NEAR(out[0].value, -std::numbers::pi / 180, 1e-15);
  EXPECT_EQ(out[1].channel, Channel::gyro_z);
  EXPECT_NEAR(out[1].value, 0.01, 1e-15);
}

TEST(SignalMap, ValuesOutsideTheDbcRangeAndSignalsPastAShortFrameAreNaN) {
  SignalMap map = SignalMap::from_config(mbo::JsonReader::from_file(example()));
  std::vector<mbo::Measurement> out(map.max_per_frame());
  auto latitude = [&](double deg, std::uint8_t len) {
    mbo::io::CanFrame f;
    f.id = 0x300;  // GNSS_Latitude: an IEEE double, [-90|90] deg
    f.len = len;
    std::memcpy(f.data.data(), &deg, sizeof deg);
    EXPECT_EQ(map.decode(f, out), 1u);
    return out[0].value;
  };
  EXPECT_EQ(latitude(89.5, 8), 89.5);
  EXPECT_EQ(latitude(-90, 8), -90);
  EXPECT_TRUE(std::isnan(latitude(90.001, 8)));
  EXPECT_TRUE(std::isnan(latitude(-1000, 8)));
  EXPECT_TRUE(std::isnan(latitude(45, 4)));  // half a double
  // Integer signals whose DBC range is their whole raw range: the end values are in range
  // although the decimal limits are rounded ([-52.4288|52.4287] for 20 bits of 1E-4).
  mbo::io::CanFrame f;
  f.id = 0x080;  // IMU_Accel
  f.len = 8;
  f.data[0] = 0x00, f.data[1] = 0x00, f.data[2] = 0x08;  // AccelX raw -2^19
  ASSERT_EQ(map.decode(f, out), 3u);
  EXPECT_EQ(out[0].channel, Channel::accel_x);
  EXPECT_NEAR(out[0].value, -52.4288, 1e-9);
  f.len = 5;  // AccelX (bytes 0-2) fits, AccelZ (bits 40-59) does not
  ASSERT_EQ(map.decode(f, out), 3u);
  EXPECT_FALSE(std::isnan(out[0].value));
  EXPECT_TRUE(std::isnan(out[2].value));
}

// Two buses with the same id meaning different things (issue 20): can1 has a DBC of its own,
// a mapping names the interface it reads; frames are told apart by their interface.
TEST(SignalMap, TwoBusesCarryTheSameIdWithDifferentMeanings) {
  auto dir = mbo::test::scratch_dir("signal_map_buses");
  mbo::test::write_text(dir / "body.dbc", "BO_ 256 Wheels: 8 ABS\n SG_ FL : 0|16@1+ (0.01,0) [0|655.35] \"km/h\" X\n");
  mbo::test::write_text(dir / "chassis.dbc",
                        "BO_ 256 Steer: 8 EPS\n SG_ SWA : 0|16@1- (0.1,0) [-3276.8|3276.7] \"deg\" X\n");
  mbo::test::write_text(dir / "c.json",
                        "{\"dbc\": \"body.dbc\", \"interfaces\": [{\"name\": \"can0\"}, {\"name\": \"can1\", "
                        "\"dbc\": \"chassis.dbc\"}], \"signals\": {\"wheel_speed_fl\": {\"signal\": \"Wheels.FL\"}, "
                        "\"steering_wheel_angle\": {\"signal\": \"Steer.SWA\", \"bus\": \"can1\"}}}");
  SignalMap map = SignalMap::from_config(mbo::JsonReader::from_file(dir / "c.json"));
  EXPECT_EQ(map.bus_index("can1"), 1);
  EXPECT_EQ(map.bus_index("vcan7"), -1);
  const SignalMapping* ws = map.mapping(Channel::wheel_speed_fl);
  ASSERT_NE(ws, nullptr);
  EXPECT_EQ(ws->dimension, Dimension::speed);  // km/h: a speed at the rolling radius
  EXPECT_NEAR(ws->quantum, 0.01 / 3.6, 1e-15);
  mbo::io::CanFrame f;
  f.id = 256;
  f.len = 8;
  f.data[0] = 0x10;  // 16 raw: 0.16 km/h, or -> 1.6 deg
  std::vector<mbo::Measurement> out(map.max_per_frame());
  for (std::uint8_t channel : {std::uint8_t{0}, std::uint8_t{1}, std::uint8_t{255}}) {
    f.channel = channel;
    ASSERT_EQ(map.decode(f, out), 1u) << int(channel);
    if (channel == 1) {
      EXPECT_EQ(out[0].channel, Channel::steering_wheel_angle);
      EXPECT_NEAR(out[0].value, 1.6 * std::numbers::pi / 180, 1e-12);
    } else {  // can0, or an interface the configuration does not name: the top-level DBC
      EXPECT_EQ(out[0].channel, Channel::wheel_speed_fl);
      EXPECT_NEAR(out[0].value, 0.16 / 3.6, 1e-12);
    }
  }
  EXPECT_EQ(map.filter_ids(0).size(), 1u);
  EXPECT_EQ(map.filter_ids(1).size(), 1u);
  ASSERT_EQ(map.tx_frames().size(), 2u);
  for (const auto& tx : map.tx_frames()) EXPECT_EQ(tx.bus, tx.codec->message().name == "Steer" ? 1 : -1);
}

// A mapped message that a forgiving load left out stops the start-up, naming why; strict
// refuses the DBC itself.
TEST(SignalMap, MappedMessageLeftOutOfTheDbcFailsNamingIt) {
  auto dir = mbo::test::scratch_dir("signal_map_left_out");
  mbo::test::write_text(dir / "q.dbc",
                        "BO_ 256 Good: 8 ABS\n SG_ A : 0|8@1+ (1,0) [0|0] \"\" X\n"
                        "BO_ 257 Bad 8 ABS\n SG_ B : 0|8@1+ (1,0) [0|0] \"\" X\n");
  auto write = [&](const std::string& extra, const std::string& signal) {
    mbo::test::write_text(
        dir / "c.json", "{\"dbc\": \"q.dbc\"" + extra + ", \"signals\": {\"gear\": {\"signal\": \"" + signal + "\"}}}");
    try {
      SignalMap::from_config(mbo::JsonReader::from_file(dir / "c.json"));
    } catch (const mbo::ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(write("", "Good.A"), "no error");
  EXPECT_THAT(write("", "Bad.B"),
              HasSubstr("/signals/gear/signal: message \"Bad\" was left out of " + (dir / "q.dbc").string() +
                        " (line 3: BO_: expected ':' after the message name)"));
  EXPECT_THAT(write(", \"strict\": true", "Good.A"),
              HasSubstr("/dbc: " + (dir / "q.dbc").string() + ":3: BO_: expected ':'"));
}
