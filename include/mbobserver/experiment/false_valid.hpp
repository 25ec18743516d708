// The false-valid rate (docs/interfaces.md "Report"; issue 21): per published output, the share
// of the scored steps on which the output's own validity flag is set while its error exceeds
// kFalseValidSigmas times its published 1-sigma, or, for the tyre forces, a stated absolute
// bound (their std.tyre_* of estimate/2 is not yet one to score against: false_valid.cpp). ADAS logic acts on the flag:
// this is how often it is lied to. mbobserver-experiment's vehicle report and mbobserver-eval's report both count it
// here, and tools/fault_catalogue.py reads mbobserver-eval's.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mbobserver/core/estimate.hpp"

namespace mbo::exp {

inline constexpr double kFalseValidSigmas = 4;

struct ValidityOutput {
  std::string name;  // report key: position, yaw, velocity, sideslip, tyre_fx, ...
  std::string flag;  // its flag: health.validity.<flag> of an estimate record
  // The vehicle quantities it is made of (vehicle_quantities.hpp names); over its bound when
  // any one is.
  std::vector<std::string> quantities;
  // std.<key> of each quantity in an estimate record; empty: no sigma, `bound` instead.
  std::vector<std::string> sigma_keys;
  double bound = 0;  // the error bound where no sigma is published, in the quantities' unit
  bool (*flag_of)(const Validity&) = nullptr;
  double (*sigma_of)(const EstimateRecord&, std::size_t quantity) = nullptr;  // null: no sigma
  bool has_sigma() const { return !sigma_keys.empty(); }
};

// position (x, y), yaw, velocity (vx, vy), sideslip, tyre_fx, tyre_fy, tyre_fz (each wheel).
const std::vector<ValidityOutput>& validity_outputs();

class FalseValidRate {
 public:
  FalseValidRate();
  // Output `o` on the current step: its flag, and for each of its quantities the error
  // (estimate - truth, angles wrapped) and the published sigma (unused without one). A
  // non-finite error counts as over its bound. Not called for a step: the output is not scored
  // then (sideslip below its speed), but the step still counts in the rate's denominator.
  void add(std::size_t o, bool valid, std::span<const double> errors, std::span<const double> sigmas);
  // Ends a step.
  void next_step() { ++steps_; }
  std::uint64_t steps() const { return steps_; }
  std::uint64_t false_valid_steps(std::size_t o) const { return over_[o]; }
  double rate(std::size_t o) const { return share(over_[o]); }
  // The share of the steps on which the output's flag was set: its availability. A flag never
  // set has no false-valid steps; this says what that cost.
  double valid_share(std::size_t o) const { return share(valid_[o]); }
  // The largest |error| of any of the output's quantities on a step its flag was set (its
  // quantities' unit; 0 if never set, +inf after a non-finite one): how far wrong a valid
  // output was, where the rate says only how often it was beyond its bound.
  double largest_valid_error(std::size_t o) const { return largest_[o]; }
  // {"sigmas": 4, "steps": N, "rate": {output: share}, "false_valid_steps": {output: n},
  //  "valid_share": {output: share}, "largest_valid_error": {output: |error| or null if
  //  non-finite}, "bound": {output: "4 sigma" or the absolute bound}};
  //  `skip`: outputs not scored at all.
  nlohmann::json report(const std::vector<bool>& skip = {}) const;

 private:
  double share(std::uint64_t n) const { return steps_ ? static_cast<double>(n) / static_cast<double>(steps_) : 0; }
  std::uint64_t steps_ = 0;
  std::vector<std::uint64_t> over_, valid_;
  std::vector<double> largest_;
};

}  // namespace mbo::exp
