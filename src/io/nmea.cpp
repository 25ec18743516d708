#include "mbobserver/io/nmea.hpp"

#include <charconv>
#include <cmath>
#include <numbers>

namespace mbo::io {

namespace {

constexpr double kKnot = 1852.0 / 3600.0;  // m/s per knot (exact)
constexpr std::size_t kMaxFields = 40;

NmeaResult reject(std::string_view why) { return {NmeaStatus::rejected, why}; }

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// A plain decimal ("-12.5", "0.016"): no exponent, nan or inf.
bool plain_number(std::string_view s, double& v) {
  if (s.empty() || s.size() > 24) return false;
  std::size_t i = (s[0] == '-' || s[0] == '+') ? 1 : 0;
  bool digit = false, dot = false;
  for (std::size_t k = i; k < s.size(); ++k) {
    if (s[k] >= '0' && s[k] <= '9')
      digit = true;
    else if (s[k] == '.' && !dot)
      dot = true;
    else
      return false;
  }
  if (!digit) return false;
  if (s[0] == '+') s.remove_prefix(1);
  auto r = std::from_chars(s.data(), s.data() + s.size(), v, std::chars_format::fixed);
  return r.ec == std::errc() && r.ptr == s.data() + s.size() && std::isfinite(v);
}

// An optional number: empty -> nullopt (ok); malformed -> false.
bool opt_number(std::string_view s, std::optional<double>& out) {
  out.reset();
  if (s.empty()) return true;
  double v;
  if (!plain_number(s, v)) return false;
  out = v;
  return true;
}

bool opt_int(std::string_view s, std::optional<int>& out) {
  out.reset();
  if (s.empty()) return true;
  int v = 0;
  auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size() || v < 0) return false;
  out = v;
  return true;
}

// hhmmss[.sss] -> seconds of the day.
bool opt_time(std::string_view s, std::optional<double>& out) {
  out.reset();
  if (s.empty()) return true;
  if (s.size() < 6) return false;
  for (std::size_t i = 0; i < 6; ++i)
    if (s[i] < '0' || s[i] > '9') return false;
  const int hh = (s[0] - '0') * 10 + (s[1] - '0');
  const int mm = (s[2] - '0') * 10 + (s[3] - '0');
  double ss = 0;
  if (!plain_number(s.substr(4), ss)) return false;
  if (hh > 23 || mm > 59 || ss >= 61) return false;  // 60.x: leap second
  out = hh * 3600.0 + mm * 60.0 + ss;
  return true;
}

// (d)ddmm.mmmm + hemisphere -> signed degrees. Degrees and minutes are read as separate
// numbers from the text so no precision is lost splitting them.
bool opt_coordinate(std::string_view v, std::string_view hemi, bool latitude, std::optional<double>& out) {
  out.reset();
  if (v.empty() && hemi.empty()) return true;
  if (v.empty() || hemi.size() != 1) return false;
  const char h = hemi[0];
  const bool negative = latitude ? (h == 'S') : (h == 'W');
  if (latitude ? (h != 'N' && h != 'S') : (h != 'E' && h != 'W')) return false;
  std::size_t dot = v.find('.');
  std::size_t int_len = dot == std::string_view::npos ? v.size() : dot;
  if (int_len < 3 || int_len > 5) return false;
  std::string_view deg_text = v.substr(0, int_len - 2);
  for (char c : deg_text)
    if (c < '0' || c > '9') return false;
  int deg = 0;
  std::from_chars(deg_text.data(), deg_text.data() + deg_text.size(), deg);
  double minutes = 0;
  if (v[int_len - 2] == '-' || v[int_len - 2] == '+') return false;
  if (!plain_number(v.substr(int_len - 2), minutes) || minutes >= 60) return false;
  double d = deg + minutes / 60.0;
  if (d > (latitude ? 90.0 : 180.0)) return false;
  out = negative ? -d : d;
  return true;
}

bool one_char(std::string_view s, char& out) {
  if (s.empty()) {
    out = 0;
    return true;
  }
  if (s.size() != 1) return false;
  out = s[0];
  return true;
}

struct Fields {
  std::array<std::string_view, kMaxFields> f{};
  std::size_t n = 0;
  std::string_view operator[](std::size_t i) const { return i < n ? f[i] : std::string_view(); }
};

NmeaResult parse_gga(const Fields& f, NmeaGga& g) {
  if (f.n < 6) return reject("GGA: fewer than 6 fields");
  if (!opt_time(f[0], g.time_s)) return reject("GGA time: not hhmmss.ss");
  if (!opt_coordinate(f[1], f[2], true, g.lat_deg)) return reject("GGA latitude: not ddmm.mm,N|S");
  if (!opt_coordinate(f[3], f[4], false, g.lon_deg)) return reject("GGA longitude: not dddmm.mm,E|W");
  std::optional<int> q;
  if (!opt_int(f[5], q) || !q || *q > 9) return reject("GGA quality: not a digit 0..9");
  g.quality = *q;
  if (!opt_int(f[6], g.satellites)) return reject("GGA satellites: not a number");
  if (!opt_number(f[7], g.hdop)) return reject("GGA HDOP: not a number");
  if (!opt_number(f[8], g.alt_msl_m)) return reject("GGA altitude: not a number");
  if (!f[9].empty() && f[9] != "M") return reject("GGA altitude unit: not M");
  if (!opt_number(f[10], g.geoid_separation_m)) return reject("GGA geoid separation: not a number");
  if (!f[11].empty() && f[11] != "M") return reject("GGA separation unit: not M");
  return {NmeaStatus::parsed, {}};
}

NmeaResult parse_rmc(const Fields& f, NmeaRmc& r) {
  if (f.n < 9) return reject("RMC: fewer than 9 fields");
  if (!opt_time(f[0], r.time_s)) return reject("RMC time: not hhmmss.ss");
  if (f[1] != "A" && f[1] != "V") return reject("RMC status: not A or V");
  r.valid = f[1] == "A";
  if (!opt_coordinate(f[2], f[3], true, r.lat_deg)) return reject("RMC latitude: not ddmm.mm,N|S");
  if (!opt_coordinate(f[4], f[5], false, r.lon_deg)) return reject("RMC longitude: not dddmm.mm,E|W");
  std::optional<double> knots;
  if (!opt_number(f[6], knots) || (knots && *knots < 0)) return reject("RMC speed: not a number");
  if (knots) r.speed_mps = *knots * kKnot;
  if (!opt_number(f[7], r.course_deg)) return reject("RMC course: not a number");
  if (!opt_int(f[8], r.date_ddmmyy) || (!f[8].empty() && f[8].size() != 6)) return reject("RMC date: not ddmmyy");
  std::optional<double> var;
  if (!opt_number(f[9], var)) return reject("RMC variation: not a number");
  if (var) {
    if (f[10] != "E" && f[10] != "W") return reject("RMC variation: direction not E or W");
    r.magnetic_variation_deg = f[10] == "W" ? -*var : *var;
  }
  if (!one_char(f[11], r.mode)) return reject("RMC mode: not one letter");
  return {NmeaStatus::parsed, {}};
}

NmeaResult parse_vtg(const Fields& f, NmeaVtg& v) {
  std::optional<double> knots, kmh;
  if (f.n == 4) {  // NMEA before 2.0: course true, course magnetic, knots, km/h
    if (!opt_number(f[0], v.course_true_deg) || !opt_number(f[1], v.course_magnetic_deg) || !opt_number(f[2], knots) ||
        !opt_number(f[3], kmh))
      return reject("VTG: not a number");
  } else if (f.n >= 8) {
    auto unit_ok = [&](std::size_t i, std::string_view u) { return f[i].empty() || f[i] == u; };
    if (!unit_ok(1, "T") || !unit_ok(3, "M") || !unit_ok(5, "N") || !unit_ok(7, "K"))
      return reject("VTG: unit letters are not T, M, N, K");
    if (!opt_number(f[0], v.course_true_deg)) return reject("VTG course: not a number");
    if (!opt_number(f[2], v.course_magnetic_deg)) return reject("VTG magnetic course: not a number");
    if (!opt_number(f[4], knots)) return reject("VTG speed (knots): not a number");
    if (!opt_number(f[6], kmh)) return reject("VTG speed (km/h): not a number");
    if (!one_char(f[8], v.mode)) return reject("VTG mode: not one letter");
  } else {
    return reject("VTG: expected 4 or 8..9 fields");
  }
  if ((knots && *knots < 0) || (kmh && *kmh < 0)) return reject("VTG speed: negative");
  if (knots)
    v.speed_mps = *knots * kKnot;
  else if (kmh)
    v.speed_mps = *kmh / 3.6;
  return {NmeaStatus::parsed, {}};
}

NmeaResult parse_gst(const Fields& f, NmeaGst& g) {
  if (f.n < 8) return reject("GST: fewer than 8 fields");
  if (!opt_time(f[0], g.time_s)) return reject("GST time: not hhmmss.ss");
  std::optional<double>* dst[] = {&g.rms,       &g.semi_major_m, &g.semi_minor_m, &g.orientation_deg,
                                  &g.std_lat_m, &g.std_lon_m,    &g.std_alt_m};
  for (std::size_t i = 0; i < 7; ++i)
    if (!opt_number(f[i + 1], *dst[i])) return reject("GST: not a number");
  for (auto* d : {&g.std_lat_m, &g.std_lon_m, &g.std_alt_m})
    if (*d && **d < 0) return reject("GST: negative standard deviation");
  return {NmeaStatus::parsed, {}};
}

double course_rad(double deg) {
  double c = std::fmod(deg, 360.0);
  if (c < 0) c += 360.0;
  double r = c * (std::numbers::pi / 180.0);
  return r >= 2 * std::numbers::pi ? 0.0 : r;
}

}  // namespace

