// The daemon's exit codes and messages (docs/interfaces.md, "Programs"): 0 on success, 2 on a bad
// configuration or input file with one line naming the file and the place in it.
#include <functional>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "harness.hpp"

using namespace mbo::dtest;
using ::testing::HasSubstr;
using ::testing::StartsWith;

namespace {

// One line on stderr, nothing else there.
void expect_one_line(const std::string& err) {
  ASSERT_FALSE(err.empty());
  EXPECT_EQ(err.back(), '\n') << err;
  EXPECT_EQ(err.find('\n'), err.size() - 1) << "more than one line:\n" << err;
}

struct BadConfig {
  std::function<void(json&)> change;
  std::string pointer;  // the JSON pointer the message must name
  std::string what;
};

}  // namespace

namespace {

// Every program the build installs (cmake/ProgramTests.cmake), by path.
std::vector<std::string> program_files() {
  std::vector<std::string> files;
  std::string all = MBO_PROGRAM_FILES;
  for (std::size_t at = 0; at <= all.size();) {
    const auto end = std::min(all.find(':', at), all.size());
    if (end > at) files.push_back(all.substr(at, end - at));
    at = end + 1;
  }
  return files;
}

}  // namespace

TEST(CommandLine, EveryProgramPrintsTheProjectVersion) {
  // GNU style: "name (mbobserver) VERSION" first, VERSION being CMake's project(VERSION).
  const auto files = program_files();
  std::vector<std::string> names;
  for (const auto& f : files) names.push_back(fs::path(f).filename().string());
  // mbobserver-bench only where the bench is built (MBO_BUILD_BENCH; not in the sanitizer build)
  for (const char* name : {"mbobserverd", "mbobserver-sim", "mbobserver-eval", "mbobserver-experiment",
                           "mbobserver-candecode", "mbobserver-listen"})
    ASSERT_THAT(names, ::testing::Contains(name)) << MBO_PROGRAM_FILES;
  for (const auto& file : files) {
    const std::string name = fs::path(file).filename().string();
    SCOPED_TRACE(name);
    const Result r = run(file, {"--version"});
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.err, "");
    EXPECT_THAT(r.out, StartsWith(name + " (mbobserver) " + MBO_PROJECT_VERSION + "\n"));
  }
}

TEST(CommandLine, EveryProgramHasHelpAndRefusesAnUnknownOption) {
  for (const auto& file : program_files()) {
    const std::string name = fs::path(file).filename().string();
    SCOPED_TRACE(name);
    const Result help = run(file, {"--help"});
    EXPECT_EQ(help.code, 0) << help.err;
    EXPECT_THAT(help.out, HasSubstr("Usage: " + name + " "));
    EXPECT_THAT(help.out, HasSubstr("--version"));
    // one line naming the program (what it names first differs: a required option or the unknown one)
    const Result bad = run(file, {"--no-such-option"});
    EXPECT_EQ(bad.code, 2) << bad.out << bad.err;
    EXPECT_THAT(bad.err, StartsWith(name + ": "));
    expect_one_line(bad.err);
  }
}

TEST(CommandLine, CheckConfigAcceptsTheDefaultConfiguration) {
  const std::string file = (fs::path(MBO_SOURCE_DIR) / "config" / "mbobserver.json").string();
  const Result r = run(MBO_DAEMON, {"--config", file, "--check-config"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, StartsWith(file + ": configuration OK"));
}

TEST(CommandLine, CheckConfigRefusesUnknownKeysAndWrongTypesWithExitCode2) {
  const std::vector<BadConfig> cases = {
      {[](json& c) { c["colour"] = "red"; }, "/colour", "unknown key \"colour\""},
      {[](json& c) { c["publish"]["colour"] = "red"; }, "/publish/colour", "unknown key \"colour\""},
      {[](json& c) {
         c["observer"]["gnss"]["antena"] = {1.2, 0, 1.45};
       },
       "/observer/gnss/antena", "unknown key \"antena\""},
      {[](json& c) { c["publish"]["port"] = "47800"; }, "/publish/port", "expected an integer, got string"},
      {[](json& c) { c["runtime"]["step_s"] = true; }, "/runtime/step_s", "expected a number"},
      {[](json& c) { c["can"]["signals"]["gyro_z"]["signal"] = 5; }, "/can/signals/gyro_z/signal",
       "expected a string, got number"},
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].pointer);
    json c = default_config();
    cases[i].change(c);
    const fs::path file = write_config(c, "bad" + std::to_string(i));
    const Result r = run(MBO_DAEMON, {"--config", file.string(), "--check-config"});
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_EQ(r.out, "");
    expect_one_line(r.err);
    EXPECT_THAT(r.err, HasSubstr(file.string() + ": " + cases[i].pointer + ": "));
    EXPECT_THAT(r.err, HasSubstr(cases[i].what));
  }
}

TEST(CommandLine, ConfigThatIsNotJsonNamesTheLine) {
  const fs::path file = temp_path("broken.json");
  write_file(file, "{\n  \"log_level\": \"info\",,\n}\n");
  const Result r = run(MBO_DAEMON, {"--config", file.string(), "--check-config"});
  EXPECT_EQ(r.code, 2) << r.err;
  expect_one_line(r.err);
  EXPECT_THAT(r.err, HasSubstr(file.string() + ":2:"));
}

TEST(CommandLine, MissingOrUnreadableReplayFileIsExitCode2) {
  const fs::path config = write_config(default_config(), "config");
  const fs::path record = temp_path("never.jsonl");
  {
    const std::string missing = (temp_path("no such dir") / "drive.log").string();
    const Result r = run(MBO_DAEMON, {"--config", config.string(), "--replay", missing, "--record", record.string()});
    EXPECT_EQ(r.code, 2) << r.err;
    expect_one_line(r.err);
    EXPECT_THAT(r.err, HasSubstr(missing + ": cannot open"));
    EXPECT_FALSE(fs::exists(record)) << "nothing written for a replay that never started";
  }
  {
    // a file that exists but is no CAN log (the configuration itself)
    const Result r = run(MBO_DAEMON, {"--config", config.string(), "--replay", config.string()});
    EXPECT_EQ(r.code, 2) << r.err;
    expect_one_line(r.err);
    EXPECT_THAT(r.err, HasSubstr(config.string() + ": not a candump -l or Vector ASC log"));
  }
  {
    const std::string unwritable = (temp_path("no such dir") / "out.jsonl").string();
    const Result r =
        run(MBO_DAEMON, {"--config", config.string(), "--replay", drive_log().string(), "--record", unwritable});
    EXPECT_EQ(r.code, 2) << r.err;
    expect_one_line(r.err);
    EXPECT_THAT(r.err, HasSubstr(unwritable + ": cannot write"));
  }
}
