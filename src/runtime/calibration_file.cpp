#include "mbobserver/runtime/calibration_file.hpp"

#include <fcntl.h>
#include <openssl/evp.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <system_error>

#include <nlohmann/json.hpp>

#include "mbobserver/core/input_file.hpp"

namespace mbo::runtime {
namespace {

constexpr std::string_view kSchema = "mbobserver.calibration/1";
constexpr std::uintmax_t kMaxBytes = 1u << 20;  // a calibration is a few hundred bytes

std::string hex(const unsigned char* d, unsigned n) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (unsigned i = 0; i < n; ++i) s += digits[d[i] >> 4], s += digits[d[i] & 15];
  return s;
}

// write(2) all of it, or throw with errno
void write_all(int fd, const std::string& text, const std::filesystem::path& path) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw std::system_error(errno, std::generic_category(), path.string() + ": cannot write");
    done += static_cast<std::size_t>(n);
  }
}

}  // namespace

namespace {
// The kinds of parameter, as the prefixes of their published names.
const std::vector<std::string> kKinds{"gyro_bias",    "gyro_scale",     "accel_bias", "wheel_scale",
                                      "gnss_latency", "slip_stiffness", "cornering",  "payload"};
const std::string kKindList =
    "gyro_bias, gyro_scale, accel_bias, wheel_scale, gnss_latency, slip_stiffness, cornering, payload";
}  // namespace

double CalibrationConfig::parked_scale_of(const std::string& name) const {
  for (const auto& [kind, scale] : parked_rate_scale_by_kind)
    if (name.rfind(kind, 0) == 0) return scale;
  return parked_rate_scale;
}

CalibrationConfig read_calibration_config(const JsonReader* sec) {
  CalibrationConfig c;
  if (const char* dir = std::getenv("STATE_DIRECTORY"); dir && *dir) {
    // systemd may give several, separated by ':'; the first is the unit's own
    const std::string first = std::string(dir).substr(0, std::string(dir).find(':'));
    c.file = std::filesystem::path(first) / "calibration.json";
  }
  if (!sec) return c;
  if (sec->has("file")) c.file = sec->directory() / sec->string("file");
  c.save_period_s = sec->number_in("save_period_s", 1, 86400, c.save_period_s);
  c.max_age_days = sec->number_in("max_age_days", 0, 36500, c.max_age_days);
  if (auto pr = sec->find("parked_rate_scale"); pr && pr->is_object()) {
    // {"default": s, "<kind>": s, ...}: one scale per kind of parameter
    for (const auto& key : pr->keys()) {
      const double v = pr->number_in(key, 0, 1);
      if (key == "default")
        c.parked_rate_scale = v;
      else if (std::find(kKinds.begin(), kKinds.end(), key) == kKinds.end())
        pr->at(key).fail("\"" + key + "\" is not a kind of parameter (" + kKindList + ")");
      else
        c.parked_rate_scale_by_kind.emplace_back(key, v);
    }
    pr->finish();
  } else {
    c.parked_rate_scale = sec->number_in("parked_rate_scale", 0, 1, c.parked_rate_scale);
  }
  if (auto co = sec->find("carry_over")) {
    c.carry_over.clear();
    for (const auto& item : co->items()) {
      const std::string p = item.as_string();
      if (std::find(kKinds.begin(), kKinds.end(), p) == kKinds.end())
        item.fail("\"" + p + "\" is not a kind of parameter (" + kKindList + ")");
      c.carry_over.push_back(p);
    }
  }
  sec->finish();
  return c;
}

std::string sha256_of_file(const std::filesystem::path& file) {
  const std::string bytes = read_input_file(file, 64u << 20, "file");
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned n = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), digest, &n, EVP_sha256(), nullptr) != 1)
    throw std::runtime_error("SHA-256 of " + file.string() + " failed");
  return hex(digest, n);
}

