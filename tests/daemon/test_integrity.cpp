// Issue 21's table, the daemon's rows: no input can hang the replay, fill the disk or silently
// lose output, and --check-config refuses what it can know. Each case is a replay or a
// command line of the real daemon, checked on what it writes and its exit code; none waits
// on the wall clock for its result (the hang guard of Child::wait only turns a hang into a
// failure).
// The table's other rows are tested where their code is, and not again here:
//   the first GNSS fix 50 m off        estimation GnssAiding.OneMultipathFixDoesNotStartTheObserver...
//                                      and GnssAiding.ARunOfRejectedPositionsOnAnyAxis... (test_aiding.cpp)
//   steering / drive torques at their  estimation ModelInputs.AnInputOnItsDbcLimitOrJumpingFasterThan...
//   DBC limit for 1 s (glitches)       (test_aiding.cpp)
//   a frozen wheel counter             estimation WheelHallAiding.ACounterThatStopsOnAFreeRollingWheel...
//                                      (test_aiding.cpp)
//   duplicate JSON keys                core JsonReader.AKeyTwiceInAnObjectIsAnErrorWithItsPointer
//                                      (test_json_reader.cpp)
// and on the whole drive, with the false-valid rate at most 0.5 % per output, by the fault
// catalogue (tests/faults/: faults.FirstFix, faults.Glitches, faults.Frozen, ...); the 25
// randomly mutated logs that all hung by faults.Mutations.
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <functional>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "harness.hpp"

using namespace mbo::dtest;
using ::testing::HasSubstr;

namespace {

constexpr double kPiece_s = 4.0, kAt_s = 2.0;

// The index of the first frame at or after t0 + s.
std::size_t frame_at(const CandumpLog& log, double s) {
  for (std::size_t i = 0; i < log.lines.size(); ++i)
    if (frame_time(log.lines[i]) >= log.t0() + s - 1e-7) return i;
  return log.lines.size();
}

// The log with every frame from t0 + s on stamped `shift` seconds later.
CandumpLog shifted_from(const CandumpLog& log, double s, double shift) {
  CandumpLog out = log;
  for (std::size_t i = frame_at(log, s); i < out.lines.size(); ++i)
    out.lines[i] = with_time(out.lines[i], frame_time(out.lines[i]) + shift);
  return out;
}

bool has_fault(const json& rec, const std::string& fault) {
  const auto& f = rec["health"]["faults"];
  return std::find(f.begin(), f.end(), fault) != f.end();
}

const Replay& clean() {
  static const Replay r = replay(default_config_file(), drive_piece(kPiece_s).write("clean"), "clean");
  return r;
}

// One line on stderr that names `what`, exit code `code`.
void expect_refused(const Result& r, int code, const std::string& what) {
  EXPECT_EQ(r.code, code) << r.err;
  EXPECT_THAT(r.err, HasSubstr(what));
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

}  // namespace

// "one frame's timestamp 1e9 s in the future (one changed digit): the replay never ends"
TEST(Integrity, AFrameStampedFarAheadIsDroppedAndTheReplayEndsLikeTheCleanOne) {
  CandumpLog log = drive_piece(kPiece_s);
  const std::size_t at = frame_at(log, kAt_s);
  log.lines[at] = with_time(log.lines[at], frame_time(log.lines[at]) + 1e9);
  const Replay r = replay(default_config_file(), log.write("stamp"), "stamp");
  ASSERT_EQ(r.result.code, 0) << r.result.err;
  ASSERT_EQ(clean().result.code, 0);
  // the same steps as without the frame, the last at the log's end
  EXPECT_EQ(r.summary["steps"], clean().summary["steps"]);
  EXPECT_LE(r.record_bytes().size(), clean().record_bytes().size() * 11 / 10);
  EXPECT_EQ(r.summary["frames"]["bad_log_lines"], 1);
  EXPECT_EQ(r.summary["frames"]["time_jumps"], 0);
  EXPECT_EQ(r.summary["frames"]["timestamp_backwards"], 0) << "the frame after it is not behind";
  ASSERT_EQ(r.summary["run"]["log_problems_first"].size(), 1u);
  EXPECT_THAT(r.summary["run"]["log_problems_first"][0].get<std::string>(),
              HasSubstr("ahead of the frames around it: frame dropped (line " + std::to_string(at + 1) + ")"));
  for (const auto& rec : r.records()) ASSERT_FALSE(has_fault(rec, "time_jump")) << "no reset for one bad stamp";
}

// "the rest of the log 1 s back: 1 s of data dropped; position off by up to 24 m, valid"
TEST(Integrity, ALogWhoseClockStepsBackGoesOnShiftedWithNothingStale) {
  const CandumpLog log = shifted_from(drive_piece(kPiece_s), kAt_s, -1.0);
  const Replay r = replay(default_config_file(), log.write("back"), "back");
  ASSERT_EQ(r.result.code, 0) << r.result.err;
  EXPECT_EQ(r.summary["frames"]["time_shifts"], 1);
  EXPECT_EQ(r.summary["frames"]["timestamp_backwards"], 1);
  EXPECT_EQ(r.summary["observer"]["stale_samples"], clean().summary["observer"]["stale_samples"])
      << "no sample is dropped as stale";
  EXPECT_EQ(r.summary["frames"]["decoded"], clean().summary["frames"]["decoded"]);
  // the steps of the whole log, on a time base that goes on (one frame spacing lost at most)
  EXPECT_NEAR(r.summary["steps"].get<double>(), clean().summary["steps"].get<double>(), 1.0);
  const auto a = clean().records(), b = r.records();
  ASSERT_EQ(a.size(), b.size());
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i]["health"]["valid"], b[i]["health"]["valid"]) << "t = " << b[i]["t"];
    worst = std::max(worst, std::hypot(a[i]["state"]["x"].get<double>() - b[i]["state"]["x"].get<double>(),
                                       a[i]["state"]["y"].get<double>() - b[i]["state"]["y"].get<double>()));
  }
  EXPECT_LT(worst, 0.05) << "the estimate of the shifted log is the clean one's";
}

