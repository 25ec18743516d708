#include "mbobserver/io/log_reader.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>

#include "mbobserver/core/input_file.hpp"
#include "mbobserver/core/json_reader.hpp"
#include "mbobserver/io/candump.hpp"

namespace mbo::io {

namespace {

constexpr std::size_t kChunk = 1 << 16;

std::string format_seconds(double s) {
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof buf, s);
  return std::string(buf, r.ptr);
}

bool looks_like_asc(std::string_view l) {
  while (!l.empty() && (l.front() == ' ' || l.front() == '\t')) l.remove_prefix(1);
  auto starts = [&](std::string_view p) {
    if (l.size() < p.size()) return false;
    for (std::size_t i = 0; i < p.size(); ++i)
      if ((l[i] | 0x20) != (p[i] | 0x20)) return false;
    return true;
  };
  return starts("date ") || starts("base ") || starts("// version") || starts("begin triggerblock") ||
         starts("internal events logged") || starts("no internal events logged");
}

}  // namespace

LogReader::LogReader(const std::filesystem::path& file) : name_(file.string()) {
  // A log is read once through and sniffed from its start: /dev/zero would be read for ever, a
  // pipe cannot be rewound after the sniff.
  require_regular_file(file);
  file_ = std::fopen(name_.c_str(), "rb");
  if (!file_) throw ConfigError(name_ + ": cannot open: " + std::strerror(errno));
  std::error_code ec;
  const auto size = std::filesystem::file_size(file, ec);
  size_bytes_ = ec ? 0 : size;
  buf_.resize(kChunk * 2);
  base_ = buf_.data();
  sniff();
}

LogReader::LogReader(std::string text, std::string name) : name_(std::move(name)) {
  buf_.assign(text.begin(), text.end());
  base_ = buf_.data();
  end_ = buf_.size();
  eof_ = true;
  size_bytes_ = read_bytes_ = buf_.size();
  sniff();
}

LogReader::~LogReader() {
  if (file_) std::fclose(file_);
}

// Decides the format from the first lines that say something, then rewinds.
void LogReader::sniff() {
  const std::size_t save_begin = begin_;
  std::string_view line;
  bool too_long = false;
  bool decided = false;
  for (int n = 0; n < 64 && next_line(line, too_long); ++n) {
    std::string_view l = line;
    while (!l.empty() && (l.front() == ' ' || l.front() == '\t' || l.front() == '\r')) l.remove_prefix(1);
    if (l.empty() || too_long) continue;
    CandumpRecord rec;
    if (l.front() == '(' && parse_candump_line(l, rec).empty()) {
      format_ = LogFormat::candump;
      decided = true;
      break;
    }
    if (looks_like_asc(l)) {
      format_ = LogFormat::asc;
      decided = true;
      break;
    }
    CanFrame f;
    AscParser probe;
    if (probe.parse_line(l, f) == AscParser::Kind::frame) {
      format_ = LogFormat::asc;
      decided = true;
      break;
    }
  }
  if (!decided) throw ConfigError(name_ + ": not a candump -l or Vector ASC log");
  // Rewind: a file is re-read from the start, text in memory was never dropped.
  if (file_) {
    std::rewind(file_);
    read_bytes_ = 0;
    begin_ = end_ = 0;
    eof_ = false;
  } else {
    begin_ = save_begin;
  }
  line_no_ = 0;
}

bool LogReader::next_line(std::string_view& line, bool& too_long) {
  too_long = false;
  bool discarding = false;  // inside a line already known to be too long
  while (true) {
    const char* b = base_ + begin_;
    const std::size_t avail = end_ - begin_;
    const void* nl = avail > 0 ? std::memchr(b, '\n', avail) : nullptr;
    if (nl) {
      const auto n = static_cast<std::size_t>(static_cast<const char*>(nl) - b);
      begin_ += n + 1;
      ++line_no_;
      too_long = discarding || n > kMaxLineLength;
      line = too_long ? std::string_view() : std::string_view(b, n);
      return true;
    }
    if (eof_) {
      if (avail == 0 && !discarding) return false;
      begin_ = end_;  // the last line has no newline
      ++line_no_;
      too_long = discarding || avail > kMaxLineLength;
      line = too_long ? std::string_view() : std::string_view(b, avail);
      return true;
    }
    if (avail > kMaxLineLength) {  // drop what we have of an over-long line
      discarding = true;
      begin_ = end_ = 0;
    } else if (begin_ > 0) {
      std::memmove(buf_.data(), b, avail);
      end_ = avail;
      begin_ = 0;
    }
    const std::size_t got = std::fread(buf_.data() + end_, 1, buf_.size() - end_, file_);
    if (got == 0) eof_ = true;
    end_ += got;
    read_bytes_ += got;
  }
}

