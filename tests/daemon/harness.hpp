// What the daemon's end-to-end tests share: running the built programs as child processes
// (exit code, stdout, stderr), temporary files, a configuration written for the test, the
// simulated drive, and a candump log as text lines to cut and damage.
//
// Nothing here waits on the wall clock for synchronisation: children are waited for, files
// are read after the child that wrote them has exited.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace mbo::dtest {

namespace fs = std::filesystem;
using nlohmann::json;

// ---- files ----

// A path in a directory of this test process, removed at exit (CTest runs every test case in
// a process of its own, so cases never share one).
fs::path temp_path(const std::string& name);
std::string slurp(const fs::path& file);
void write_file(const fs::path& file, const std::string& text);
std::vector<std::string> lines_of(const fs::path& file);
json read_json(const fs::path& file);
// "" if equal, else where two texts first differ (line number and both lines), for messages.
std::string first_difference(const std::string& a, const std::string& b);

// ---- child processes ----

struct Result {
  int code = -1;  // exit status, or 128 + signal
  std::string out, err;
};

// Starts `program args...` with stdout and stderr sent to files; kills it if still running
// when destroyed (a failed assertion must not leave a daemon behind).
class Child {
 public:
  Child(const std::string& program, const std::vector<std::string>& args, const std::string& tag);
  ~Child();
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  bool running();
  void signal(int signo);
  // Waits for the exit; the captured output is complete after this. After `guard_s` (a hang
  // guard: a replay that deadlocks must fail, not stall the suite) the child is killed.
  Result wait(double guard_s = 300);

 private:
  void record(int status);
  pid_t pid_ = -1;
  bool exited_ = false;
  int code_ = -1;
  fs::path out_, err_;
};

// Runs a program to its end.
Result run(const std::string& program, const std::vector<std::string>& args, const std::string& tag = "run");

// Checks every line of a JSONL file against docs/*.schema.json with python3-jsonschema
// (tests/runtime/validate_jsonl.py, an implementation independent of ours); code 0 when all
// validate, the checker's report in `out`.
Result validate_with_schemas(const fs::path& jsonl);

// Calls `done()` every few milliseconds until it is true; false after `guard_s` seconds. The
// limit is a hang guard only, never an expectation about how fast anything is.
bool poll_until(const std::function<bool()>& done, double guard_s = 120);

// ---- configuration ----

// config/mbobserver.json with its file paths made absolute, so that a copy works from any
// directory, and publishing switched off: a test that publishes sets its own destination
// (port 47800 may belong to someone else's daemon on this machine).
json default_config();
fs::path write_config(const json& config, const std::string& name);
// default_config() written once per test process ("config.json" in its temporary folder).
const fs::path& default_config_file();

// ---- the simulated drive ----

// scenarios/vehicle_double_lane_change.json through mbobserver-sim (8 s), made once by the
// build (tests/daemon/CMakeLists.txt): the candump log and the ground truth CSV.
fs::path drive_log();
fs::path drive_truth();

// ---- candump logs as text ----

// "(1700000000.002000) can0 123#DEADBEEF": the parts a test cuts or rewrites.
double frame_time(const std::string& line);
std::uint32_t frame_id(const std::string& line);
std::string with_time(const std::string& line, double t);
std::string with_data(const std::string& line, const std::string& hex);
std::string candump_line(double t, const std::string& id_hex, const std::string& data_hex);
// An IEEE double as the 16 hex digits of its little-endian bytes (the DBC's GNSS signals).
std::string le_double_hex(double v);

struct CandumpLog {
  std::vector<std::string> lines;

  static CandumpLog read(const fs::path& file);
  double t0() const { return frame_time(lines.front()); }
  double t_end() const { return frame_time(lines.back()); }
  // The frames of the first `seconds` of the log.
  CandumpLog first_seconds(double seconds) const;
  // Drops the frames with one of `ids` from log time t0() + `from_s` on.
  CandumpLog without_ids_from(const std::vector<std::uint32_t>& ids, double from_s) const;
  std::string text() const;
  fs::path write(const std::string& name) const;
};

// The first `seconds` of the simulated drive, read once per length and test process.
const CandumpLog& drive_piece(double seconds);

// ---- the daemon ----

struct Replay {
  Result result;
  fs::path record;
  json summary;  // --summary-json, empty if the file was not written
  std::string record_bytes() const { return slurp(record); }
  std::vector<json> records() const;
};

// mbobserverd --config CONFIG --replay LOG --rate RATE --record ... --summary-json ...
// --no-progress, plus `extra`. `tag` names the output files.
Replay replay(const fs::path& config, const fs::path& log, const std::string& tag,
              const std::vector<std::string>& extra = {}, const std::string& rate = "max");

}  // namespace mbo::dtest