// A forward jump beyond runtime.max_time_gap_s: never stepped through, one resynchronisation.
TEST(Integrity, AForwardJumpIsANewTimeBaseThatIsNotSteppedThrough) {
  const CandumpLog log = shifted_from(drive_piece(kPiece_s), kAt_s, 100.0);
  const Replay r = replay(default_config_file(), log.write("jump"), "jump");
  ASSERT_EQ(r.result.code, 0) << r.result.err;
  EXPECT_EQ(r.summary["frames"]["time_jumps"], 1);
  EXPECT_EQ(r.summary["faults_steps"]["time_jump"], 1);
  EXPECT_NEAR(r.summary["steps"].get<double>(), clean().summary["steps"].get<double>(), 2.0)
      << "100 s of gap would be 50000 steps";
  const auto records = r.records();
  std::size_t first_new = 0;
  while (first_new < records.size() && records[first_new]["t"].get<double>() < log.t0() + 50) ++first_new;
  ASSERT_LT(first_new, records.size());
  EXPECT_TRUE(has_fault(records[first_new], "time_jump"));
  EXPECT_FALSE(records[first_new]["health"]["valid"].get<bool>()) << "restarts from the fixes of the new time";
  EXPECT_NEAR(records[first_new]["t"].get<double>(), frame_time(log.lines[frame_at(drive_piece(kPiece_s), kAt_s)]),
              1e-6);
  EXPECT_TRUE(records.back()["health"]["valid"].get<bool>()) << "valid again on the new time base";
  EXPECT_THAT(r.summary["run"]["log_problems_first"][0].get<std::string>(), HasSubstr("jumps forward by 100"));
  // the same at any pace: the jump takes no wall time and the same bytes come out
  const Replay paced = replay(default_config_file(), log.write("jump"), "jump_paced", {}, "20");
  ASSERT_EQ(paced.result.code, 0) << paced.result.err;
  const std::string x = r.record_bytes(), y = paced.record_bytes();
  EXPECT_TRUE(x == y) << first_difference(x, y);
}

// "--summary-json to a missing folder, --record /dev/full: exit 0, no message"
TEST(Integrity, ASummaryIntoAMissingFolderIsRefusedBeforeTheRun) {
  const std::string summary = (temp_path("no such folder") / "summary.json").string();
  const Result r = run(MBO_DAEMON, {"--config", default_config_file().string(), "--replay",
                                    drive_piece(kPiece_s).write("piece").string(), "--rate", "max", "--summary-json",
                                    summary, "--no-progress"});
  expect_refused(r, 2, summary + ": cannot write: No such file or directory");
  EXPECT_EQ(r.out, "");
}

