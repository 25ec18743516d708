// Bad input at run time never stops a replay: the daemon reads to the end of the log, exits 0,
// and its summary counts what it skipped. Each case damages a piece of the simulated drive and
// compares with the undamaged piece, so "ignored" is checked down to the byte where the damage
// leaves nothing for the estimator to see.
#include <algorithm>
#include <limits>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "harness.hpp"

using namespace mbo::dtest;
using ::testing::HasSubstr;

namespace {

constexpr double kPiece_s = 1.2;
constexpr std::uint32_t kLatitude = 0x300, kLongitude = 0x301, kAltVel = 0x302;

// The daemon ran to the end of `log`: exit 0, a record for every step, the last step at the
// last frame.
void expect_ran_to_the_end(const Replay& r, const CandumpLog& log) {
  EXPECT_EQ(r.result.code, 0) << r.result.err;
  ASSERT_TRUE(r.summary.is_object()) << r.result.err;
  EXPECT_EQ(r.summary["run"]["records_written"], r.summary["steps"]);
  const auto records = r.records();
  ASSERT_EQ(records.size(), r.summary["steps"].get<std::size_t>());
  double t_last = log.t0();
  for (const auto& l : log.lines) t_last = std::max(t_last, frame_time(l));
  EXPECT_NEAR(records.back()["t"].get<double>(), t_last, 0.0021);
  // the stdout summary is the --summary-json one
  EXPECT_EQ(json::parse(r.result.out), r.summary);
}

// Every record's state is finite (a bad value must not reach the filter).
void expect_finite_states(const Replay& r) {
  for (const auto& rec : r.records())
    for (const auto& [k, v] : rec["state"].items())
      ASSERT_TRUE(v.is_number()) << "t = " << rec["t"] << ": state." << k << " = " << v;
}

// Replaces the first bytes of the data of the frames with id `id` in [t0 + from_s, t0 + to_s)
// by `hex`; returns how many frames it changed.
int overwrite(CandumpLog& log, std::uint32_t id, double from_s, double to_s, const std::string& hex) {
  int n = 0;
  const double t0 = log.t0();
  for (auto& l : log.lines) {
    const double t = frame_time(l) - t0;
    if (frame_id(l) != id || t < from_s || t >= to_s) continue;
    const std::string data = l.substr(l.find('#') + 1);
    l = with_data(l, hex + data.substr(std::min(hex.size(), data.size())));
    ++n;
  }
  return n;
}

}  // namespace

TEST(BadInput, GarbageLinesAndATruncatedLastLineAreCountedAndSkipped) {
  // Reference: the piece without its last frame, the one the damaged log truncates.
  CandumpLog good = drive_piece(kPiece_s);
  const std::string last = good.lines.back();
  good.lines.pop_back();
  // so that both logs end at the same instant
  ASSERT_EQ(frame_time(last), good.t_end());
  const Replay reference = replay(default_config_file(), good.write("good"), "good");

  CandumpLog bad = good;
  const std::vector<std::pair<std::size_t, std::string>> garbage = {
      {100, "this is not a candump line"},
      {200, "(1700000000.5x) can0 080#0000000000000000"},  // bad time stamp
      {300, "(1700000000.600000) can0 0G0#00"},  // id not hexadecimal
      {400, "(1700000000.800000) can0 080#A67"},  // odd number of data digits
      {500, ""},  // an empty line is no problem
  };
  std::vector<std::size_t> bad_line_numbers;
  std::size_t inserted = 0;
  for (const auto& [at, text] : garbage) {
    bad.lines.insert(bad.lines.begin() + static_cast<long>(at + inserted), text);
    ++inserted;
    if (!text.empty()) bad_line_numbers.push_back(at + inserted);  // 1-based line in the file
  }
  // The file ends in the middle of the last frame's data: no newline, three hex digits.
  std::string text = bad.text() + last.substr(0, last.find('#') + 4);
  bad_line_numbers.push_back(bad.lines.size() + 1);
  const fs::path log = temp_path("damaged.log");
  write_file(log, text);

  const Replay r = replay(default_config_file(), log, "damaged");
  expect_ran_to_the_end(r, good);
  ASSERT_EQ(reference.result.code, 0) << reference.result.err;
  EXPECT_EQ(r.summary["frames"]["bad_log_lines"], bad_line_numbers.size());
  EXPECT_EQ(r.summary["frames"]["timestamp_backwards"], 0);
  const auto& problems = r.summary["run"]["log_problems_first"];
  ASSERT_EQ(problems.size(), bad_line_numbers.size()) << problems.dump(2);
  for (std::size_t i = 0; i < problems.size(); ++i)
    EXPECT_THAT(problems[i].get<std::string>(), HasSubstr("(line " + std::to_string(bad_line_numbers[i]) + ")"));
  // the same frames, the bad lines apart (they are no frames)
  json frames = r.summary["frames"], reference_frames = reference.summary["frames"];
  frames.erase("bad_log_lines");
  reference_frames.erase("bad_log_lines");
  EXPECT_EQ(frames, reference_frames);
  const std::string a = reference.record_bytes(), b = r.record_bytes();
  EXPECT_TRUE(a == b) << first_difference(a, b);
}

