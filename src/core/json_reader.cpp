#include "mbobserver/core/json_reader.hpp"

#include "mbobserver/core/input_file.hpp"

#include <functional>
#include <set>
#include <vector>

#include <cmath>
#include <cstdint>
#include <fstream>
#include <sstream>

namespace mbo {
namespace {

// nlohmann reports a byte offset; users want line and column.
std::string line_column(std::string_view text, std::size_t byte) {
  std::size_t line = 1, col = 1;
  for (std::size_t i = 0; i < byte && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return std::to_string(line) + ":" + std::to_string(col);
}

std::string escape_pointer_token(std::string_view key) {
  std::string out;
  for (char c : key) {
    if (c == '~')
      out += "~0";
    else if (c == '/')
      out += "~1";
    else
      out += c;
  }
  return out;
}

std::string format_number(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

}  // namespace

std::string json_exception_detail(const nlohmann::json::exception& e) {
  const std::string what = e.what();
  const auto bracket = what.find("] ");
  return bracket == std::string::npos ? what : what.substr(bracket + 2);
}

// JSON allows a key twice in an object and nlohmann keeps the last: a configuration that says
// one thing twice is a mistake the user should hear of, not a silent choice. This follows the
// parser's events to know where it is (a JSON pointer) when a key comes again.
class DuplicateKeys {
 public:
  bool operator()(int /*depth*/, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using E = nlohmann::json::parse_event_t;
    switch (event) {
      case E::object_start:
      case E::array_start:
        frames_.push_back({event == E::object_start, {}, {}, 0});
        break;
      case E::key: {
        auto& f = frames_.back();
        f.key = parsed.get<std::string>();
        if (!f.keys.insert(f.key).second && duplicate_.empty()) duplicate_ = pointer();
        break;
      }
      case E::object_end:
      case E::array_end:
        frames_.pop_back();
        [[fallthrough]];
      case E::value:
        if (!frames_.empty() && !frames_.back().object) ++frames_.back().index;
        break;
    }
    return true;
  }
  const std::string& duplicate() const { return duplicate_; }

 private:
  struct Frame {
    bool object;
    std::set<std::string> keys;
    std::string key;
    std::size_t index;
  };
  std::string pointer() const {
    nlohmann::json::json_pointer p;
    for (const auto& f : frames_) p = f.object ? p / f.key : p / f.index;
    return p.to_string();
  }
  std::vector<Frame> frames_;
  std::string duplicate_;
};

nlohmann::json parse_json_text(std::string_view text, const std::string& name) {
  try {
    DuplicateKeys duplicates;
    auto doc = nlohmann::json::parse(text.begin(), text.end(), std::ref(duplicates), true, /*ignore_comments=*/false);
    if (!duplicates.duplicate().empty())
      throw ConfigError(name + ": " + duplicates.duplicate() + ": the key appears twice in its object");
    return doc;
  } catch (const nlohmann::json::parse_error& e) {
    // e.what() is "[json.exception.parse_error.101] parse error at line L, column C: ..."
    std::string what = e.what();
    auto colon = what.find(": ");
    std::string detail = colon == std::string::npos ? what : what.substr(colon + 2);
    auto syntax = detail.find("syntax error");
    if (syntax != std::string::npos) detail = detail.substr(syntax);
    throw ConfigError(name + ":" + line_column(text, e.byte == 0 ? 0 : e.byte - 1) + ": not valid JSON: " + detail);
  } catch (const nlohmann::json::exception& e) {
    // A number beyond a double (out_of_range.406 "number overflow parsing '1e400'") has no
    // position of its own: the first place the literal appears is where it is.
    const std::string detail = json_exception_detail(e);
    std::string where;
    auto q0 = detail.find('\''), q1 = detail.rfind('\'');
    if (q0 != std::string::npos && q1 > q0) {
      auto at = text.find(detail.substr(q0 + 1, q1 - q0 - 1));
      if (at != std::string_view::npos) where = ":" + line_column(text, at);
    }
    throw ConfigError(name + where + ": not valid JSON: " + detail);
  }
}

nlohmann::json load_json_file(const std::filesystem::path& file) {
  constexpr std::uintmax_t kMaxBytes = 64u << 20;  // far beyond any configuration
  return parse_json_text(read_input_file(file, kMaxBytes, "file"), file.string());
}

JsonReader::JsonReader(const nlohmann::json& value, std::string file, std::string pointer)
    : JsonReader(nullptr, &value, std::make_shared<const std::string>(std::move(file)), std::move(pointer)) {}

JsonReader::JsonReader(std::shared_ptr<const nlohmann::json> doc, const nlohmann::json* value,
                       std::shared_ptr<const std::string> file, std::string pointer)
    : doc_(std::move(doc)),
      value_(value),
      file_(std::move(file)),
      pointer_(std::move(pointer)),
      used_(std::make_shared<std::set<std::string>>()) {}

JsonReader JsonReader::from_file(const std::filesystem::path& file) {
  auto doc = std::make_shared<const nlohmann::json>(load_json_file(file));
  const nlohmann::json* root = doc.get();
  return JsonReader(std::move(doc), root, std::make_shared<const std::string>(file.string()), "");
}

std::string JsonReader::where() const { return *file_ + ": " + (pointer_.empty() ? std::string("/") : pointer_); }

std::filesystem::path JsonReader::directory() const { return std::filesystem::path(*file_).parent_path(); }

void JsonReader::fail(std::string_view message) const { throw ConfigError(where() + ": " + std::string(message)); }

std::string JsonReader::type_name(const nlohmann::json& v) {
  if (v.is_number()) return "number";
  return v.type_name();
}

void JsonReader::require_object() const {
  if (!value_->is_object()) fail("expected an object, got " + type_name(*value_));
}

bool JsonReader::has(std::string_view key) const {
  require_object();
  return value_->contains(key);
}

const nlohmann::json& JsonReader::member(std::string_view key) const {
  require_object();
  auto it = value_->find(key);
  if (it == value_->end()) fail("missing required key \"" + std::string(key) + "\"");
  used_->insert(std::string(key));
  return *it;
}

JsonReader JsonReader::child(std::string_view key, const nlohmann::json& v) const {
  return JsonReader(doc_, &v, file_, pointer_ + "/" + escape_pointer_token(key));
}

JsonReader JsonReader::at(std::string_view key) const { return child(key, member(key)); }

std::optional<JsonReader> JsonReader::find(std::string_view key) const {
  if (!has(key)) return std::nullopt;
  return at(key);
}

std::vector<std::string> JsonReader::keys() const {
  require_object();
  std::vector<std::string> out;
  for (auto it = value_->begin(); it != value_->end(); ++it) {
    out.push_back(it.key());
    used_->insert(it.key());
  }
  return out;
}

double JsonReader::as_number() const {
  if (!value_->is_number()) fail("expected a number, got " + type_name(*value_));
  double v = value_->get<double>();
  if (!std::isfinite(v)) fail("expected a finite number");
  return v;
}

std::string JsonReader::as_string() const {
  if (!value_->is_string()) fail("expected a string, got " + type_name(*value_));
  return value_->get<std::string>();
}

std::vector<double> JsonReader::as_numbers(std::size_t n) const {
  if (!value_->is_array()) fail("expected an array of numbers, got " + type_name(*value_));
  if (n != 0 && value_->size() != n)
    fail("expected " + std::to_string(n) + " numbers, got " + std::to_string(value_->size()));
  std::vector<double> out;
  out.reserve(value_->size());
  for (std::size_t i = 0; i < value_->size(); ++i)
    out.push_back(JsonReader(doc_, &(*value_)[i], file_, pointer_ + "/" + std::to_string(i)).as_number());
  return out;
}

std::vector<JsonReader> JsonReader::items() const {
  if (!value_->is_array()) fail("expected an array, got " + type_name(*value_));
  std::vector<JsonReader> out;
  for (std::size_t i = 0; i < value_->size(); ++i)
    out.push_back(JsonReader(doc_, &(*value_)[i], file_, pointer_ + "/" + std::to_string(i)));
  return out;
}

double JsonReader::number(std::string_view key) const { return at(key).as_number(); }
double JsonReader::number(std::string_view key, double fallback) const { return has(key) ? number(key) : fallback; }

double JsonReader::positive(std::string_view key) const {
  auto r = at(key);
  double v = r.as_number();
  if (!(v > 0)) r.fail("must be > 0, got " + format_number(v));
  return v;
}
double JsonReader::positive(std::string_view key, double fallback) const { return has(key) ? positive(key) : fallback; }

double JsonReader::non_negative(std::string_view key) const {
  auto r = at(key);
  double v = r.as_number();
  if (!(v >= 0)) r.fail("must be >= 0, got " + format_number(v));
  return v;
}
double JsonReader::non_negative(std::string_view key, double fallback) const {
  return has(key) ? non_negative(key) : fallback;
}

double JsonReader::number_in(std::string_view key, double lo, double hi) const {
  auto r = at(key);
  double v = r.as_number();
  if (!(v >= lo && v <= hi))
    r.fail("must be in [" + format_number(lo) + ", " + format_number(hi) + "], got " + format_number(v));
  return v;
}
double JsonReader::number_in(std::string_view key, double lo, double hi, double fallback) const {
  return has(key) ? number_in(key, lo, hi) : fallback;
}

double JsonReader::positive_up_to(std::string_view key, double hi) const {
  auto r = at(key);
  double v = r.as_number();
  if (!(v > 0 && v <= hi)) r.fail("must be in (0, " + format_number(hi) + "], got " + format_number(v));
  return v;
}
double JsonReader::positive_up_to(std::string_view key, double hi, double fallback) const {
  return has(key) ? positive_up_to(key, hi) : fallback;
}

long long JsonReader::integer(std::string_view key, long long lo, long long hi) const {
  auto r = at(key);
  const auto& v = r.json();
  if (!v.is_number_integer()) r.fail("expected an integer, got " + type_name(v));
  // nlohmann keeps 2^63.. 2^64-1 as unsigned: as long long they would read as negatives
  if (v.is_number_unsigned() && (hi < 0 || v.get<std::uint64_t>() > static_cast<std::uint64_t>(hi)))
    r.fail("must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " +
           std::to_string(v.get<std::uint64_t>()));
  long long x = v.get<long long>();
  if (x < lo || x > hi)
    r.fail("must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " + std::to_string(x));
  return x;
}
long long JsonReader::integer(std::string_view key, long long lo, long long hi, long long fallback) const {
  return has(key) ? integer(key, lo, hi) : fallback;
}

bool JsonReader::boolean(std::string_view key) const {
  auto r = at(key);
  if (!r.json().is_boolean()) r.fail("expected true or false, got " + type_name(r.json()));
  return r.json().get<bool>();
}
bool JsonReader::boolean(std::string_view key, bool fallback) const { return has(key) ? boolean(key) : fallback; }

std::string JsonReader::string(std::string_view key) const { return at(key).as_string(); }
std::string JsonReader::string(std::string_view key, std::string_view fallback) const {
  return has(key) ? string(key) : std::string(fallback);
}

std::string JsonReader::choice(std::string_view key, std::initializer_list<std::string_view> choices) const {
  auto r = at(key);
  std::string v = r.as_string();
  std::string list;
  for (auto c : choices) {
    if (v == c) return v;
    list += (list.empty() ? "" : ", ") + std::string(c);
  }
  r.fail("unknown value \"" + v + "\" (expected one of: " + list + ")");
}
std::string JsonReader::choice(std::string_view key, std::initializer_list<std::string_view> choices,
                               std::string_view fallback) const {
  return has(key) ? choice(key, choices) : std::string(fallback);
}

std::vector<double> JsonReader::numbers(std::string_view key, std::size_t n) const { return at(key).as_numbers(n); }

std::vector<double> JsonReader::numbers_in(std::string_view key, std::size_t n, double lo, double hi) const {
  auto r = at(key);
  auto v = r.as_numbers(n);
  for (std::size_t i = 0; i < v.size(); ++i)
    if (!(v[i] >= lo && v[i] <= hi))
      JsonReader(doc_, &r.json()[i], file_, r.pointer_ + "/" + std::to_string(i))
          .fail("must be in [" + format_number(lo) + ", " + format_number(hi) + "], got " + format_number(v[i]));
  return v;
}

void JsonReader::finish() const {
  if (!value_->is_object()) return;
  for (auto it = value_->begin(); it != value_->end(); ++it) {
    if (!used_->count(it.key())) child(it.key(), it.value()).fail("unknown key \"" + it.key() + "\"");
  }
}

}  // namespace mbo