TEST(Integrity, ARecordThatCannotBeWrittenEndsTheReplayWithExitCode1) {
  const fs::path summary = temp_path("full.summary.json");
  const Result r = run(MBO_DAEMON, {"--config", default_config_file().string(), "--replay",
                                    drive_piece(kPiece_s).write("piece").string(), "--rate", "max", "--record",
                                    "/dev/full", "--summary-json", summary.string(), "--no-progress"});
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("record /dev/full: write failed: No space left on device (ENOSPC)"));
  const json s = read_json(summary);
  ASSERT_TRUE(s.is_object());
  EXPECT_EQ(s["run"]["records_written"], 0);
  EXPECT_GE(s["outputs"]["write_errors"].get<int>(), 1);
  EXPECT_EQ(s["outputs"]["last_write_error"], "ENOSPC");
  EXPECT_LT(s["steps"].get<int>(), clean().summary["steps"].get<int>()) << "it stopped";
}

TEST(Integrity, ASummaryThatCannotBeWrittenIsExitCode1) {
  const Result r = run(MBO_DAEMON, {"--config", default_config_file().string(), "--replay",
                                    drive_piece(kPiece_s).write("piece").string(), "--rate", "max", "--summary-json",
                                    "/dev/full", "--no-progress"});
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("summary /dev/full: write failed: No space left on device (ENOSPC)"));
}

// A calibration file that cannot be written is lost learning (docs/configuration.md): logged with
// its path and errno, counted in outputs.write_errors like the record's and the summary's
// failures, and the replay, which it does not stop, exits 1.
TEST(Integrity, ACalibrationFileThatCannotBeWrittenIsCountedAndExitCode1) {
  json c = default_config();
  c["observer"]["imu"]["estimate_gyro_bias"] = json::object();  // something to keep (defaults)
  const fs::path config = write_config(c, "learning"), log = drive_piece(kPiece_s).write("piece");
  const fs::path not_a_folder = temp_path("not_a_folder");
  write_file(not_a_folder, "a file, so no folder to write in\n");
  const fs::path calibration = not_a_folder / "calibration.json";
  const Replay r = replay(config, log, "unsaved", {"--calibration", calibration.string()});
  EXPECT_EQ(r.result.code, 1) << r.result.err;
  EXPECT_THAT(r.result.err, HasSubstr(calibration.string() + ".tmp: cannot create: Not a directory"));
  ASSERT_TRUE(r.summary.is_object()) << r.result.err;
  // the final save, and any periodic one the status timer made on the way (wall time: not counted on)
  EXPECT_GE(r.summary["outputs"]["write_errors"].get<int>(), 1);
  EXPECT_EQ(r.summary["outputs"]["last_write_error"], "ENOTDIR");
  // the replay went to its end: the estimates of a run whose calibration file was written
  const fs::path saved = temp_path("saved.calibration.json");
  const Replay reference = replay(config, log, "saved", {"--calibration", saved.string()});
  ASSERT_EQ(reference.result.code, 0) << reference.result.err;
  EXPECT_EQ(reference.summary["outputs"]["write_errors"], 0);
  EXPECT_TRUE(fs::is_regular_file(saved));
  EXPECT_EQ(r.summary["steps"], reference.summary["steps"]);
  const std::string x = reference.record_bytes(), y = r.record_bytes();
  EXPECT_TRUE(x == y) << first_difference(x, y);
}

TEST(Integrity, TheRecordStopsAtItsSizeLimit) {
  const fs::path record = temp_path("limited.jsonl");
  const Result r = run(MBO_DAEMON, {"--config", default_config_file().string(), "--replay",
                                    drive_piece(kPiece_s).write("piece").string(), "--rate", "max", "--record",
                                    record.string(), "--record-max-mb", "1", "--no-progress"});
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("would pass --record-max-mb (1 MiB): recording stops"));
  EXPECT_LE(fs::file_size(record), 1u << 20);
  const json s = json::parse(r.out);
  EXPECT_EQ(s["outputs"]["last_write_error"], "EFBIG");
  EXPECT_EQ(s["run"]["records_written"].get<std::size_t>(), lines_of(record).size()) << "whole lines only";
}

