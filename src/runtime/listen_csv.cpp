#include "mbobserver/runtime/listen_csv.hpp"

#include <array>
#include <charconv>
#include <string_view>

namespace mbo::runtime {

namespace {

using json = nlohmann::ordered_json;

constexpr std::array<const char*, 4> kWheels = {"fl", "fr", "rl", "rr"};

// RFC 4180: a field holding a comma, quote or line break is quoted, quotes doubled. A leading
// or trailing space is quoted too, as spreadsheets otherwise trim it.
std::string csv_quoted(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos && (s.empty() || (s.front() != ' ' && s.back() != ' '))) return s;
  std::string q = "\"";
  for (char c : s) {
    if (c == '"') q += '"';
    q += c;
  }
  return q + '"';
}

std::string scalar_cell(const json& v) {
  switch (v.type()) {
    case json::value_t::null:
      return {};
    case json::value_t::boolean:
      return v.get<bool>() ? "true" : "false";
    case json::value_t::number_integer:
      return std::to_string(v.get<std::int64_t>());
    case json::value_t::number_unsigned:
      return std::to_string(v.get<std::uint64_t>());
    case json::value_t::number_float: {
      std::array<char, 32> buf{};
      const auto r = std::to_chars(buf.data(), buf.data() + buf.size(), v.get<double>());
      return std::string(buf.data(), r.ptr);
    }
    case json::value_t::string:
      return csv_quoted(v.get<std::string>());
    default:
      return csv_quoted(v.dump());  // not reached for objects and arrays (flattened by the caller)
  }
}

bool all_strings(const json& a) {
  for (const auto& e : a)
    if (!e.is_string()) return false;
  return true;
}

void flatten(const json& v, const std::string& name, CsvCells& out) {
  if (v.is_object()) {
    for (const auto& [k, e] : v.items()) flatten(e, name.empty() ? k : name + "." + k, out);
  } else if (v.is_array() && all_strings(v)) {
    std::string joined;
    for (const auto& e : v) joined += (joined.empty() ? "" : " ") + e.get<std::string>();
    out.emplace_back(name, csv_quoted(joined));
  } else if (v.is_array()) {
    for (std::size_t i = 0; i < v.size(); ++i)
      flatten(v[i], name + "." + (v.size() == kWheels.size() ? std::string(kWheels[i]) : std::to_string(i)), out);
  } else {
    out.emplace_back(name, scalar_cell(v));
  }
}

}  // namespace

CsvCells flatten_for_csv(const nlohmann::ordered_json& doc) {
  CsvCells out;
  flatten(doc, "", out);
  return out;
}

void CsvWriter::write(const nlohmann::ordered_json& doc) {
  const CsvCells cells = flatten_for_csv(doc);
  if (columns_.empty()) {
    for (const auto& [name, cell] : cells) {
      index_.emplace(name, columns_.size());
      columns_.push_back(name);
    }
    for (std::size_t i = 0; i < columns_.size(); ++i) out_ << (i ? "," : "") << csv_quoted(columns_[i]);
    out_ << '\n';
  }
  row_.assign(columns_.size(), std::string());
  std::size_t known = 0;
  bool unknown = false;
  for (const auto& [name, cell] : cells) {
    const auto it = index_.find(name);
    if (it == index_.end()) {
      unknown = true;
      continue;
    }
    row_[it->second] = cell;
    ++known;
  }
  if (unknown || known != columns_.size()) ++mismatched_;
  for (std::size_t i = 0; i < row_.size(); ++i) out_ << (i ? "," : "") << row_[i];
  out_ << '\n';
  out_.flush();  // a row at a time, so that a reader following the file sees whole rows
  ++rows_;
}

}  // namespace mbo::runtime
