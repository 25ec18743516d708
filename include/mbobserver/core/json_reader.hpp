// Strict reading of JSON configuration: every file the programs read (daemon config,
// model, vehicle, scenario) goes through JsonReader so that an unknown key, a wrong type,
// a missing key or an out-of-range value is one ConfigError naming the file and the JSON
// pointer (e.g. "config/mbobserver.json: /filter/plant_noise/zdd: must be >= 0, got -1").
#pragma once

#include <filesystem>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace mbo {

// A configuration or input-file error: the programs print what() and exit with code 2.
class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Parses a JSON file. A missing file or a syntax error is a ConfigError with
// "file:line:column: message".
nlohmann::json load_json_file(const std::filesystem::path& file);

// Same, from text already in memory; `name` is used in messages.
nlohmann::json parse_json_text(std::string_view text, const std::string& name);

// nlohmann's message without its "[json.exception.<kind>.<id>] " prefix, for a ConfigError.
std::string json_exception_detail(const nlohmann::json::exception& e);

// A read-only view of one JSON value at a known pointer inside a known file. Reading a key
// of an object marks it used; finish() rejects the keys nobody asked for.
class JsonReader {
 public:
  JsonReader(const nlohmann::json& value, std::string file, std::string pointer = "");

  // Loads `file` and returns a reader of its root; the document lives as long as any reader.
  static JsonReader from_file(const std::filesystem::path& file);

  const std::string& file() const { return *file_; }
  const std::string& pointer() const { return pointer_; }
  std::string where() const;  // "file: /pointer" (or "file: /" for the root)
  const nlohmann::json& json() const { return *value_; }

  // Directory of the file, for paths that are relative to it.
  std::filesystem::path directory() const;

  [[noreturn]] void fail(std::string_view message) const;

  // Object access (each call checks that this value is an object).
  bool has(std::string_view key) const;
  JsonReader at(std::string_view key) const;  // required key
  std::optional<JsonReader> find(std::string_view key) const;
  std::vector<std::string> keys() const;  // marks all keys used (maps of user names)

  // Typed access of a key; the two-argument forms give a default for an absent key.
  double number(std::string_view key) const;
  double number(std::string_view key, double fallback) const;
  double positive(std::string_view key) const;
  double positive(std::string_view key, double fallback) const;
  double non_negative(std::string_view key) const;
  double non_negative(std::string_view key, double fallback) const;
  double number_in(std::string_view key, double lo, double hi) const;
  double number_in(std::string_view key, double lo, double hi, double fallback) const;
  // (0, hi]: a quantity that must be positive and has a physical limit.
  double positive_up_to(std::string_view key, double hi) const;
  double positive_up_to(std::string_view key, double hi, double fallback) const;
  long long integer(std::string_view key, long long lo = std::numeric_limits<long long>::min(),
                    long long hi = std::numeric_limits<long long>::max()) const;
  long long integer(std::string_view key, long long lo, long long hi, long long fallback) const;
  bool boolean(std::string_view key) const;
  bool boolean(std::string_view key, bool fallback) const;
  std::string string(std::string_view key) const;
  std::string string(std::string_view key, std::string_view fallback) const;
  // A string that must be one of `choices`.
  std::string choice(std::string_view key, std::initializer_list<std::string_view> choices) const;
  std::string choice(std::string_view key, std::initializer_list<std::string_view> choices,
                     std::string_view fallback) const;
  // A fixed-length or any-length (n = 0) array of numbers.
  std::vector<double> numbers(std::string_view key, std::size_t n = 0) const;
  // The same, each in [lo, hi] (the message names the element's pointer).
  std::vector<double> numbers_in(std::string_view key, std::size_t n, double lo, double hi) const;

  // The value itself.
  bool is_object() const { return value_->is_object(); }
  bool is_array() const { return value_->is_array(); }
  bool is_number() const { return value_->is_number(); }
  bool is_string() const { return value_->is_string(); }
  double as_number() const;
  std::string as_string() const;
  std::vector<double> as_numbers(std::size_t n = 0) const;
  std::vector<JsonReader> items() const;  // array elements

  // Throws for the first key of this object that was never read.
  void finish() const;

 private:
  JsonReader(std::shared_ptr<const nlohmann::json> doc, const nlohmann::json* value,
             std::shared_ptr<const std::string> file, std::string pointer);
  const nlohmann::json& member(std::string_view key) const;
  JsonReader child(std::string_view key, const nlohmann::json& v) const;
  void require_object() const;
  static std::string type_name(const nlohmann::json& v);

  std::shared_ptr<const nlohmann::json> doc_;  // keeps a loaded document alive
  const nlohmann::json* value_;
  std::shared_ptr<const std::string> file_;
  std::string pointer_;
  std::shared_ptr<std::set<std::string>> used_;
};

}  // namespace mbo
