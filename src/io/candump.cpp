#include "mbobserver/io/candump.hpp"

#include <array>
#include <charconv>
#include <cmath>
#include <cstring>

namespace mbo::io {

namespace {

constexpr std::uint32_t kErrFlag = 0x20000000u;  // CAN_ERR_FLAG, linux/can.h
constexpr std::uint32_t kEffMask = 0x1FFFFFFFu;  // CAN_EFF_MASK (= CAN_ERR_MASK)

constexpr std::array<std::int8_t, 256> kNibble = [] {
  std::array<std::int8_t, 256> t{};
  for (auto& v : t) v = -1;
  for (int c = '0'; c <= '9'; ++c) t[static_cast<std::size_t>(c)] = static_cast<std::int8_t>(c - '0');
  for (int c = 'A'; c <= 'F'; ++c) t[static_cast<std::size_t>(c)] = static_cast<std::int8_t>(c - 'A' + 10);
  for (int c = 'a'; c <= 'f'; ++c) t[static_cast<std::size_t>(c)] = static_cast<std::int8_t>(c - 'a' + 10);
  return t;
}();

inline int nibble(char c) { return kNibble[static_cast<unsigned char>(c)]; }

// SWAR digits (fast_float's is_made_of_eight_digits_fast / parse_eight_digits_unrolled):
// eight ASCII digits in one little-endian word.
inline bool eight_digits(std::uint64_t w) {
  return ((w & 0xF0F0F0F0F0F0F0F0ull) | (((w + 0x0606060606060606ull) & 0xF0F0F0F0F0F0F0F0ull) >> 4)) ==
         0x3333333333333333ull;
}
inline std::uint32_t eight_digits_value(std::uint64_t w) {
  w = (w & 0x0F0F0F0F0F0F0F0Full) * 2561 >> 8;
  w = (w & 0x00FF00FF00FF00FFull) * 6553601 >> 16;
  return static_cast<std::uint32_t>((w & 0x0000FFFF0000FFFFull) * 42949672960001ull >> 32);
}
inline bool digit(char c) { return c >= '0' && c <= '9'; }

// candump's own layout, "%010lu.%06lu)": ten digits, '.', six digits, ')'. Gives the
// microseconds, or false for anything else (the general path then decides).
inline bool candump_time_us(const char* p, const char* end, std::uint64_t& us) {
  if (end - p < 19 || p[10] != '.' || p[17] != ')' || !digit(p[8]) || !digit(p[9])) return false;
  std::uint64_t hi, lo;
  std::memcpy(&hi, p, 8);
  std::memcpy(&lo, p + 11, 8);  // six digits, ')' and the next byte: replace the last two by '0'
  lo = (lo & 0x0000FFFFFFFFFFFFull) | 0x3030000000000000ull;
  if (!eight_digits(hi) || !eight_digits(lo)) return false;
  const std::uint64_t sec =
      std::uint64_t{eight_digits_value(hi)} * 100 + static_cast<std::uint64_t>((p[8] - '0') * 10 + (p[9] - '0'));
  us = sec * 1'000'000 + eight_digits_value(lo) / 100;
  return true;
}

constexpr double kPow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                             1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

// "digits[.digits]" to the nearest double. When all digits fit in an integer below 2^53 the
// value is that integer divided by an exact power of ten: one correctly rounded IEEE division
// (Clinger's fast path), the same double strtod or Python's float() give. Otherwise
// std::from_chars. Returns false for anything else (no sign, exponent, nan, inf).
bool parse_decimal(const char* b, const char* e, double& out) {
  std::uint64_t n = 0;
  int digits = 0, frac = -1;
  for (const char* p = b; p < e; ++p) {
    const char c = *p;
    if (c >= '0' && c <= '9') {
      if (digits < 19) n = n * 10 + static_cast<std::uint64_t>(c - '0');
      ++digits;
      if (frac >= 0) ++frac;
    } else if (c == '.' && frac < 0) {
      frac = 0;
    } else {
      return false;
    }
  }
  if (digits == 0 || digits > 30) return false;
  const int k = frac < 0 ? 0 : frac;
  if (digits <= 19 && n < (std::uint64_t{1} << 53) && k <= 22) {
    out = static_cast<double>(n) / kPow10[k];
    return true;
  }
  auto r = std::from_chars(b, e, out, std::chars_format::fixed);
  return r.ec == std::errc() && r.ptr == e && std::isfinite(out);
}
inline bool blank(char c) { return c == ' ' || c == '\t'; }

// The frame field ends at the end of the line or at a blank.
[[gnu::always_inline]] inline bool field_end(const char* q, const char* end) { return q >= end || blank(*q); }

// CAN FD payload lengths (ISO 11898-1:2015 DLC table).
inline bool fd_length(std::size_t n) {
  return n <= 8 || n == 12 || n == 16 || n == 20 || n == 24 || n == 32 || n == 48 || n == 64;
}

constexpr char kHex[] = "0123456789ABCDEF";

// Any other "digits[.digits])": on success `p` is left after the ')'.
std::string_view parse_time(const char*& p, const char* end, double& t) {
  const char* ts = p;
  std::uint64_t mantissa = 0;
  int digits = 0, frac = -1;
  for (; p < end; ++p) {
    const char c = *p;
    if (c >= '0' && c <= '9') {
      if (digits < 19) mantissa = mantissa * 10 + static_cast<std::uint64_t>(c - '0');
      ++digits;
      frac += frac >= 0;
    } else if (c == '.' && frac < 0) {
      frac = 0;
    } else {
      break;
    }
  }
  if (p == end || *p != ')') {
    if (!std::memchr(p, ')', static_cast<std::size_t>(end - p))) return "timestamp: no closing ')'";
    return "timestamp: not a plain decimal number";
  }
  if (digits == 0 || digits > 30) return "timestamp: not a plain decimal number";
  if (digits <= 19 && mantissa < (std::uint64_t{1} << 53) && frac <= 22) {
    // Clinger's fast path: an exact integer over an exact power of ten, one correctly
    // rounded division, the same double as strtod or Python's float().
    t = static_cast<double>(mantissa) / kPow10[frac < 0 ? 0 : frac];
  } else if (!parse_decimal(ts, p, t)) {
    return "timestamp: not a plain decimal number";
  }
  ++p;
  return {};
}

}  // namespace

// One forward pass over the line (this is the replay hot path); errors are looked into only
// once something is wrong, so the messages stay precise without slowing good lines down.
std::string_view parse_candump_line(std::string_view line, CandumpRecord& out) {
  std::string_view err = parse_candump_line(line, out.frame, out.interface);
  out.t = out.frame.t;
  return err;
}

std::string_view parse_candump_line(std::string_view line, CanFrame& fr, std::string_view& interface) {
  std::size_t n = line.size();
  while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r' || blank(line[n - 1]))) --n;
  const char* p = line.data();
  const char* const end = p + n;
  while (p < end && blank(*p)) ++p;
  if (p == end) return "empty line";

  // (seconds.microseconds): digits and one '.', nothing else (no sign, exponent, nan, inf).
  if (*p != '(') return "timestamp: line does not start with '('";
  ++p;
  std::uint64_t us = 0;
  double t = 0;
  if (candump_time_us(p, end, us) && us < (std::uint64_t{1} << 53)) {
    t = static_cast<double>(us) / 1e6;  // exact integer / exact power of ten: correctly rounded
    p += 18;
  } else if (std::string_view err = parse_time(p, end, t); !err.empty()) {
    return err;
  }

  // Interface name: any non-blank bytes.
  if (p == end || !blank(*p)) return "interface: expected a blank after the timestamp";
  while (p < end && blank(*p)) ++p;
  const char* name = p;
  while (p < end && !blank(*p)) ++p;
  if (p == name) return "interface: missing";
  const std::string_view iface(name, static_cast<std::size_t>(p - name));
  while (p < end && blank(*p)) ++p;
  if (p == end) return "frame: missing";

  // Identifier: 3 hex digits (11-bit) or 8 (29-bit, or an error frame's class).
  const char* f = p;
  std::uint32_t id = 0;
  bool bad_hex = false;
  while (p < end && *p != '#' && !blank(*p)) {
    const int v = nibble(*p);
    bad_hex |= v < 0;
    id = (id << 4) | static_cast<std::uint32_t>(v & 0xF);
    ++p;
  }
  if (p == end || *p != '#') return "frame: no '#' after the id";
  const auto id_digits = static_cast<std::size_t>(p - f);
  if (id_digits != 3 && id_digits != 8) return "id: candump writes 3 or 8 hex digits";
  if (bad_hex) return "id: not hexadecimal";
  // Field by field: assigning CanFrame{} compiles to `rep stos`, slow for 80 bytes.
  fr.extended = fr.remote = fr.error = fr.fd = fr.brs = fr.esi = false;
  fr.channel = 0;
  fr.len = 0;
  std::memset(fr.data.data(), 0, sizeof fr.data);
  if (id_digits == 3) {
    if (id > 0x7FF) return "id: 11-bit id above 0x7FF";
    fr.id = id;
  } else if (id & kErrFlag) {
    if (id & ~(kErrFlag | kEffMask)) return "id: error frame with EFF/RTR flag bits";
    fr.error = true;
    fr.id = id & kEffMask;
  } else {
    if (id > kEffMask) return "id: 29-bit id with flag bits set";
    fr.id = id;
    fr.extended = true;
  }

  const char* d = p + 1;
  if (!field_end(d, end) && (*d == 'R' || *d == 'r')) {
    if (fr.error) return "data: an error frame cannot be a remote frame";
    fr.remote = true;
    ++d;
    if (!field_end(d, end)) {
      const int v = nibble(*d);
      if (v < 0 || v > 8) return "data: remote frame DLC must be 0..8";
      fr.len = static_cast<std::uint8_t>(v);
      ++d;
      // "_<raw DLC 9..F>" may follow an 8-byte DLC (can-utils lib.c).
      if (!field_end(d, end) && *d == '_' && fr.len == 8 && d + 1 < end && nibble(d[1]) > 8 && field_end(d + 2, end))
        d += 2;
      if (!field_end(d, end)) return "data: unexpected text after the remote frame's DLC";
    }
  } else {
    std::size_t max_len = 8;
    if (!field_end(d, end) && *d == '#') {
      if (fr.error) return "data: an error frame cannot be CAN FD";
      ++d;
      if (field_end(d, end)) return "fd flags: missing after '##'";
      const int flags = nibble(*d);
      if (flags < 0) return "fd flags: not hexadecimal";
      fr.fd = true;
      fr.brs = (flags & 1) != 0;
      fr.esi = (flags & 2) != 0;
      max_len = 64;
      ++d;
    }
    std::size_t len = 0;
    while (true) {
      // Fast path: a pair of hex digits. Everything else (end, '.', '_', errors) below.
      if (d + 1 < end) {
        const int hi = nibble(d[0]), lo = nibble(d[1]);
        if ((hi | lo) >= 0) {
          if (len == max_len) return fr.fd ? "data: more than 64 bytes" : "data: more than 8 bytes in a classic frame";
          fr.data[len++] = static_cast<std::uint8_t>((hi << 4) | lo);
          d += 2;
          continue;
        }
      }
      if (field_end(d, end)) break;
      if (*d == '.') {  // optional byte separator
        ++d;
        continue;
      }
      if (*d == '_' && !fr.fd && len == 8) {  // raw DLC 9..F of a classic 8-byte frame
        if (d + 1 >= end || nibble(d[1]) <= 8 || !field_end(d + 2, end)) return "data: bad raw DLC after '_'";
        d += 2;
        break;
      }
      if (field_end(d + 1, end)) return "data: odd number of hex digits";
      return "data: not hexadecimal";
    }
    if (fr.fd && !fd_length(len)) return "data: not a CAN FD payload length";
    fr.len = static_cast<std::uint8_t>(len);
  }
  // Optional direction token written by python-can.
  p = d;
  while (p < end && blank(*p)) ++p;
  if (p < end && (end - p != 1 || !(*p == 'R' || *p == 'T' || *p == 'r' || *p == 't')))
    return "unexpected text after the frame";
  fr.t = t;
  interface = iface;
  return {};
}

std::size_t format_candump_line(const CanFrame& frame, std::string_view interface, char* out) {
  char* o = out;
  double t = frame.t;
  if (!(t >= 0) || !std::isfinite(t) || t > 1e13) t = 0;
  const auto us = static_cast<unsigned long long>(std::llround(t * 1e6));
  const unsigned long long sec = us / 1000000ull, usec = us % 1000000ull;
  *o++ = '(';
  char digits[24];
  auto r = std::to_chars(digits, digits + sizeof digits, sec);
  for (auto k = r.ptr - digits; k < 10; ++k) *o++ = '0';  // candump: %010lu
  std::memcpy(o, digits, static_cast<std::size_t>(r.ptr - digits));
  o += r.ptr - digits;
  *o++ = '.';
  unsigned long long u = usec;
  for (int k = 5; k >= 0; --k) {
    o[k] = static_cast<char>('0' + u % 10);
    u /= 10;
  }
  o += 6;
  *o++ = ')';
  *o++ = ' ';
  if (!interface.empty()) std::memcpy(o, interface.data(), interface.size());
  o += interface.size();
  *o++ = ' ';
  std::uint32_t id = frame.id;
  int id_digits = 3;
  if (frame.error) {
    id = kErrFlag | (frame.id & kEffMask);
    id_digits = 8;
  } else if (frame.extended) {
    id &= kEffMask;
    id_digits = 8;
  } else {
    id &= 0x7FF;
  }
  for (int k = id_digits - 1; k >= 0; --k) *o++ = kHex[(id >> (4 * k)) & 0xF];
  *o++ = '#';
  if (frame.remote && !frame.error) {
    *o++ = 'R';
    if (frame.len > 0 && frame.len <= 8) *o++ = kHex[frame.len];
  } else {
    std::size_t len = frame.len;
    if (frame.fd && !frame.error) {
      *o++ = '#';
      *o++ = kHex[(frame.brs ? 1 : 0) | (frame.esi ? 2 : 0)];
      if (len > 64) len = 64;
    } else if (len > 8) {
      len = 8;
    }
    for (std::size_t i = 0; i < len; ++i) {
      *o++ = kHex[frame.data[i] >> 4];
      *o++ = kHex[frame.data[i] & 0xF];
    }
  }
  *o++ = '\n';
  return static_cast<std::size_t>(o - out);
}

std::string format_candump_line(const CanFrame& frame, std::string_view interface) {
  std::string s(kCandumpMaxLine + interface.size(), '\0');
  s.resize(format_candump_line(frame, interface, s.data()));
  return s;
}

bool CandumpWriter::write(const CanFrame& frame, std::string_view interface) {
  char buf[kCandumpMaxLine + 64];
  if (interface.size() > 64) {
    std::string s = format_candump_line(frame, interface);
    return std::fwrite(s.data(), 1, s.size(), out_) == s.size();
  }
  std::size_t n = format_candump_line(frame, interface, buf);
  return std::fwrite(buf, 1, n, out_) == n;
}

}  // namespace mbo::io
