// The systemd unit as `cmake --install` writes it (from systemd/mbobserver.service.in, for the
// prefix of the install), checked on the tree of the fixture install.Setup by systemd's own
// parser. `systemd-analyze verify` works without systemd running as PID 1 and checks that
// ExecStart='s binary exists and is executable: here it is the installed mbobserverd, so the
// unit is verified as installed, unchanged. Where the tool is missing or cannot run at all,
// the tests skip with the reason.
#include <unistd.h>

#include <fstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "install_tree.hpp"

using namespace mbo::itest;
using ::testing::HasSubstr;

namespace {

bool have_systemd_analyze() { return run("command -v systemd-analyze").code == 0; }

// (std::regex is avoided: GCC 12 at -O1 with sanitizers warns inside <regex> under -Werror.)
void replace_all(std::string& text, const std::string& from, const std::string& to) {
  for (auto pos = text.find(from); pos != std::string::npos; pos = text.find(from, pos + to.size()))
    text.replace(pos, from.size(), to);
}

// A copy of the installed unit with one change, in a directory of its own.
fs::path changed_copy(const std::string& name, const std::string& from, const std::string& to) {
  static const struct TempDir {
    fs::path path = fs::temp_directory_path() / ("mbo_unit_" + std::to_string(::getpid()));
    ~TempDir() {
      std::error_code ec;
      fs::remove_all(path, ec);
    }
  } temp;
  fs::create_directories(temp.path);
  std::string text = read(installed().unit());
  replace_all(text, from, to);
  const fs::path unit = temp.path / name;
  std::ofstream(unit) << text;
  return unit;
}

Command verify(const fs::path& unit) { return run("systemd-analyze verify --man=no " + quoted(unit.string())); }

}  // namespace

TEST(SystemdUnit, NamesTheInstalledProgramAndConfiguration) {
  MBO_SKIP_UNLESS_INSTALLED();
  const Tree tree = installed();
  const std::string text = read(tree.unit());
  const fs::path daemon = tree.bin() / "mbobserverd";
  const fs::path config = tree.etc() / "mbobserver.json";
  EXPECT_THAT(text, HasSubstr("\nExecStart=" + daemon.string() + " --config " + config.string() + "\n"));
  EXPECT_TRUE(fs::exists(daemon)) << daemon;
  EXPECT_TRUE(fs::exists(config)) << config;
  EXPECT_THAT(text, HasSubstr("file:" + tree.doc().string() + "/systemd.md"));
  EXPECT_TRUE(fs::exists(tree.doc() / "systemd.md"));
  // every @VARIABLE@ of the template was substituted, and no other prefix slipped in
  EXPECT_THAT(text, ::testing::Not(HasSubstr("@MBO_")));
  EXPECT_THAT(text, ::testing::Not(HasSubstr("/usr/local/")));
}

TEST(SystemdUnit, KeepsTheServiceContractAndItsHardening) {
  MBO_SKIP_UNLESS_INSTALLED();
  const std::string text = read(installed().unit());
  EXPECT_THAT(text, HasSubstr("\nType=notify\n"));
  EXPECT_THAT(text, HasSubstr("\nRestart=on-failure\n"));
  EXPECT_THAT(text, ::testing::ContainsRegex("\nWatchdogSec=[0-9]+"));
  EXPECT_THAT(text, HasSubstr("\nRestartPreventExitStatus=2\n"));
  EXPECT_THAT(text, HasSubstr("\nDynamicUser=yes\n"));
  // the calibration file lives in the state directory the dynamic user is given
  EXPECT_THAT(text, HasSubstr("\nStateDirectory=mbobserver\n"));
  EXPECT_THAT(text, HasSubstr("\nProtectSystem=strict\n"));
  EXPECT_THAT(text, HasSubstr("\nNoNewPrivileges=yes\n"));
  EXPECT_THAT(text, HasSubstr("\nRestrictAddressFamilies=AF_CAN AF_NETLINK AF_INET AF_INET6 AF_UNIX\n"));
  EXPECT_THAT(text, HasSubstr("\nCapabilityBoundingSet=\n"));
  EXPECT_THAT(text, HasSubstr("\nSystemCallFilter=@system-service\n"));
  // The template's @system-service etc. are systemd's, not configure_file's: left as written.
  EXPECT_THAT(text, HasSubstr("\nSystemCallFilter=~@privileged\n"));
  // Real-time priority and locking come from resource limits, so they must be present.
  EXPECT_THAT(text, ::testing::ContainsRegex("\nLimitRTPRIO=[1-9][0-9]*\n"));
  EXPECT_THAT(text, HasSubstr("\nLimitMEMLOCK=infinity\n"));
  EXPECT_THAT(text, ::testing::Not(HasSubstr("\nRestrictRealtime=yes")));
}