// "--config /dev/zero / --replay /dev/zero: memory grows without bound / 100 % CPU forever"
TEST(Integrity, DevicesPipesAndFoldersAreNoInputFiles) {
  const std::string fifo = temp_path("fifo").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const std::string& file : {std::string("/dev/zero"), fifo}) {
    SCOPED_TRACE(file);
    expect_refused(run(MBO_DAEMON, {"--config", default_config_file().string(), "--replay", file}), 2,
                   file + ": not a regular file (a device, a pipe or a socket)");
    expect_refused(run(MBO_DAEMON, {"--config", file, "--check-config"}), 2, file + ": not a regular file");
  }
  const std::string folder = temp_path("folder").string();
  fs::create_directories(folder);
  expect_refused(run(MBO_DAEMON, {"--config", default_config_file().string(), "--replay", folder}), 2,
                 folder + ": is a folder, not a file");
}

// "a DBC path that is a folder: exit 1 (systemd would restart-loop), message without file"
TEST(Integrity, ADbcOrVehicleThatIsAFolderIsExitCode2NamingThePointer) {
  const std::string folder = temp_path("dbc_folder").string();
  fs::create_directories(folder);
  json c = default_config();
  c["can"]["dbc"] = json::array({folder});
  const fs::path file = write_config(c, "dbc_folder");
  expect_refused(run(MBO_DAEMON, {"--config", file.string(), "--check-config"}), 2,
                 file.string() + ": /can/dbc/0: " + folder + ": is a folder, not a file");
  c = default_config();
  c["vehicle"] = folder;
  const fs::path file2 = write_config(c, "vehicle_folder");
  expect_refused(run(MBO_DAEMON, {"--config", file2.string(), "--check-config"}), 2,
                 file2.string() + ": /vehicle: " + folder + ": is a folder, not a file");
}

// "--check-config with a DBC signal past the end of its message, a factor 0, initial_std
// 1e308, an antenna at 1e308 m: configuration OK"
TEST(Integrity, CheckConfigRefusesWhatNoCarOrFrameCouldHave) {
  const std::string dbc_text = slurp(fs::path(MBO_SOURCE_DIR) / "config" / "can" / "vehicle.dbc");
  const std::string gyro = " SG_ GyroZ : 40|20@1- (1E-005,0)";
  ASSERT_NE(dbc_text.find(gyro), std::string::npos);
  auto dbc_with = [&](const std::string& name, const std::string& line) {
    std::string t = dbc_text;
    t.replace(t.find(gyro), gyro.size(), line);
    const fs::path p = temp_path(name + ".dbc");
    write_file(p, t);
    return p.string();
  };
  const long gyro_line = 1 + std::count(dbc_text.begin(), dbc_text.begin() + dbc_text.find(gyro), '\n');
  struct Case {
    std::function<void(json&)> change;
    std::string what;
  };
  const std::string past = dbc_with("past_end", " SG_ GyroZ : 50|20@1- (1E-005,0)");
  const std::string zero = dbc_with("factor0", " SG_ GyroZ : 40|20@1- (0,0)");
  const std::vector<Case> cases = {
      {[&](json& c) { c["can"]["dbc"] = json::array({past}); },
       "/can/signals/gyro_z/signal: " + past + ":" + std::to_string(gyro_line) +
           ": IMU_Gyro.GyroZ (start bit 50, 20 bits, little-endian) needs 9 bytes: it does not fit its 8-byte "
           "message"},
      {[&](json& c) { c["can"]["dbc"] = json::array({zero}); },
       "/can/signals/gyro_z/signal: " + zero + ":" + std::to_string(gyro_line) + ": IMU_Gyro.GyroZ has factor 0"},
      {[](json& c) { c["observer"]["filter"]["initial_std"]["x"] = 1e308; },
       "/observer/filter/initial_std/x: must be in (0, 10000], got 1e+308"},
      {[](json& c) {
         c["observer"]["gnss"]["antenna"] = {1e308, 0, 1.45};
       },
       "/observer/gnss/antenna/0: must be in [-50, 50], got 1e+308"},
      {[](json& c) { c["runtime"]["queue_capacity"] = 18446744073709551615ull; },
       "/runtime/queue_capacity: must be in [16, 1048576], got 18446744073709551615"},
      {[](json& c) { c["runtime"]["max_time_disorder_s"] = 5; }, "/runtime/max_time_disorder_s: must be below"},
      {[](json& c) { c["observer"]["wheel_speeds"]["speed_std"] = 1e9; },
       "/observer/wheel_speeds/speed_std: must be in [0, 100], got 1e+09"},
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].what);
    json c = default_config();
    cases[i].change(c);
    const fs::path file = write_config(c, "strict" + std::to_string(i));
    const Result r = run(MBO_DAEMON, {"--config", file.string(), "--check-config"});
    expect_refused(r, 2, file.string() + ": " + cases[i].what);
    EXPECT_EQ(r.out, "");
  }
}

