// mbobserver-listen --csv: estimates as CSV rows for spreadsheets and pandas
// (docs/interfaces.md "mbobserver-listen").
//
// A JSON document is flattened to (column, cell) pairs: object keys joined with '.'
// ("state.x", "health.sensors.gyro.age_ms"); a numeric array of 4 is per wheel in the order
// fl, fr, rl, rr ("virtual.tyre_fz.fl"), another numeric array gets its index ("a.0"); an array
// of strings (health.faults) is one cell, its items joined by spaces. Cells: integers as
// written, other numbers std::to_chars shortest round-trip, booleans true/false, null empty,
// strings quoted per RFC 4180 when needed. Columns come in the document's key order (ordered_json).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace mbo::runtime {

using CsvCells = std::vector<std::pair<std::string, std::string>>;  // (column, cell), in document order

CsvCells flatten_for_csv(const nlohmann::ordered_json& doc);

// One header line from the first document, then one row per document. The columns stay those
// of the first document for the whole run: a later document fills the columns it shares with
// it (the others stay empty, its keys outside the header are dropped) and is counted.
class CsvWriter {
 public:
  explicit CsvWriter(std::ostream& out) : out_(out) {}
  void write(const nlohmann::ordered_json& doc);
  std::uint64_t rows() const { return rows_; }
  std::uint64_t mismatched() const { return mismatched_; }  // rows whose keys differ from the header's
  const std::vector<std::string>& columns() const { return columns_; }

 private:
  std::ostream& out_;
  std::vector<std::string> columns_;
  std::unordered_map<std::string, std::size_t> index_;
  std::vector<std::string> row_;
  std::uint64_t rows_ = 0, mismatched_ = 0;
};

}  // namespace mbo::runtime
