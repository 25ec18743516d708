#include "mbobserver/io/asc.hpp"

#include <charconv>
#include <cmath>

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

AscParser::Kind AscParser::parse_line(std::string_view line, CanFrame& out) {
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r' || blank(line.back()))) line.remove_suffix(1);
  while (!line.empty() && blank(line.front())) line.remove_prefix(1);
  if (line.empty() || line.starts_with("//")) return Kind::skipped;

  Tokens tok(line);
  std::string_view first = tok.next();
  if (!(first[0] >= '0' && first[0] <= '9')) {
    if (iequals(first, "date")) return Kind::skipped;
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
      return Kind::skipped;
    }
    return bad("not an ASC header, comment or event line");
  }

  double t = 0;
  if (!parse_time(first, t)) return bad("timestamp: not a plain decimal number");
  if (relative_) t += last_t_;
  last_t_ = t;

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
