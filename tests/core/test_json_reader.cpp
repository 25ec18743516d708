#include "mbobserver/core/json_reader.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

using mbo::ConfigError;
using mbo::JsonReader;
using ::testing::HasSubstr;

namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "<no error>";
}

JsonReader reader(const char* text) {
  static std::vector<std::unique_ptr<nlohmann::json>> keep;
  keep.push_back(std::make_unique<nlohmann::json>(mbo::parse_json_text(text, "cfg.json")));
  return JsonReader(*keep.back(), "cfg.json");
}

}  // namespace

TEST(JsonReader, ReadsTypedValuesAndDefaults) {
  auto r = reader(R"({"dt": 0.002, "n": 3, "name": "x", "on": true, "v": [1, 2, 3]})");
  EXPECT_DOUBLE_EQ(r.positive("dt"), 0.002);
  EXPECT_EQ(r.integer("n", 0, 10), 3);
  EXPECT_EQ(r.string("name"), "x");
  EXPECT_TRUE(r.boolean("on"));
  EXPECT_EQ(r.numbers("v", 3), (std::vector<double>{1, 2, 3}));
  EXPECT_DOUBLE_EQ(r.number("absent", 7.5), 7.5);
  EXPECT_NO_THROW(r.finish());
}

TEST(JsonReader, UnknownKeyNamesFileAndPointer) {
  auto r = reader(R"({"filter": {"plant_noise": {"zdd": 1, "zdd_typo": 2}}})");
  auto f = r.at("filter");
  auto n = f.at("plant_noise");
  n.number("zdd");
  EXPECT_EQ(error_of([&] { n.finish(); }), "cfg.json: /filter/plant_noise/zdd_typo: unknown key \"zdd_typo\"");
}

TEST(JsonReader, WrongTypeNamesPointer) {
  auto r = reader(R"({"filter": {"plant_noise": {"zdd": "big"}}})");
  EXPECT_EQ(error_of([&] { r.at("filter").at("plant_noise").number("zdd"); }),
            "cfg.json: /filter/plant_noise/zdd: expected a number, got string");
}

TEST(JsonReader, OutOfRangeNamesValue) {
  auto r = reader(R"({"filter": {"plant_noise": {"zdd": -1}}})");
  EXPECT_EQ(error_of([&] { r.at("filter").at("plant_noise").non_negative("zdd"); }),
            "cfg.json: /filter/plant_noise/zdd: must be >= 0, got -1");
}

TEST(JsonReader, MissingKeyNamesParent) {
  auto r = reader(R"({"filter": {}})");
  EXPECT_EQ(error_of([&] { r.at("filter").at("plant_noise"); }),
            "cfg.json: /filter: missing required key \"plant_noise\"");
}

TEST(JsonReader, ArrayElementsHavePointers) {
  auto r = reader(R"({"v": [1, "two", 3]})");
  EXPECT_EQ(error_of([&] { r.numbers("v"); }), "cfg.json: /v/1: expected a number, got string");
  EXPECT_THAT(error_of([&] { r.numbers("v", 2); }), HasSubstr("expected 2 numbers, got 3"));
}

TEST(JsonReader, ChoiceListsAlternatives) {
  auto r = reader(R"({"type": "UKF"})");
  EXPECT_EQ(error_of([&] {
              r.choice("type", {"errorEKF", "errorEKF-FE"});
            }),
            "cfg.json: /type: unknown value \"UKF\" (expected one of: errorEKF, errorEKF-FE)");
}

TEST(JsonReader, SyntaxErrorHasLineAndColumn) {
  EXPECT_THAT(error_of([] { mbo::parse_json_text("{\n  \"a\": 1,\n  \"b\": ]\n}", "bad.json"); }),
              HasSubstr("bad.json:3:"));
}

// Found by fuzz/fuzz_vehicle: nlohmann's out_of_range for a number beyond a double escaped as
// another exception type.
TEST(JsonReader, ANumberBeyondADoubleIsAConfigErrorWithItsPlace) {
  const std::string e = error_of([] { mbo::parse_json_text("{\n  \"mass_kg\": 4e528433580\n}", "car.json"); });
  EXPECT_THAT(e, HasSubstr("car.json:2:14: not valid JSON: number overflow parsing '4e528433580'"));
}

TEST(JsonReader, MissingFileIsConfigError) {
  EXPECT_EQ(error_of([] { JsonReader::from_file("/nonexistent/x.json"); }),
            "/nonexistent/x.json: cannot open file: No such file or directory");
}

TEST(JsonReader, IntegerRejectsFraction) {
  auto r = reader(R"({"n": 2.5})");
  EXPECT_EQ(error_of([&] { r.integer("n"); }), "cfg.json: /n: expected an integer, got number");
}

TEST(JsonReader, AKeyTwiceInAnObjectIsAnErrorWithItsPointer) {
  EXPECT_THAT(error_of([] { mbo::parse_json_text(R"({"a": {"b": 1, "c": [{"x": 1}, {"x": 2, "x": 3}]}})", "c.json"); }),
              HasSubstr("c.json: /a/c/1/x: the key appears twice in its object"));
  EXPECT_THAT(error_of([] { mbo::parse_json_text(R"({"a": 1, "b": {"a": 2}, "a": 3})", "c.json"); }),
              HasSubstr("c.json: /a: the key appears twice"));
  // the same key in different objects is fine
  EXPECT_NO_THROW(mbo::parse_json_text(R"({"a": {"x": 1}, "b": {"x": 1}, "c": [{"x": 1}, {"x": 1}]})", "c.json"));
}

TEST(JsonReader, FoldersAndDevicesAreNoConfigurationAndAreNotRead) {
  EXPECT_THAT(error_of([] { mbo::load_json_file("/tmp"); }), HasSubstr("/tmp: is a folder, not a file"));
  // /dev/zero would otherwise be read for ever
  EXPECT_THAT(error_of([] { mbo::load_json_file("/dev/zero"); }), HasSubstr("/dev/zero: not a regular file"));
}

TEST(JsonReader, AnIntegerBeyondLongLongIsReportedAsWritten) {
  // nlohmann keeps 2^64 - 1 as unsigned; read as long long it was "got -1"
  auto r = reader(R"({"queue_capacity": 18446744073709551615, "n": 9223372036854775808})");
  EXPECT_EQ(error_of([&] { r.integer("queue_capacity", 16, 1 << 20); }),
            "cfg.json: /queue_capacity: must be in [16, 1048576], got 18446744073709551615");
  EXPECT_EQ(error_of([&] { r.integer("n"); }),
            "cfg.json: /n: must be in [-9223372036854775808, 9223372036854775807], got 9223372036854775808");
}

TEST(JsonReader, PhysicalRangesOfNumbersAndArrays) {
  auto r = reader(R"({"std": 1e308, "zero": 0, "ok": 2, "antenna": [1.2, 1e308, 1]})");
  EXPECT_EQ(error_of([&] { r.positive_up_to("std", 1e4); }), "cfg.json: /std: must be in (0, 10000], got 1e+308");
  EXPECT_EQ(error_of([&] { r.positive_up_to("zero", 1e4); }), "cfg.json: /zero: must be in (0, 10000], got 0");
  EXPECT_DOUBLE_EQ(r.positive_up_to("ok", 2), 2);
  EXPECT_DOUBLE_EQ(r.positive_up_to("absent", 2, 1.5), 1.5);
  EXPECT_EQ(error_of([&] { r.numbers_in("antenna", 3, -50, 50); }),
            "cfg.json: /antenna/1: must be in [-50, 50], got 1e+308");
}
