// End-to-end: a program built on run_program + JsonReader exits 2 with one line naming the
// file and the place for each kind of bad configuration, and 0 on a good one.
#include <sys/wait.h>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

using ::testing::HasSubstr;
using ::testing::MatchesRegex;

namespace {

struct Run {
  int code;
  std::string out;
};

Run run(const std::string& args) {
  std::string cmd = std::string(MBO_CONFIG_PROBE) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  std::array<char, 512> buf{};
  while (fgets(buf.data(), buf.size(), p)) out += buf.data();
  int status = pclose(p);
  return {WEXITSTATUS(status), out};
}

std::string write(const std::string& name, const std::string& text) {
  auto dir = std::filesystem::temp_directory_path() / "mbo_config_probe";
  std::filesystem::create_directories(dir);
  auto path = dir / name;
  std::ofstream(path) << text;
  return path.string();
}

int lines(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }

}  // namespace

TEST(Program, GoodConfigExitsZero) {
  auto f = write("good.json", R"({"dt": 0.002, "filter": {"type": "errorEKF", "plant_noise": {"zdd": 1}}})");
  auto r = run(f);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out, "dt=0.002 zdd=1 type=errorEKF\n");
}

TEST(Program, UnknownKeyExitsTwo) {
  auto f =
      write("unknown.json", R"({"dt": 0.002, "filter": {"type": "errorEKF", "plant_noise": {"zdd": 1, "zd": 2}}})");
  auto r = run(f);
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(lines(r.out), 1) << r.out;
  EXPECT_THAT(r.out, HasSubstr("unknown.json: /filter/plant_noise/zd: unknown key"));
}

TEST(Program, WrongTypeExitsTwo) {
  auto f = write("type.json", R"({"dt": "fast", "filter": {}})");
  auto r = run(f);
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(lines(r.out), 1) << r.out;
  EXPECT_THAT(r.out, HasSubstr("type.json: /dt: expected a number, got string"));
}

TEST(Program, MissingKeyExitsTwo) {
  auto f = write("missing.json", R"({"dt": 0.002, "filter": {"type": "errorEKF"}})");
  auto r = run(f);
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(lines(r.out), 1) << r.out;
  EXPECT_THAT(r.out, HasSubstr("missing.json: /filter: missing required key \"plant_noise\""));
}

TEST(Program, NotJsonExitsTwoWithLineAndColumn) {
  auto f = write("notjson.json", "{\n  \"dt\": 0.002,\n  oops\n}\n");
  auto r = run(f);
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(lines(r.out), 1) << r.out;
  EXPECT_THAT(r.out, MatchesRegex(".*notjson.json:3:[0-9]+: not valid JSON.*\n"));
}

TEST(Program, MissingFileExitsTwo) {
  auto r = run("/nonexistent/conf.json");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(lines(r.out), 1) << r.out;
  EXPECT_THAT(r.out, HasSubstr("/nonexistent/conf.json: cannot open file"));
}

TEST(Program, BadUsageExitsTwo) {
  auto r = run("--no-such-flag x.json");
  EXPECT_EQ(r.code, 2);
  auto h = run("--help");
  EXPECT_EQ(h.code, 0);
  EXPECT_THAT(h.out, HasSubstr("--log-level"));
}

TEST(Program, BadLogLevelExitsTwo) {
  auto f = write("good2.json", R"({"dt": 0.002, "filter": {"type": "errorEKF", "plant_noise": {"zdd": 1}}})");
  auto r = run("--log-level loud " + f);
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.out, HasSubstr("unknown log level \"loud\""));
}