NmeaResult parse_nmea(std::string_view line, NmeaSentence& out, const NmeaOptions& options) {
  if (line.ends_with("\r\n"))
    line.remove_suffix(2);
  else if (line.ends_with('\n') || line.ends_with('\r'))
    line.remove_suffix(1);
  if (line.empty() || line[0] != '$') return reject("does not start with '$'");
  for (char c : line) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u > 0x7e) return reject("byte outside printable ASCII");
  }
  std::string_view body;
  const std::size_t star = line.find('*');
  if (star == std::string_view::npos) {
    if (options.require_checksum) return reject("no checksum");
    body = line.substr(1);
  } else {
    body = line.substr(1, star - 1);
    std::string_view cs = line.substr(star + 1);
    if (cs.size() < 2) return reject("checksum: expected two hex digits");
    if (cs.size() > 2) return reject("text after the checksum");
    int hi = hex_digit(cs[0]), lo = hex_digit(cs[1]);
    if (hi < 0 || lo < 0) return reject("checksum: not hexadecimal");
    unsigned x = 0;
    for (char c : body) x ^= static_cast<unsigned char>(c);
    if (x != static_cast<unsigned>(hi * 16 + lo)) return reject("bad checksum");
  }
  const std::size_t comma = body.find(',');
  std::string_view address = body.substr(0, comma);
  if (address.empty()) return reject("no address field");
  for (char c : address)
    if (!((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')))
      return reject("address: not upper-case letters and digits");
  if (address[0] == 'P') return {NmeaStatus::unsupported, {}};  // proprietary ($PUBX, ...)
  if (address.size() != 5) return reject("address: expected talker (2) and type (3)");
  Fields f;
  if (comma != std::string_view::npos) {
    std::string_view rest = body.substr(comma + 1);
    while (true) {
      if (f.n == kMaxFields) return reject("more than 40 fields");
      std::size_t c = rest.find(',');
      f.f[f.n++] = rest.substr(0, c);
      if (c == std::string_view::npos) break;
      rest.remove_prefix(c + 1);
    }
  }
  std::string_view type = address.substr(2);
  out.talker = {address[0], address[1]};
  NmeaResult r;
  if (type == "GGA") {
    NmeaGga g;
    r = parse_gga(f, g);
    out.data = g;
  } else if (type == "RMC") {
    NmeaRmc m;
    r = parse_rmc(f, m);
    out.data = m;
  } else if (type == "VTG") {
    NmeaVtg v;
    r = parse_vtg(f, v);
    out.data = v;
  } else if (type == "GST") {
    NmeaGst g;
    r = parse_gst(f, g);
    out.data = g;
  } else {
    return {NmeaStatus::unsupported, {}};
  }
  return r;
}

std::size_t nmea_measurements(const NmeaSentence& s, double t, const NmeaChannelOptions& options,
                              std::span<Measurement, 8> out) {
  std::size_t n = 0;
  auto put = [&](Channel c, double v) { out[n++] = Measurement{t, c, v}; };
  if (const auto* g = std::get_if<NmeaGga>(&s.data)) {
    if (g->quality != 0 && g->lat_deg && g->lon_deg) {
      put(Channel::gnss_lat, *g->lat_deg);
      put(Channel::gnss_lon, *g->lon_deg);
      if (g->alt_msl_m && g->geoid_separation_m) put(Channel::gnss_alt, *g->alt_msl_m + *g->geoid_separation_m);
    }
    put(Channel::gnss_fix_quality, g->quality);
  } else if (const auto* r = std::get_if<NmeaRmc>(&s.data)) {
    if (r->valid && r->mode != 'N') {
      if (options.position_from_rmc && r->lat_deg && r->lon_deg) {
        put(Channel::gnss_lat, *r->lat_deg);
        put(Channel::gnss_lon, *r->lon_deg);
      }
      if (!options.velocity_from_vtg) {
        if (r->speed_mps) put(Channel::gnss_speed, *r->speed_mps);
        if (r->course_deg) put(Channel::gnss_course, course_rad(*r->course_deg));
      }
    }
  } else if (const auto* v = std::get_if<NmeaVtg>(&s.data)) {
    if (options.velocity_from_vtg && v->mode != 'N') {
      if (v->speed_mps) put(Channel::gnss_speed, *v->speed_mps);
      if (v->course_true_deg) put(Channel::gnss_course, course_rad(*v->course_true_deg));
    }
  } else if (const auto* e = std::get_if<NmeaGst>(&s.data)) {
    if (e->std_lat_m) put(Channel::gnss_std_lat, *e->std_lat_m);
    if (e->std_lon_m) put(Channel::gnss_std_lon, *e->std_lon_m);
    if (e->std_alt_m) put(Channel::gnss_std_alt, *e->std_alt_m);
  }
  return n;
}

std::optional<double> nmea_fix_time_of_day(const NmeaSentence& s) {
  if (const auto* g = std::get_if<NmeaGga>(&s.data)) return g->time_s;
  if (const auto* r = std::get_if<NmeaRmc>(&s.data)) return r->time_s;
  if (const auto* g = std::get_if<NmeaGst>(&s.data)) return g->time_s;
  return std::nullopt;
}

double nmea_fix_age_s(double fix_time_of_day_s, double utc_now_s) {
  constexpr double kDay = 86400, kHalf = kDay / 2;
  // 23:59:60.x, a leap second: the system clock repeats 23:59:59 meanwhile
  if (fix_time_of_day_s >= kDay) fix_time_of_day_s -= 1;
  const double age = std::fmod(utc_now_s, kDay) - fix_time_of_day_s;
  return age - kDay * std::floor((age + kHalf) / kDay);
}

std::optional<double> NmeaFixTimeStamper::stamp(const NmeaSentence& s, double arrival, double utc_now_s) {
  const auto tod = nmea_fix_time_of_day(s);
  if (!tod) {
    if (last_ok_ && arrival - last_arrival_ <= kSameEpoch_s) return arrival - last_age_;
    ++untimed_;
    return std::nullopt;
  }
  last_arrival_ = arrival;
  last_age_ = nmea_fix_age_s(*tod, utc_now_s);
  // a host kept on GNSS time without PPS is a few ms either side: a fix "from the future" by
  // less than that is on time
  if (last_age_ < 0 && last_age_ >= -kClockTolerance_s) last_age_ = 0;
  last_ok_ = last_age_ >= 0 && last_age_ <= max_age_s_;
  if (!last_ok_) {
    ++unsynchronised_;
    return std::nullopt;
  }
  ++stamped_;
  return arrival - last_age_;
}

}  // namespace mbo::io
