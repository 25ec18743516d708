#include "mbobserver/io/asc.hpp"

#include <charconv>
#include <cmath>
#include <ctime>
#include <utility>

namespace mbo::io {

namespace {

constexpr std::uint32_t kFlagEdl = 0x1000;  // BLF CAN_FD_MESSAGE_64: extended data length
constexpr std::uint32_t kFlagRemote = 0x0010;  // remote frame

inline bool blank(char c) { return c == ' ' || c == '\t'; }

// Splits on runs of blanks.
class Tokens {
 public:
  explicit Tokens(std::string_view s) : s_(s) {}
  std::string_view next() {
    while (p_ < s_.size() && blank(s_[p_])) ++p_;
    std::size_t b = p_;
    while (p_ < s_.size() && !blank(s_[p_])) ++p_;
    return s_.substr(b, p_ - b);
  }
  std::string_view peek() {
    std::size_t save = p_;
    std::string_view t = next();
    p_ = save;
    return t;
  }
  std::string_view rest() {
    while (p_ < s_.size() && blank(s_[p_])) ++p_;
    return s_.substr(p_);
  }

 private:
  std::string_view s_;
  std::size_t p_ = 0;
};

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

bool all_digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

// A plain decimal time "12.345678": digits and at most one '.', nothing else.
bool parse_time(std::string_view s, double& t) {
  if (s.empty() || s.size() > 30) return false;
  bool dot = false, digit = false;
  for (char c : s) {
    if (c >= '0' && c <= '9')
      digit = true;
    else if (c == '.' && !dot)
      dot = true;
    else
      return false;
  }
  if (!digit) return false;
  auto r = std::from_chars(s.data(), s.data() + s.size(), t, std::chars_format::fixed);
  return r.ec == std::errc() && r.ptr == s.data() + s.size() && std::isfinite(t);
}

template <class T>
bool parse_uint(std::string_view s, int base, T& v) {
  if (s.empty()) return false;
  auto r = std::from_chars(s.data(), s.data() + s.size(), v, base);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

// "6F9" or "18EBFF00x" (x: 29-bit), in the file's base.
bool parse_id(std::string_view s, int base, CanFrame& f) {
  f.extended = false;
  if (!s.empty() && (s.back() == 'x' || s.back() == 'X')) {
    f.extended = true;
    s.remove_suffix(1);
  }
  std::uint32_t id = 0;
  if (s.size() > 10 || !parse_uint(s, base, id)) return false;
  if (f.extended ? id > 0x1FFFFFFF : id > 0x7FF) return false;
  f.id = id;
  return true;
}

bool parse_channel(std::string_view s, CanFrame& f) {
  unsigned ch = 0;
  if (!all_digits(s) || s.size() > 3 || !parse_uint(s, 10, ch) || ch < 1 || ch > 256) return false;
  f.channel = static_cast<std::uint8_t>(ch - 1);
  return true;
}

bool parse_byte(std::string_view s, int base, std::uint8_t& b) {
  unsigned v = 0;
  if (s.size() > 3 || !parse_uint(s, base, v) || v > 255) return false;
  b = static_cast<std::uint8_t>(v);
  return true;
}

inline bool fd_length(std::size_t n) {
  return n <= 8 || n == 12 || n == 16 || n == 20 || n == 24 || n == 32 || n == 48 || n == 64;
}

}  // namespace

std::optional<double> parse_asc_date(std::string_view text) {
  // "<weekday> <month> <day> <hh:mm:ss[.frac]> [am|pm] <year>": CANoe writes English or German
  // names and 24 h or 12 h with am/pm, python-can "%a %b %d %I:%M:%S.%f %p %Y".
  static constexpr std::pair<std::string_view, int> kMonths[] = {
      {"Jan", 1}, {"Feb", 2},  {"Mar", 3},  {"M\xC3\xA4r", 3}, {"M\xE4r", 3}, {"Mrz", 3},
      {"Apr", 4}, {"May", 5},  {"Mai", 5},  {"Jun", 6},        {"Jul", 7},    {"Aug", 8},
      {"Sep", 9}, {"Oct", 10}, {"Okt", 10}, {"Nov", 11},       {"Dec", 12},   {"Dez", 12}};
  Tokens tok(text);
  tok.next();  // weekday
  const std::string_view month = tok.next(), day = tok.next(), clock = tok.next();
  std::string_view ampm = tok.next(), year = ampm;
  const bool twelve = iequals(ampm, "am") || iequals(ampm, "pm");
  if (twelve) year = tok.next();
  std::tm tm{};
  tm.tm_mon = -1;
  for (const auto& [name, number] : kMonths)
    if (iequals(month, name)) tm.tm_mon = number - 1;
  unsigned d = 0, y = 0, hh = 0, mm = 0, ss = 0;
  if (tm.tm_mon < 0 || !parse_uint(day, 10, d) || d < 1 || d > 31 || !parse_uint(year, 10, y) || y < 1970 || y > 9999 ||
      clock.size() < 8 || clock[2] != ':' || clock[5] != ':' || !parse_uint(clock.substr(0, 2), 10, hh) ||
      !parse_uint(clock.substr(3, 2), 10, mm) || !parse_uint(clock.substr(6, 2), 10, ss) || mm > 59 || ss > 60)
    return std::nullopt;
  long micro = 0;
  if (clock.size() > 8) {
    if (clock[8] != '.' || clock.size() > 15 || !all_digits(clock.substr(9))) return std::nullopt;
    std::string_view frac = clock.substr(9);
    for (std::size_t i = 0; i < 6; ++i) micro = micro * 10 + (i < frac.size() ? frac[i] - '0' : 0);
  }
  if (twelve) {
    if (hh < 1 || hh > 12) return std::nullopt;
    hh = hh % 12 + (iequals(ampm, "pm") ? 12 : 0);
  } else if (hh > 23) {
    return std::nullopt;
  }
  tm.tm_mday = static_cast<int>(d);
  tm.tm_year = static_cast<int>(y) - 1900;
  tm.tm_hour = static_cast<int>(hh);
  tm.tm_min = static_cast<int>(mm);
  tm.tm_sec = static_cast<int>(ss);
  tm.tm_isdst = -1;  // local time, as the file was written (and as python-can reads it back)
  const std::time_t s = std::mktime(&tm);
  if (s == static_cast<std::time_t>(-1)) return std::nullopt;
  // datetime.timestamp() of a naive datetime: mktime plus microseconds / 1e6
  return static_cast<double>(s) + static_cast<double>(micro) / 1e6;
}

AscParser::Kind AscParser::parse_line(std::string_view line, CanFrame& out) {
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r' || blank(line.back()))) line.remove_suffix(1);
  while (!line.empty() && blank(line.front())) line.remove_prefix(1);
  if (line.empty() || line.starts_with("//")) return Kind::skipped;

  Tokens tok(line);
  std::string_view first = tok.next();
  if (!(first[0] >= '0' && first[0] <= '9')) {
    if (iequals(first, "date")) {
      // The measurement's start: frame times count from it (a malformed date keeps the log's
      // own clock rather than failing the log).
      if (auto s = parse_asc_date(tok.rest())) start_ = *s;
      return Kind::skipped;
    }
    if (iequals(first, "base")) {
      std::string_view b = tok.next();
      if (iequals(b, "hex"))
        decimal_ = false;
      else if (iequals(b, "dec"))
        decimal_ = true;
      else
        return bad("base: expected hex or dec");
      if (iequals(tok.next(), "timestamps")) {
        std::string_view m = tok.next();
        if (iequals(m, "absolute"))
          relative_ = false;
        else if (iequals(m, "relative"))
          relative_ = true;
        else
          return bad("base: timestamps must be absolute or relative");
      }
      return Kind::skipped;
    }
    if (iequals(first, "internal") || iequals(first, "no")) return Kind::skipped;
    if (iequals(first, "Begin") || iequals(first, "End")) {
      if (!iequals(tok.next(), "Triggerblock")) return bad("expected Begin/End Triggerblock");
      last_t_ = 0;  // relative times restart with each trigger block
      // python-can's ASCReader and ASCWriter: the block's date is when its times count from
      if (iequals(first, "Begin"))
        if (auto s = parse_asc_date(tok.rest())) start_ = *s;
      return Kind::skipped;
    }
    return bad("not an ASC header, comment or event line");
  }

  double t = 0;
  if (!parse_time(first, t)) return bad("timestamp: not a plain decimal number");
  if (relative_) t += last_t_;
  last_t_ = t;
  t += start_;  // python-can adds them the same way (float(timestamp) + start_time)

  std::string_view second = tok.next();
  if (second == "CANFD") return parse_fd(tok.rest(), t, out);
  if (!all_digits(second)) return Kind::skipped;  // "Start of measurement", "CAN 1 Status:..."
  std::string_view third = tok.peek();
  if (third == "ErrorFrame") {
    CanFrame f;
    if (!parse_channel(second, f)) return bad("channel: not in 1..256");
    f.t = t;
    f.error = true;  // the error class is not logged
    out = f;
    return Kind::frame;
  }
  return parse_classic(second, tok.rest(), t, out);
}

AscParser::Kind AscParser::parse_classic(std::string_view channel, std::string_view rest, double t, CanFrame& out) {
  // rest: <id> <Rx|Tx> <d|r> [<dlc> <data>...] [Length = ... BitCount = ... ID = ...]
  Tokens tok(rest);
  std::string_view id = tok.next();
  std::string_view dir = tok.next();
  if (dir == "TxRq") return Kind::skipped;  // a transmit request, not a frame on the bus
  if (dir != "Rx" && dir != "Tx") return Kind::skipped;  // Statistic:, J1939TP, SV:, ...
  const int base = decimal_ ? 10 : 16;
  CanFrame f;
  f.t = t;
  if (!parse_channel(channel, f)) return bad("channel: not in 1..256");
  if (!parse_id(id, base, f)) return bad("id: not a valid CAN identifier");
  std::string_view kind = tok.next();
  if (kind == "r" || kind == "R") {
    f.remote = true;
    std::string_view dlc = tok.next();  // optional (written since CANoe 8.5)
    unsigned v = 0;
    if (!dlc.empty() && parse_uint(dlc, base, v)) {
      if (v > 8) return bad("dlc: a remote frame's DLC must be 0..8");
      f.len = static_cast<std::uint8_t>(v);
    }
  } else if (kind == "d" || kind == "D") {
    unsigned dlc = 0;
    if (!parse_uint(tok.next(), base, dlc) || dlc > 15) return bad("dlc: not a classic CAN DLC (0..F)");
    const unsigned len = dlc > 8 ? 8 : dlc;  // classic DLC 9..15 carry 8 bytes
    for (unsigned i = 0; i < len; ++i)
      if (!parse_byte(tok.next(), base, f.data[i])) return bad("data: missing or invalid byte");
    f.len = static_cast<std::uint8_t>(len);
  } else {
    return bad("expected d (data) or r (remote) after the direction");
  }
  out = f;
  return Kind::frame;
}

AscParser::Kind AscParser::parse_fd(std::string_view rest, double t, CanFrame& out) {
  Tokens tok(rest);
  CanFrame f;
  f.t = t;
  if (!parse_channel(tok.next(), f)) return bad("channel: not in 1..256");
  std::string_view dir = tok.next();
  if (dir == "TxRq") return Kind::skipped;
  if (dir != "Rx" && dir != "Tx") return bad("direction: expected Rx or Tx");
  std::string_view id = tok.next();
  if (id == "ErrorFrame") {
    f.error = true;
    out = f;
    return Kind::frame;
  }
  const int base = decimal_ ? 10 : 16;
  if (!parse_id(id, base, f)) return bad("id: not a valid CAN identifier");
  // Optional symbolic name: names are identifiers, BRS is a digit.
  std::string_view brs = tok.next();
  if (!all_digits(brs)) brs = tok.next();
  std::string_view esi = tok.next();
  if ((brs != "0" && brs != "1") || (esi != "0" && esi != "1")) return bad("BRS/ESI: expected 0 or 1");
  unsigned dlc = 0, data_length = 0;
  if (!parse_uint(tok.next(), 16, dlc) || dlc > 15) return bad("dlc: not a CAN FD DLC (0..F)");
  if (!parse_uint(tok.next(), 10, data_length) || data_length > 64 || !fd_length(data_length))
    return bad("data length: not a CAN FD payload length");
  for (unsigned i = 0; i < data_length; ++i)
    if (!parse_byte(tok.next(), base, f.data[i])) return bad("data: missing or invalid byte");
  // <MessageDuration> <MessageLength> <Flags> ...
  std::uint32_t flags = 0;
  tok.next();
  tok.next();
  const bool have_flags = parse_uint(tok.next(), 16, flags);
  f.brs = brs == "1";
  f.esi = esi == "1";
  f.remote = have_flags ? (flags & kFlagRemote) != 0 : (data_length == 0 && dlc != 0);
  if (f.remote) {
    // CAN FD has no remote frames: this is a classic one logged on an FD channel.
    if (dlc > 8) return bad("dlc: a remote frame's DLC must be 0..8");
    f.len = static_cast<std::uint8_t>(dlc);
    f.brs = f.esi = false;
    f.data = {};
  } else {
    f.fd = data_length > 8 || !have_flags || (flags & kFlagEdl) != 0;
    if (!f.fd) f.brs = f.esi = false;
    f.len = static_cast<std::uint8_t>(data_length);
  }
  out = f;
  return Kind::frame;
}

}  // namespace mbo::io