// "--stop-after -1/nan: accepted silently"
TEST(Integrity, OptionValuesThatAreNoAmountsAreRefused) {
  for (const std::string v : {"-1", "nan", "inf", "0"}) {
    SCOPED_TRACE(v);
    expect_refused(run(MBO_DAEMON, {"--config", default_config_file().string(), "--replay",
                                    drive_piece(kPiece_s).write("piece").string(), "--stop-after", v}),
                   2, "--stop-after: expected a number of seconds > 0, got \"" + v + "\"");
    expect_refused(run(MBO_DAEMON, {"--config", default_config_file().string(), "--replay",
                                    drive_piece(kPiece_s).write("piece").string(), "--record-max-mb", v}),
                   2, "--record-max-mb: expected a number of MiB > 0, got \"" + v + "\"");
  }
}

// "SIGHUP: the daemon dies (exit 129) without a summary or a final status datagram"
TEST(Integrity, SighupReopensTheOutputFilesAndTheDaemonGoesOn) {
  const fs::path record = temp_path("hup.jsonl"), rotated = temp_path("hup.jsonl.1");
  const fs::path summary = temp_path("hup.summary.json"), summary_rotated = temp_path("hup.summary.json.1");
  Child daemon(MBO_DAEMON,
               // a tenth of real time: 80 s of drive, so that the daemon is still running when
               // the signals come however long the machine stalls (SIGTERM ends it)
               {"--config", default_config_file().string(), "--replay", drive_log().string(), "--rate", "0.1",
                "--record", record.string(), "--summary-json", summary.string(), "--no-progress"},
               "hup");
  ASSERT_TRUE(poll_until([&] { return slurp(record).find('\n') != std::string::npos || !daemon.running(); }));
  ASSERT_TRUE(daemon.running()) << daemon.wait().err;
  // logrotate: move the files away, then ask for new ones
  fs::rename(record, rotated);
  fs::rename(summary, summary_rotated);
  daemon.signal(SIGHUP);
  ASSERT_TRUE(poll_until([&] { return slurp(record).find('\n') != std::string::npos || !daemon.running(); }));
  ASSERT_TRUE(daemon.running()) << "SIGHUP must not stop it: " << daemon.wait().err;
  daemon.signal(SIGTERM);
  const Result r = daemon.wait();
  EXPECT_EQ(r.code, 0) << r.err;
  const json s = read_json(summary);
  ASSERT_TRUE(s.is_object()) << "the summary at the path, in the new file";
  EXPECT_EQ(json::parse(r.out), s);
  EXPECT_EQ(s["outputs"]["reopens"], 1);
  EXPECT_EQ(s["outputs"]["write_errors"], 0);
  // every record in one of the two files, whole lines, none twice
  const auto before = lines_of(rotated), after = lines_of(record);
  EXPECT_GT(before.size(), 0u);
  EXPECT_GT(after.size(), 0u);
  EXPECT_EQ(before.size() + after.size(), s["steps"].get<std::size_t>());
  EXPECT_LT(json::parse(before.back())["seq"].get<long>(), json::parse(after.front())["seq"].get<long>());
  // each signal logged once
  auto count = [&](const std::string& what) {
    std::size_t n = 0;
    for (auto at = r.err.find(what); at != std::string::npos; at = r.err.find(what, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("SIGHUP"), 1u) << r.err;
  EXPECT_EQ(count("SIGTERM"), 1u) << r.err;
}
