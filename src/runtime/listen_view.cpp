#include "mbobserver/runtime/listen_view.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <numbers>
#include <optional>

namespace mbo::runtime {

namespace {

using json = nlohmann::ordered_json;

constexpr double kDeg = 180.0 / std::numbers::pi;
constexpr std::array<const char*, 4> kWheels = {"fl", "fr", "rl", "rr"};

std::string fmt(const char* f, ...) __attribute__((format(printf, 1, 2)));
std::string fmt(const char* f, ...) {
  std::array<char, 512> buf{};
  va_list ap;
  va_start(ap, f);
  std::vsnprintf(buf.data(), buf.size(), f, ap);
  va_end(ap);
  return buf.data();
}

// j[k0][k1]... or nullptr when any step is missing.
const json* at(const json* j, std::initializer_list<const char*> path) {
  for (const char* k : path) {
    if (!j || !j->is_object()) return nullptr;
    const auto it = j->find(k);
    if (it == j->end()) return nullptr;
    j = &*it;
  }
  return j;
}

const json* index(const json* a, std::size_t i) { return a && a->is_array() && i < a->size() ? &(*a)[i] : nullptr; }

// A number, or nullopt for missing; NaN for null (the datagram's non-finite).
std::optional<double> number(const json* j) {
  if (!j) return std::nullopt;
  if (j->is_null()) return std::nan("");
  if (!j->is_number()) return std::nullopt;
  return j->get<double>();
}

std::string count(const json* j) {
  if (!j || !j->is_number()) return "-";
  return j->is_number_float() ? fmt("%.0f", j->get<double>()) : std::to_string(j->get<std::uint64_t>());
}

bool truth(const json* j, bool otherwise) { return j && j->is_boolean() ? j->get<bool>() : otherwise; }

// "   101.250 +-   0.500 " (width value + 3 + width sigma + 2): the sigma is left blank when
// the datagram has none or publishes -1 (not available).
std::string value_sigma(std::optional<double> v, std::optional<double> s, int width, int prec, double scale,
                        bool invalid, int sigma_width) {
  std::string out;
  if (!v)
    out = fmt("%*s", width, "-");
  else if (std::isnan(*v))
    out = fmt("%*s", width, "--");
  else
    out = fmt("%*.*f", width, prec, *v * scale);
  if (s && !std::isnan(*s) && *s >= 0)
    out += fmt(" +-%*.*f", sigma_width, prec, *s * scale);
  else
    out += fmt("   %*s", sigma_width, "");
  out += invalid ? " !" : "  ";
  return out;
}

struct Scalar {
  const char* label;
  const char* unit;
  const char* group;  // "state", "virtual"
  const char* key;
  const char* sigma;  // key in "std", or nullptr
  int prec;
  double scale;
  const char* validity;  // health.validity key that covers it
};

// Two columns of state: position and attitude on the left, motion on the right.
constexpr std::array<Scalar, 9> kStateLeft = {{
    {"x", "m", "state", "x", "x", 3, 1, "position"},
    {"y", "m", "state", "y", "y", 3, 1, "position"},
    {"z", "m", "state", "z", nullptr, 3, 1, "position"},
    {"lat", "deg", "state", "lat", nullptr, 8, 1, "position"},
    {"lon", "deg", "state", "lon", nullptr, 8, 1, "position"},
    {"alt", "m", "state", "alt", nullptr, 3, 1, "position"},
    {"yaw", "deg", "state", "yaw", "yaw", 3, kDeg, "heading"},
    {"pitch", "deg", "state", "pitch", nullptr, 3, kDeg, "attitude"},
    {"roll", "deg", "state", "roll", nullptr, 3, kDeg, "attitude"},
}};
constexpr std::array<Scalar, 9> kStateRight = {{
    {"vx", "m/s", "state", "vx", "vx", 3, 1, "velocity"},
    {"vy", "m/s", "state", "vy", "vy", 3, 1, "velocity"},
    {"vz", "m/s", "state", "vz", nullptr, 3, 1, "velocity"},
    {"v_long", "m/s", "state", "v_long", nullptr, 3, 1, "velocity"},
    {"v_lat", "m/s", "state", "v_lat", nullptr, 3, 1, "velocity"},
    {"yaw_rate", "deg/s", "state", "yaw_rate", nullptr, 3, kDeg, "velocity"},
    {"a_long", "m/s2", "state", "a_long", "a_long", 3, 1, "velocity"},
    {"a_lat", "m/s2", "state", "a_lat", "a_lat", 3, 1, "velocity"},
    {"yaw_accel", "deg/s2", "state", "yaw_accel", "yaw_accel", 3, kDeg, "velocity"},
}};
constexpr std::array<Scalar, 3> kVirtualScalars = {{
    {"sideslip", "deg", "virtual", "sideslip_deg", "sideslip_deg", 3, 1, "virtual_sensors"},
    {"friction", "1", "virtual", "friction", "friction", 3, 1, "virtual_sensors"},
    {"mass", "kg", "virtual", "mass", nullptr, 1, 1, "virtual_sensors"},
}};

struct PerWheel {
  const char* label;
  const char* unit;
  const char* key;
  const char* old_key;  // estimate/1's name, or nullptr
  int prec;
  const char* validity;  // health.validity key that covers it
};
constexpr std::array<PerWheel, 8> kPerWheel = {{
    {"tyre Fx", "N", "tyre_fx", nullptr, 1, "tyre_forces"},
    {"tyre Fy", "N", "tyre_fy", nullptr, 1, "tyre_forces"},
    {"tyre Fz", "N", "tyre_fz", nullptr, 1, "tyre_loads"},
    {"slip ratio", "1", "slip_ratio", nullptr, 4, "virtual_sensors"},
    {"slip angle", "deg", "slip_angle_deg", nullptr, 3, "virtual_sensors"},
    {"travel", "m", "suspension_travel", nullptr, 4, "virtual_sensors"},
    {"wheel speed", "rad/s", "wheel_speed", nullptr, 2, "virtual_sensors"},
    {"spin angle", "rad", "wheel_spin_angle", "wheel_angle", 2, "virtual_sensors"},
}};

std::string scalar_cell(const json& e, const Scalar& s) {
  const bool invalid = !truth(at(&e, {"health", "validity", s.validity}), true);
  return fmt("%-10s %-6s", s.label, s.unit) + value_sigma(number(at(&e, {s.group, s.key})),
                                                          s.sigma ? number(at(&e, {"std", s.sigma})) : std::nullopt, 13,
                                                          s.prec, s.scale, invalid, 9);
}

void header(const WatchInput& in, std::vector<std::string>& out) {
  out.push_back(fmt("mbobserver-listen --watch   port %u   estimates %llu   status %llu   invalid %llu   (q: quit)",
                    in.port, static_cast<unsigned long long>(in.estimates),
                    static_cast<unsigned long long>(in.statuses), static_cast<unsigned long long>(in.invalid)));
  if (!in.estimate && !in.status) {
    out.push_back(fmt("waiting for datagrams on port %u", in.port));
    return;
  }
  double newest = 1e300;
  if (in.estimate) newest = std::min(newest, in.estimate_age_s);
  if (in.status) newest = std::min(newest, in.status_age_s);
  if (newest > in.stale_after_s)
    out.push_back(fmt("STALE: no datagram for %.1f s; the values below are the last received", newest));
  else
    out.push_back("live");
}

constexpr std::size_t kWidth = 104;  // listen_view.hpp: the lines' widest

void estimate_block(const json& e, double age_s, std::vector<std::string>& out) {
  const json* schema = at(&e, {"schema"});
  out.push_back(fmt("ESTIMATE  seq %s   t %.3f s   received %.1f s ago   %s", count(at(&e, {"seq"})).c_str(),
                    number(at(&e, {"t"})).value_or(NAN), age_s,
                    schema && schema->is_string() ? schema->get<std::string>().c_str() : ""));
  std::string validity = fmt("valid %s  ", truth(at(&e, {"health", "valid"}), false) ? "YES" : "NO");
  if (const json* v = at(&e, {"health", "validity"}); v && v->is_object())
    for (const auto& [k, b] : v->items()) {
      const std::string item = fmt("  %s %s", k.c_str(), b.is_boolean() && b.get<bool>() ? "ok" : "INVALID!");
      if (validity.size() + item.size() > kWidth) {  // the flags go on below, under the first
        out.push_back(validity);
        validity = std::string(10, ' ');
      }
      validity += item;
    }
  out.push_back(validity);
  std::string faults = "faults";
  if (const json* f = at(&e, {"health", "faults"}); f && f->is_array() && !f->empty()) {
    for (const auto& name : *f) faults += " " + (name.is_string() ? name.get<std::string>() : name.dump());
  } else {
    faults += " none";
  }
  out.push_back(faults + "   resets " + count(at(&e, {"health", "resets"})));
  out.emplace_back();

  // Each cell: label 17, value 13, " +-" and sigma 12, marker 2 (scalar_cell).
  out.push_back(fmt("%-18s%13s%12s  %-19s%13s%12s", "STATE", "value", "1-sigma", "", "value", "1-sigma"));
  for (std::size_t i = 0; i < kStateLeft.size(); ++i)
    out.push_back(" " + scalar_cell(e, kStateLeft[i]) + "  " + scalar_cell(e, kStateRight[i]));
  if (const json* o = at(&e, {"origin"}); o && o->is_object())
    out.push_back(fmt(" ENU origin  lat %.8f deg  lon %.8f deg  alt %.3f m", number(at(o, {"lat"})).value_or(NAN),
                      number(at(o, {"lon"})).value_or(NAN), number(at(o, {"alt"})).value_or(NAN)));
  out.emplace_back();

  out.push_back(fmt("%-19s%9s%10s  %9s%10s  %9s%10s  %9s%10s", "VIRTUAL SENSORS", "fl", "1-sigma", "fr", "1-sigma",
                    "rl", "1-sigma", "rr", "1-sigma"));
  for (const auto& w : kPerWheel) {
    const json* values = at(&e, {"virtual", w.key});
    if (!values && w.old_key) values = at(&e, {"virtual", w.old_key});
    const json* sigmas = at(&e, {"std", w.key});
    std::string line = fmt(" %-11s %-6s", w.label, w.unit);
    const bool invalid = !truth(at(&e, {"health", "validity", w.validity}), true);
    for (std::size_t i = 0; i < kWheels.size(); ++i)
      line += value_sigma(number(index(values, i)), number(index(sigmas, i)), 9, w.prec, 1, invalid, 7);
    out.push_back(line);
  }
  out.push_back(" " + scalar_cell(e, kVirtualScalars[0]) + "  " + scalar_cell(e, kVirtualScalars[1]));
  out.push_back(" " + scalar_cell(e, kVirtualScalars[2]));
  out.emplace_back();

  out.push_back(fmt("%-15s %9s %9s %9s %10s %8s %11s  %s", "SENSOR", "age ms", "fused", "rejected", "test ratio", "NIS",
                    "implausible", "state"));
  if (const json* sensors = at(&e, {"health", "sensors"}); sensors && sensors->is_object()) {
    for (const auto& [name, s] : sensors->items()) {
      const auto age = number(at(&s, {"age_ms"}));
      // A source the configuration does not map is never received either: no alarm for it.
      const bool never = !age || std::isnan(*age);
      const char* state = never                                  ? "never received"
                          : truth(at(&s, {"timed_out"}), false)  ? "TIMED OUT"
                          : !truth(at(&s, {"consistent"}), true) ? "INCONSISTENT"
                                                                 : "ok";
      out.push_back(fmt(" %-14s %9s %9s %9s %10.2f %8.2f %11s  %s", name.c_str(),
                        never ? "never" : fmt("%.1f", *age).c_str(), count(at(&s, {"fused"})).c_str(),
                        count(at(&s, {"rejected"})).c_str(), number(at(&s, {"test_ratio"})).value_or(NAN),
                        number(at(&s, {"nis"})).value_or(NAN), count(at(&s, {"implausible"})).c_str(), state));
    }
  }
  if (const json* cal = at(&e, {"calibration"}); cal && cal->is_object() && !cal->empty()) {
    out.emplace_back();
    out.push_back(fmt("%-15s %14s %12s  %s", "CALIBRATION", "value", "1-sigma", "learned"));
    for (const auto& [name, c] : cal->items())
      out.push_back(fmt(" %-14s %14.6g %12.3g  %s", name.c_str(), number(at(&c, {"value"})).value_or(NAN),
                        number(at(&c, {"std"})).value_or(NAN), truth(at(&c, {"converged"}), false) ? "yes" : "no"));
  }
}

void status_block(const json& s, double age_s, std::vector<std::string>& out) {
  out.push_back(fmt("DAEMON  status seq %s   received %.1f s ago   uptime %.1f s   steps %s   valid steps %s",
                    count(at(&s, {"seq"})).c_str(), age_s, number(at(&s, {"uptime_s"})).value_or(NAN),
                    count(at(&s, {"steps"})).c_str(), count(at(&s, {"valid_steps"})).c_str()));
  out.push_back(fmt(" deadline misses %s   skipped steps %s   resets %s   queue overflows %s",
                    count(at(&s, {"deadline_misses"})).c_str(), count(at(&s, {"skipped_steps"})).c_str(),
                    count(at(&s, {"resets"})).c_str(), count(at(&s, {"queue_overflows"})).c_str()));
  const json* f = at(&s, {"frames"});
  out.push_back(fmt(" frames received %s  decoded %s  decode errors %s  unknown %s  bad log lines %s  error frames %s",
                    count(at(f, {"received"})).c_str(), count(at(f, {"decoded"})).c_str(),
                    count(at(f, {"rejected"})).c_str(), count(at(f, {"unknown"})).c_str(),
                    count(at(f, {"bad_log_lines"})).c_str(), count(at(f, {"error_frames"})).c_str()));
  if (const json* q = at(&s, {"queues"}); q && q->is_object()) {
    std::string line = " queues";
    for (const auto& [name, v] : q->items())
      line += fmt("   %s %s/%s (high %s, overflows %s)", name.c_str(), count(at(&v, {"depth"})).c_str(),
                  count(at(&v, {"capacity"})).c_str(), count(at(&v, {"high_water"})).c_str(),
                  count(at(&v, {"overflows"})).c_str());
    out.push_back(line);
  }
  if (const json* p = at(&s, {"publisher"}); p && p->is_object())
    out.push_back(fmt(" publisher   estimates sent %s   status sent %s   send errors %s",
                      count(at(p, {"estimates_sent"})).c_str(), count(at(p, {"status_sent"})).c_str(),
                      count(at(p, {"send_errors"})).c_str()));
  if (const json* l = at(&s, {"latency_us"}); l && l->is_object()) {
    out.push_back(fmt("%-16s %10s %10s %10s %10s %10s", " LATENCY us", "count", "p50", "p99", "p99.9", "max"));
    for (const auto& [name, v] : l->items())
      out.push_back(fmt("  %-14s %10s %10.1f %10.1f %10.1f %10.1f", name.c_str(), count(at(&v, {"count"})).c_str(),
                        number(at(&v, {"p50"})).value_or(NAN), number(at(&v, {"p99"})).value_or(NAN),
                        number(at(&v, {"p999"})).value_or(NAN), number(at(&v, {"max"})).value_or(NAN)));
  }
}

}  // namespace

std::vector<std::string> render_watch(const WatchInput& in) {
  std::vector<std::string> out;
  header(in, out);
  if (in.estimate) {
    out.emplace_back();
    estimate_block(*in.estimate, in.estimate_age_s, out);
  }
  out.emplace_back();
  if (in.status)
    status_block(*in.status, in.status_age_s, out);
  else if (in.estimate)
    out.push_back("DAEMON  no status datagram yet (the daemon sends one every status period)");
  return out;
}

}  // namespace mbo::runtime