TEST(SystemdUnit, VerifyPassesOnTheInstalledUnitWithoutAWarning) {
  MBO_SKIP_UNLESS_INSTALLED();
  if (!have_systemd_analyze()) GTEST_SKIP() << "systemd-analyze is not installed";
  const Command r = verify(installed().unit());
  if (r.code != 0 && r.out.find("mbobserver.service") == std::string::npos)
    GTEST_SKIP() << "systemd-analyze cannot run here: " << r.out;
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out, "") << "systemd-analyze verify reported problems";
  RecordProperty("unit", installed().unit().string());
}

TEST(SystemdUnit, VerifyWouldCatchAMissingProgram) {
  // What makes the test above a check of the install: verify fails when ExecStart's binary
  // is not there.
  MBO_SKIP_UNLESS_INSTALLED();
  if (!have_systemd_analyze()) GTEST_SKIP() << "systemd-analyze is not installed";
  const std::string daemon = (installed().bin() / "mbobserverd").string();
  const fs::path unit = changed_copy("mbobserver.service", "ExecStart=" + daemon, "ExecStart=" + daemon + "-missing");
  const Command r = verify(unit);
  EXPECT_NE(r.code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr(daemon + "-missing"));
}

TEST(SystemdUnit, VerifyWouldCatchAMistake) {
  // verify exits 0 on an unknown key but names it: the test above fails on any output.
  MBO_SKIP_UNLESS_INSTALLED();
  if (!have_systemd_analyze()) GTEST_SKIP() << "systemd-analyze is not installed";
  const fs::path unit = changed_copy("typo.service", "\nWatchdogSec=", "\nWatchdogSecs=");
  const Command r = verify(unit);
  if (r.out.empty() && r.code == 0) FAIL() << "a misspelt key went unnoticed";
  EXPECT_THAT(r.out, HasSubstr("WatchdogSecs"));
}

TEST(SystemdUnit, SecurityExposureStaysLow) {
  MBO_SKIP_UNLESS_INSTALLED();
  if (!have_systemd_analyze()) GTEST_SKIP() << "systemd-analyze is not installed";
  // --offline (systemd >= 250) scores the unit file without loading it into a manager.
  const Command r = run("systemd-analyze security --offline=true " + quoted(installed().unit().string()));
  const std::string marker = "Overall exposure level for mbobserver.service: ";
  const auto at = r.out.find(marker);
  if (at == std::string::npos)
    GTEST_SKIP() << "systemd-analyze security --offline is not available here: " << r.out.substr(0, 300);
  const std::string score = r.out.substr(at + marker.size(), r.out.find(' ', at + marker.size()) - at - marker.size());
  const double exposure = std::stod(score);
  RecordProperty("exposure", score);
  // docs/systemd.md records 2.1; the unavoidable rest is network access (CAN, UDP) and
  // real-time scheduling. Anything above 3 means hardening was lost.
  EXPECT_LE(exposure, 3.0) << r.out;
}
