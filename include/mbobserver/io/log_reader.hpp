// Reads a recorded CAN log, candump -l or Vector ASC (recognised by content, not by file
// name), one frame at a time. A line that cannot be read is counted and remembered with its
// line number and skipped: a damaged log never stops a replay. Frames come in file order;
// a timestamp that goes backwards is counted (and reported) but not reordered.
#pragma once

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "mbobserver/io/asc.hpp"
#include "mbobserver/io/can_frame.hpp"

namespace mbo::io {

enum class LogFormat { candump, asc };

struct LogProblem {
  std::uint64_t line = 0;
  std::string message;  // "candump: id: not hexadecimal", "timestamp goes back by 0.5 s", ...
};

struct LogStats {
  std::uint64_t lines = 0;
  std::uint64_t frames = 0;
  std::uint64_t bad_lines = 0;  // unreadable lines, skipped
  std::uint64_t skipped_lines = 0;  // headers, comments and non-frame events
  std::uint64_t backwards = 0;  // frames whose time is before the previous frame's
};

class LogReader {
 public:
  static constexpr std::size_t kMaxLineLength = 4096;  // longer lines are bad lines
  static constexpr std::size_t kMaxProblemsKept = 1000;  // more are counted, not kept

  // Opens a file; an unreadable file, a folder, a device, a pipe or a file that is neither
  // format is a ConfigError ("file: cannot open: ..." / "file: not a regular file (a device, a
  // pipe or a socket)" / "file: not a candump -l or Vector ASC log").
  explicit LogReader(const std::filesystem::path& file);
  // Reads text already in memory (tests, fuzzing); `name` is used in messages.
  LogReader(std::string text, std::string name);
  ~LogReader();
  LogReader(const LogReader&) = delete;
  LogReader& operator=(const LogReader&) = delete;

  // Next frame in file order; false at the end of the file (`frame` is then unspecified).
  bool next(CanFrame& frame);

  LogFormat format() const { return format_; }
  const std::string& name() const { return name_; }
  // Interface names by CanFrame::channel: candump names in order of first appearance; for
  // ASC the file's channel numbers ("1", "2", ...).
  const std::vector<std::string>& interfaces() const { return interfaces_; }
  const LogStats& stats() const { return stats_; }
  const std::vector<LogProblem>& problems() const { return problems_; }
  std::uint64_t line() const { return line_no_; }  // line of the last frame returned
  // Fraction of the input consumed so far, 0..1 (for a progress line).
  double fraction_read() const;

  // The caller judges the frames' times (the daemon's runtime::LogTimeline, which looks a
  // frame ahead): the reader then neither counts nor reports a timestamp going backwards.
  void set_time_checks(bool on) { time_checks_ = on; }
  // A problem the caller found at `line` (kept in line order with the reader's own).
  void add_problem(std::uint64_t line, std::string message);
  // The caller drops a frame the reader returned (from `line`): it counts as a bad line.
  void reject_frame(std::uint64_t line, std::string message);

 private:
  bool next_line(std::string_view& line, bool& too_long);
  void sniff();
  void problem(std::string message);
  std::uint8_t channel_of(std::string_view interface, bool& ok);

  std::string name_;
  std::FILE* file_ = nullptr;
  std::vector<char> buf_;
  const char* base_ = nullptr;  // buf_.data()
  std::size_t begin_ = 0, end_ = 0;
  bool eof_ = false;
  std::uint64_t size_bytes_ = 0, read_bytes_ = 0;
  std::uint64_t line_no_ = 0;
  LogFormat format_ = LogFormat::candump;
  AscParser asc_;
  std::vector<std::string> interfaces_;
  std::size_t last_interface_ = 0;
  double last_t_ = 0;
  bool have_t_ = false;
  bool time_checks_ = true;
  LogStats stats_;
  std::vector<LogProblem> problems_;
};

}  // namespace mbo::io