TEST(BadInput, FramesWithUnknownIdsAreCountedAndIgnored) {
  const Replay reference = replay(default_config_file(), drive_piece(kPiece_s).write("good"), "good");
  CandumpLog log = drive_piece(kPiece_s);
  // Standard and extended ids that no DBC of the configuration defines, between real frames.
  int added = 0;
  for (std::size_t i = 50; i < log.lines.size(); i += 200) {
    const double t = frame_time(log.lines[i]);
    log.lines.insert(log.lines.begin() + static_cast<long>(i), candump_line(t, "7FF", "0102030405060708"));
    log.lines.insert(log.lines.begin() + static_cast<long>(i), candump_line(t, "1ABCDEF0", "FF"));
    added += 2;
  }
  const Replay r = replay(default_config_file(), log.write("unknown"), "unknown");
  expect_ran_to_the_end(r, log);
  ASSERT_EQ(reference.result.code, 0) << reference.result.err;
  EXPECT_EQ(r.summary["frames"]["unknown"], added);
  EXPECT_EQ(r.summary["frames"]["received"], reference.summary["frames"]["received"].get<int>() + added);
  EXPECT_EQ(r.summary["frames"]["decoded"], reference.summary["frames"]["decoded"]);
  EXPECT_EQ(r.summary["frames"]["bad_log_lines"], 0);
  const std::string a = reference.record_bytes(), b = r.record_bytes();
  EXPECT_TRUE(a == b) << first_difference(a, b);
}

TEST(BadInput, NonFiniteSignalValuesAreRejected) {
  CandumpLog log = drive_piece(kPiece_s);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  int n = overwrite(log, kLatitude, 0.31, 0.41, le_double_hex(nan));
  n += overwrite(log, kLongitude, 0.51, 0.61, le_double_hex(-inf));
  // altitude is an IEEE float in bytes 0-3 of GNSS_Alt_Vel (speed and course left alone)
  n += overwrite(log, kAltVel, 0.71, 0.81, "0000C07F");
  ASSERT_EQ(n, 15);  // 50 Hz GNSS: five frames per window of 0.1 s
  const Replay r = replay(default_config_file(), log.write("nonfinite"), "nonfinite");
  expect_ran_to_the_end(r, log);
  EXPECT_EQ(r.summary["frames"]["rejected"], n);
  expect_finite_states(r);
  EXPECT_TRUE(r.records().back()["health"]["valid"].get<bool>()) << "the fixes after the bad ones are used again";
}

// Out of the DBC's [minimum|maximum] is as unusable as NaN (docs/status.schema.json,
// frames.rejected): such a value is rejected before the observer, exactly like a NaN.
TEST(BadInput, OutOfRangeSignalValuesAreRejectedLikeNaN) {
  CandumpLog out_of_range = drive_piece(kPiece_s), nan = drive_piece(kPiece_s);
  int n = overwrite(out_of_range, kLatitude, 0.31, 0.41, le_double_hex(1000.0));  // [-90|90] deg
  n += overwrite(out_of_range, kLongitude, 0.51, 0.61, le_double_hex(-400.0));  // [-180|180] deg
  overwrite(nan, kLatitude, 0.31, 0.41, le_double_hex(std::numeric_limits<double>::quiet_NaN()));
  overwrite(nan, kLongitude, 0.51, 0.61, le_double_hex(std::numeric_limits<double>::quiet_NaN()));
  ASSERT_EQ(n, 10);
  const Replay r = replay(default_config_file(), out_of_range.write("range"), "range");
  const Replay reference = replay(default_config_file(), nan.write("nan"), "nan");
  expect_ran_to_the_end(r, out_of_range);
  EXPECT_EQ(r.summary["frames"]["rejected"], n);
  EXPECT_EQ(reference.summary["frames"]["rejected"], n);
  const std::string a = reference.record_bytes(), b = r.record_bytes();
  EXPECT_TRUE(a == b) << first_difference(a, b);
}

