// NMEA 0183 sentences from a GNSS receiver: GGA (fix), RMC (minimum data), VTG (course and
// speed), GST (error statistics), with the checksum verified.
//
//   $GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,*47
//   '$' talker(2) type(3) ',' fields... '*' two hex digits of the XOR of the bytes between
//   '$' and '*', then CR LF.
//
// Any talker is accepted (GP, GN, GL, GA, GB, BD, ...). Empty fields are legal and common
// (no course at standstill, no fix yet): they become absent values, never zeros. The
// standard's 82-character limit is not enforced because receivers with high-precision output
// exceed it; lines are bounded by the serial reader instead.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string_view>
#include <variant>

#include "mbobserver/core/measurement.hpp"

namespace mbo::io {

struct NmeaGga {
  std::optional<double> time_s;  // UTC seconds of the day
  std::optional<double> lat_deg;  // north positive
  std::optional<double> lon_deg;  // east positive
  int quality = 0;  // 0 none, 1 GPS, 2 DGPS, 4 RTK fixed, 5 RTK float, ...
  std::optional<int> satellites;
  std::optional<double> hdop;
  std::optional<double> alt_msl_m;  // above mean sea level
  std::optional<double> geoid_separation_m;  // ellipsoid height = alt_msl + separation
};

struct NmeaRmc {
  std::optional<double> time_s;
  bool valid = false;  // status A; V = warning
  std::optional<double> lat_deg;
  std::optional<double> lon_deg;
  std::optional<double> speed_mps;  // from knots
  std::optional<double> course_deg;  // true, clockwise from north
  std::optional<int> date_ddmmyy;
  std::optional<double> magnetic_variation_deg;  // east positive
  char mode = 0;  // NMEA 2.3 mode indicator: A, D, E, M, N (0 if absent)
};

struct NmeaVtg {
  std::optional<double> course_true_deg;
  std::optional<double> course_magnetic_deg;
  std::optional<double> speed_mps;  // from knots, else from km/h
  char mode = 0;
};

struct NmeaGst {
  std::optional<double> time_s;
  std::optional<double> rms;
  std::optional<double> semi_major_m;
  std::optional<double> semi_minor_m;
  std::optional<double> orientation_deg;
  std::optional<double> std_lat_m;
  std::optional<double> std_lon_m;
  std::optional<double> std_alt_m;
};

struct NmeaSentence {
  std::array<char, 2> talker{};
  std::variant<NmeaGga, NmeaRmc, NmeaVtg, NmeaGst> data;
};

enum class NmeaStatus : std::uint8_t {
  parsed,  // one of GGA, RMC, VTG, GST
  unsupported,  // a valid sentence of another type (GSV, GSA, TXT, proprietary, ...)
  rejected,  // see NmeaResult::reason
};

struct NmeaResult {
  NmeaStatus status = NmeaStatus::rejected;
  std::string_view reason;  // for rejected: "bad checksum", "field 7 (quality): not a number", ...
};

struct NmeaOptions {
  // NMEA 0183 makes the checksum mandatory for these sentences; a line without one is
  // rejected unless this is false (for old receivers).
  bool require_checksum = true;
};

// Parses one sentence, with or without its trailing CR LF. Never throws.
NmeaResult parse_nmea(std::string_view line, NmeaSentence& out, const NmeaOptions& options = {});

// Which sentence feeds which channels (a receiver usually sends several that overlap).
struct NmeaChannelOptions {
  bool position_from_rmc = false;  // default: latitude/longitude from GGA only
  bool velocity_from_vtg = false;  // default: speed/course from RMC only
};

// Turns a parsed sentence into measurements stamped `t`: GGA gives gnss_lat/lon (when the fix
// quality is not 0), gnss_alt (ellipsoid height, when the geoid separation is given) and
// gnss_fix_quality; RMC (status A, mode not N) or VTG gives gnss_speed and gnss_course (rad,
// absent when the field is empty); GST gives gnss_std_lat/lon/alt. Returns the count written.
std::size_t nmea_measurements(const NmeaSentence& s, double t, const NmeaChannelOptions& options,
                              std::span<Measurement, 8> out);

// The UTC time of day (s) a sentence says its fix is of: GGA, RMC and GST carry it; VTG and an
// empty field give nullopt.
std::optional<double> nmea_fix_time_of_day(const NmeaSentence& s);

// Stamps a receiver's measurements at the time of their fix rather than their arrival, from the
// UTC time of day inside each sentence and the system clock's UTC when the line was read. A
// receiver sends a fix 50-200 ms after the instant it describes (at 30 m/s, 1.5-6 m along the
// track); where the host clock is kept on GNSS time (chrony with gpsd and the receiver's PPS)
// that age is measured per fix, jitter included, instead of configured or learned. A sentence
// whose time cannot be had is dropped, not stamped at its arrival: the observer, told the
// fixes carry their own time, would take it as a fix with no latency.
class NmeaFixTimeStamper {
 public:
  explicit NmeaFixTimeStamper(double max_age_s = 1.0) : max_age_s_(max_age_s) {}
  // The stamp of sentence s read at `arrival` (the measurements' clock) when the system clock
  // read `utc_now_s` (s since 1970); nullopt: drop it. A timed sentence (GGA, RMC, GST) whose
  // age is outside [-kClockTolerance_s, max_age_s] says the clocks disagree (counted
  // `unsynchronised`). A sentence without a time (VTG) takes the age of the timed sentence
  // before it when that came within `kSameEpoch_s` (a receiver sends an epoch's sentences
  // together, most with the timed ones first); otherwise it is counted `untimed`.
  std::optional<double> stamp(const NmeaSentence& s, double arrival, double utc_now_s);
  // The age the last timed sentence was found to have; NaN before the first.
  double last_age_s() const { return last_age_; }
  // Whether that age was within [0, max_age_s].
  bool last_agreed() const { return last_ok_; }
  std::uint64_t stamped() const { return stamped_; }
  std::uint64_t unsynchronised() const { return unsynchronised_; }
  std::uint64_t untimed() const { return untimed_; }
  static constexpr double kSameEpoch_s = 0.2, kClockTolerance_s = 0.05;

 private:
  double max_age_s_;
  double last_age_ = std::numeric_limits<double>::quiet_NaN();
  double last_arrival_ = -1e300;
  bool last_ok_ = false;
  std::uint64_t stamped_ = 0, unsynchronised_ = 0, untimed_ = 0;
};

// The age of a fix at its arrival: the system clock's UTC time of day minus the fix's, wrapped
// into [-12 h, 12 h) so that a fix of 23:59:59.9 read at 00:00:00.05 is 0.15 s old (and one of
// a leap second, 23:59:60.x, is taken as 23:59:59.x, which the system clock repeats).
double nmea_fix_age_s(double fix_time_of_day_s, double utc_now_s);

}  // namespace mbo::io