CalibrationRead read_calibration_file(const std::filesystem::path& path) {
  CalibrationRead r;
  if (!std::filesystem::exists(path)) {
    r.problem = "no calibration saved yet";
    return r;
  }
  try {
    const auto doc = parse_json_text(read_input_file(path, kMaxBytes, "calibration file"), path.string());
    if (!doc.is_object() || doc.value("schema", "") != kSchema) {
      r.problem = "not a " + std::string(kSchema) + " file";
      return r;
    }
    CalibrationFile f;
    f.vehicle_sha256 = doc.at("vehicle_sha256").get<std::string>();
    f.saved_at = doc.at("saved_at").get<double>();
    for (const auto& [name, p] : doc.at("parameters").items()) {
      SavedParameter s{name, p.at("value").get<double>(), p.at("std").get<double>()};
      if (!std::isfinite(s.value) || !(s.std > 0) || !std::isfinite(s.std)) {
        r.problem = "parameter " + name + " has no finite value and positive 1-sigma";
        return r;
      }
      f.parameters.push_back(std::move(s));
    }
    if (!std::isfinite(f.saved_at)) {
      r.problem = "saved_at is not a time";
      return r;
    }
    r.file = std::move(f);
  } catch (const ConfigError& e) {
    r.problem = e.what();
  } catch (const nlohmann::json::exception& e) {
    r.problem = std::string("malformed: ") + json_exception_detail(e);
  }
  return r;
}

void write_calibration_file(const std::filesystem::path& path, const CalibrationFile& c) {
  nlohmann::ordered_json doc;
  doc["schema"] = kSchema;
  doc["vehicle_sha256"] = c.vehicle_sha256;
  doc["saved_at"] = c.saved_at;
  doc["parameters"] = nlohmann::ordered_json::object();
  for (const auto& p : c.parameters) doc["parameters"][p.name] = {{"value", p.value}, {"std", p.std}};
  const std::string text = doc.dump(2) + "\n";
  const std::filesystem::path tmp = path.string() + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw std::system_error(errno, std::generic_category(), tmp.string() + ": cannot create");
  try {
    write_all(fd, text, tmp);
    if (::fsync(fd) != 0) throw std::system_error(errno, std::generic_category(), tmp.string() + ": cannot fsync");
  } catch (...) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  if (::close(fd) != 0) throw std::system_error(errno, std::generic_category(), tmp.string() + ": cannot close");
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    ::unlink(tmp.c_str());
    throw std::system_error(e, std::generic_category(), path.string() + ": cannot replace");
  }
  // the rename itself is durable once the folder is synced
  const std::filesystem::path dir = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  if (const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

CalibrationFile calibration_of(const std::array<Calibration, kCalibrationCount>& published, std::string vehicle_sha256,
                               double now_unix) {
  CalibrationFile f;
  f.vehicle_sha256 = std::move(vehicle_sha256);
  f.saved_at = now_unix;
  for (std::size_t i = 0; i < kCalibrationCount; ++i)
    if (published[i].estimated && published[i].std > 0)
      f.parameters.push_back({std::string(kCalibrationNames[i]), published[i].value, published[i].std});
  return f;
}

std::string restore_calibration(const CalibrationRead& read, const std::string& vehicle_sha256, double now_unix,
                                const CalibrationConfig& config, est::VehicleObserver& observer) {
  if (!read.file) return "calibration not restored: " + read.problem + "; starting from the configured values";
  const auto& f = *read.file;
  if (f.vehicle_sha256 != vehicle_sha256)
    return "calibration not restored: it was learned with another vehicle file; starting from the configured values";
  const double age = now_unix - f.saved_at;
  if (age > config.max_age_days * 86400)
    return "calibration not restored: saved " + std::to_string(static_cast<long>(age / 86400)) +
           " days ago, older than max_age_days; starting from the configured values";
  int restored = 0;
  for (const auto& p : f.parameters) {
    const bool carries = std::any_of(config.carry_over.begin(), config.carry_over.end(),
                                     [&](const std::string& prefix) { return p.name.rfind(prefix, 0) == 0; });
    if (carries &&
        observer.restore_parameter(p.name, p.value, p.std, std::max(0.0, age) * config.parked_scale_of(p.name)))
      ++restored;
  }
  return "calibration restored: " + std::to_string(restored) + " of " + std::to_string(f.parameters.size()) +
         " parameters, saved " + std::to_string(static_cast<long>(std::max(0.0, age))) + " s ago";
}

}  // namespace mbo::runtime