// A last line cut after a whole byte is still a well-formed candump line, of a frame shorter
// than its DBC message: rejected (docs/status.schema.json, frames.rejected: "bad lengths"),
// the signals it has no room for never reach the estimator.
TEST(BadInput, ALastLineCutAfterAWholeByteIsAShortFrameAndRejected) {
  CandumpLog good = drive_piece(kPiece_s);
  std::string last = good.lines.back();
  good.lines.pop_back();
  ASSERT_EQ(frame_time(last), good.t_end());
  const Replay reference = replay(default_config_file(), good.write("good"), "good");
  // The whole frame gone but for its first byte (every message of the DBC has four or more).
  const fs::path log = temp_path("short.log");
  write_file(log, good.text() + last.substr(0, last.find('#') + 3));

  const Replay r = replay(default_config_file(), log, "short");
  expect_ran_to_the_end(r, good);
  EXPECT_EQ(r.summary["frames"]["bad_log_lines"], 0);
  EXPECT_GE(r.summary["frames"]["rejected"].get<int>(), 1);
  EXPECT_EQ(r.summary["frames"]["received"], reference.summary["frames"]["received"].get<int>() + 1);
  const std::string a = reference.record_bytes(), b = r.record_bytes();
  EXPECT_TRUE(a == b) << first_difference(a, b);
}

TEST(BadInput, ATimestampGoingBackwardsIsCountedAndTheReplayGoesOn) {
  CandumpLog log = drive_piece(kPiece_s);
  // A gyro frame from the middle claims to be 0.5 s older than its neighbours.
  std::size_t at = 0;
  for (std::size_t i = 0; i < log.lines.size(); ++i)
    if (frame_id(log.lines[i]) == 0x081 && frame_time(log.lines[i]) - log.t0() >= 0.7) {
      at = i;
      break;
    }
  ASSERT_GT(at, 0u);
  log.lines[at] = with_time(log.lines[at], frame_time(log.lines[at]) - 0.5);
  const Replay r = replay(default_config_file(), log.write("backwards"), "backwards");
  expect_ran_to_the_end(r, log);
  EXPECT_EQ(r.summary["frames"]["timestamp_backwards"], 1);
  EXPECT_EQ(r.summary["frames"]["bad_log_lines"], 0);
  ASSERT_EQ(r.summary["run"]["log_problems_first"].size(), 1u);
  const std::string problem = r.summary["run"]["log_problems_first"][0];
  EXPECT_THAT(problem, HasSubstr("timestamp goes back by 0.5"));
  EXPECT_THAT(problem, HasSubstr("(line " + std::to_string(at + 1) + ")"));
  // its samples are older than the ones the observer holds: counted, not fused
  EXPECT_GT(r.summary["observer"]["stale_samples"].get<int>(), 0);
  expect_finite_states(r);
}

// A destination the kernel refuses: 127.255.255.255 is the broadcast address of the loopback
// network, and a socket without SO_BROADCAST gets EACCES for every datagram (ip(7)), on any
// Linux host, with or without a network.
TEST(BadInput, AnUnreachableUdpDestinationIsCountedAndTheReplayGoesOn) {
  json c = default_config();
  c["publish"]["enabled"] = true;
  c["publish"]["address"] = "127.255.255.255";
  c["publish"]["port"] = 9;
  const fs::path log = drive_piece(kPiece_s).write("piece");
  const Replay r = replay(write_config(c, "refused"), log, "refused");
  const Replay reference = replay(default_config_file(), log, "unpublished");
  expect_ran_to_the_end(r, drive_piece(kPiece_s));
  const auto& p = r.summary["publisher"];
  EXPECT_EQ(p["estimates_sent"], 0);
  EXPECT_EQ(p["status_sent"], 0);
  // every estimate left after decimation, and the final status, failed
  const int decimated_steps = r.summary["steps"].get<int>() - p["decimated"].get<int>();
  EXPECT_GE(p["send_errors"].get<int>(), decimated_steps + 1);
  // one warning per kind of error, not one per datagram
  const std::string& err = r.result.err;
  const auto first = err.find("send failed");
  ASSERT_NE(first, std::string::npos) << err;
  EXPECT_EQ(err.find("send failed", first + 1), std::string::npos) << err;
  EXPECT_THAT(err, HasSubstr("EACCES"));
  const std::string a = reference.record_bytes(), b = r.record_bytes();
  EXPECT_TRUE(a == b) << first_difference(a, b);
}