double LogReader::fraction_read() const {
  if (size_bytes_ == 0) return eof_ && begin_ == end_ ? 1.0 : 0.0;
  const double consumed = static_cast<double>(read_bytes_) - static_cast<double>(end_ - begin_);
  return std::clamp(consumed / static_cast<double>(size_bytes_), 0.0, 1.0);
}

void LogReader::problem(std::string message) { add_problem(line_no_, std::move(message)); }

void LogReader::add_problem(std::uint64_t line, std::string message) {
  // A caller that looks ahead reports a line before the reader's newest problems.
  const auto at = std::upper_bound(problems_.begin(), problems_.end(), line,
                                   [](std::uint64_t l, const LogProblem& p) { return l < p.line; }) -
                  problems_.begin();
  if (problems_.size() >= kMaxProblemsKept) {
    if (at == static_cast<long>(problems_.size())) return;  // the first kMaxProblemsKept are kept
    problems_.pop_back();
  }
  problems_.insert(problems_.begin() + at, {line, std::move(message)});
}

void LogReader::reject_frame(std::uint64_t line, std::string message) {
  ++stats_.bad_lines;
  if (stats_.frames > 0) --stats_.frames;
  add_problem(line, std::move(message));
}

std::uint8_t LogReader::channel_of(std::string_view interface, bool& ok) {
  ok = true;
  // Logs rarely switch interface: compare with the last one inline (no memcmp call).
  if (last_interface_ < interfaces_.size()) {
    const std::string& last = interfaces_[last_interface_];
    if (last.size() == interface.size()) {
      std::size_t i = 0;
      while (i < last.size() && last[i] == interface[i]) ++i;
      if (i == last.size()) return static_cast<std::uint8_t>(last_interface_);
    }
  }
  for (std::size_t i = 0; i < interfaces_.size(); ++i)
    if (interfaces_[i] == interface) {
      last_interface_ = i;
      return static_cast<std::uint8_t>(i);
    }
  if (interfaces_.size() >= 256) {
    ok = false;
    return 0;
  }
  interfaces_.emplace_back(interface);
  last_interface_ = interfaces_.size() - 1;
  return static_cast<std::uint8_t>(last_interface_);
}

bool LogReader::next(CanFrame& frame) {
  std::string_view line;
  bool too_long = false;
  while (next_line(line, too_long)) {
    ++stats_.lines;
    if (too_long) {
      ++stats_.bad_lines;
      problem("line longer than " + std::to_string(kMaxLineLength) + " bytes");
      continue;
    }
    if (format_ == LogFormat::candump) {
      std::string_view interface;
      std::string_view err = parse_candump_line(line, frame, interface);
      if (!err.empty()) {
        if (err == "empty line") {
          ++stats_.skipped_lines;
          continue;
        }
        ++stats_.bad_lines;
        problem("candump: " + std::string(err));
        continue;
      }
      bool ok = true;
      frame.channel = channel_of(interface, ok);
      if (!ok) {
        ++stats_.bad_lines;
        problem("candump: more than 256 interface names");
        continue;
      }
    } else {
      CanFrame f;
      switch (asc_.parse_line(line, f)) {
        case AscParser::Kind::skipped:
          ++stats_.skipped_lines;
          continue;
        case AscParser::Kind::bad:
          ++stats_.bad_lines;
          problem("asc: " + std::string(asc_.error()));
          continue;
        case AscParser::Kind::frame:
          break;
      }
      while (interfaces_.size() <= f.channel) interfaces_.push_back(std::to_string(interfaces_.size() + 1));
      frame = f;
    }
    if (time_checks_ && have_t_ && frame.t < last_t_) {
      ++stats_.backwards;
      problem("timestamp goes back by " + format_seconds(last_t_ - frame.t) + " s");
    }
    last_t_ = frame.t;
    have_t_ = true;
    ++stats_.frames;
    return true;
  }
  return false;
}

}  // namespace mbo::io
