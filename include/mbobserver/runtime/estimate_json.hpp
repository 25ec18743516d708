// `mbobserver.estimate/1` and `mbobserver.status/1` datagrams (docs/interfaces.md "UDP/JSON
// datagram"; docs/estimate.schema.json, docs/status.schema.json).
//
// Output is deterministic: numbers are std::to_chars shortest round-trip (locale-independent),
// keys in a fixed order, no whitespace. With `wall_clock = false` the fields that depend on
// when the program ran (t_wall, uptime_s, latency_us) are left out, so two replays of the same
// log give byte-identical `--record` files.
#pragma once

#include <string>
#include <string_view>

#include "mbobserver/core/estimate.hpp"
#include "mbobserver/runtime/run_summary.hpp"
#include "mbobserver/runtime/status_record.hpp"

namespace mbo::runtime {

// 2: wheel_angle renamed wheel_spin_angle; lat/lon/alt, the origin, the accelerations and the
// virtual sensors' 1-sigma added (issue 20).
inline constexpr std::string_view kEstimateSchema = "mbobserver.estimate/2";
inline constexpr std::string_view kStatusSchema = "mbobserver.status/1";
inline constexpr std::string_view kSummarySchema = "mbobserver.summary/1";

struct JsonOptions {
  bool wall_clock = true;  // false: omit t_wall, uptime_s and latency_us
};

// Clears `out` and writes one datagram (no trailing newline). Reserve `out` once (4 KiB for
// an estimate, 8 KiB for a status) and these do not allocate.
void write_estimate_json(const EstimateRecord& r, std::string& out, const JsonOptions& opt = {});
void write_status_json(const StatusRecord& s, std::string& out, const JsonOptions& opt = {});

std::string estimate_json(const EstimateRecord& r, const JsonOptions& opt = {});
std::string status_json(const StatusRecord& s, const JsonOptions& opt = {});

// The daemon's summary at exit (docs/summary.schema.json): every field of the status record
// as a status datagram has it (wall-clock fields included), with "schema" naming the summary,
// and the run's own section under "run".
std::string summary_json(const StatusRecord& s, const RunSummary& run);

// errno as its symbolic name ("ENETUNREACH"), "E<number>" if unknown.
std::string_view errno_name(int err) noexcept;

}  // namespace mbo::runtime
