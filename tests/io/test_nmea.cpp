// NMEA 0183: every sentence of the minmea fixture is parsed to the right values or rejected
// with a reason; values checked by hand for each supported type.
#include <cmath>
#include <fstream>
#include <numbers>

#include <gtest/gtest.h>

#include "mbobserver/io/nmea.hpp"
#include "test_util.hpp"

using namespace mbo::io;

namespace {

// The fixture holds C string literals from minmea's tests.c: turn \r, \n and \xNN escapes
// into the bytes they stand for.
std::string unescape(const std::string& s) {
  std::string o;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size()) {
      char c = s[i + 1];
      if (c == 'r' || c == 'n') {
        o += c == 'r' ? '\r' : '\n';
        ++i;
        continue;
      }
      if (c == 'x' && i + 3 < s.size()) {
        o += static_cast<char>(std::stoi(s.substr(i + 2, 2), nullptr, 16));
        i += 3;
        continue;
      }
    }
    o += s[i];
  }
  return o;
}

std::vector<std::string> fixture_lines() {
  std::ifstream in(mbo::test::fixtures() / "nmea/minmea-sentences.txt");
  std::vector<std::string> out;
  std::string l;
  while (std::getline(in, l)) out.push_back(unescape(l));
  return out;
}

template <class T>
T parse_as(const std::string& line, const NmeaOptions& o = {}) {
  NmeaSentence s;
  NmeaResult r = parse_nmea(line, s, o);
  EXPECT_EQ(r.status, NmeaStatus::parsed) << line << ": " << r.reason;
  const T* t = std::get_if<T>(&s.data);
  EXPECT_NE(t, nullptr) << line;
  return t ? *t : T{};
}

}  // namespace

// Expected outcome of each fixture line, in file order: p parsed, u valid but unsupported
// type, r rejected (with the reason).
TEST(Nmea, EveryFixtureSentenceParsedOrRejectedWithReason) {
  const std::vector<std::pair<std::string, std::string>> expected = {{"r", "no checksum"},
                                                                     {"u", ""},
                                                                     {"r", "no checksum"},
                                                                     {"p", ""},
                                                                     {"u", ""},
                                                                     {"u", ""},
                                                                     {"p", ""},
                                                                     {"p", ""},
                                                                     {"p", ""},
                                                                     {"p", ""},
                                                                     {"u", ""},
                                                                     {"u", ""},
                                                                     {"r", "no checksum"},
                                                                     {"u", ""},
                                                                     {"u", ""},
                                                                     {"u", ""},
                                                                     {"u", ""},
                                                                     {"p", ""},
                                                                     {"u", ""},
                                                                     {"u", ""},
                                                                     {"u", ""},
                                                                     {"u", ""},
                                                                     {"u", ""},
                                                                     {"u", ""},
                                                                     {"u", ""},
                                                                     {"u", ""},
                                                                     {"r", "no checksum"},
                                                                     {"p", ""},
                                                                     {"r", "text after the checksum"},
                                                                     {"p", ""},
                                                                     {"r", "no checksum"},
                                                                     {"p", ""},
                                                                     {"r", "no checksum"},
                                                                     {"r", "no checksum"},
                                                                     {"u", ""},
                                                                     {"r", "bad checksum"},
                                                                     {"r", "no checksum"},
                                                                     {"r", "byte outside printable ASCII"},
                                                                     {"r", "byte outside printable ASCII"},
                                                                     {"r", "no checksum"},
                                                                     {"r", "byte outside printable ASCII"},
                                                                     {"r", "no checksum"},
                                                                     {"r", "byte outside printable ASCII"},
                                                                     {"r", "byte outside printable ASCII"},
                                                                     {"r", "no checksum"},
                                                                     {"r", "no checksum"},
                                                                     {"p", ""},
                                                                     {"r", "byte outside printable ASCII"},
                                                                     {"p", ""},
                                                                     {"p", ""},
                                                                     {"p", ""},
                                                                     {"p", ""},
                                                                     {"u", ""},
                                                                     {"r", "bad checksum"},
                                                                     {"u", ""},
                                                                     {"r", "checksum: not hexadecimal"},
                                                                     {"r", "no checksum"},
                                                                     {"r", "no checksum"},
                                                                     {"r", "no checksum"},
                                                                     {"r", "no checksum"},
                                                                     {"r", "no checksum"},
                                                                     {"r", "no checksum"},
                                                                     {"r", "no checksum"},
                                                                     {"r", "no checksum"},
                                                                     {"u", ""}};
  auto lines = fixture_lines();
  ASSERT_EQ(lines.size(), expected.size());
  std::size_t parsed = 0, unsupported = 0, rejected = 0;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    NmeaSentence s;
    NmeaResult r = parse_nmea(lines[i], s);
    const char got = r.status == NmeaStatus::parsed ? 'p' : r.status == NmeaStatus::unsupported ? 'u' : 'r';
    EXPECT_EQ(std::string(1, got), expected[i].first) << "line " << i + 1 << ": " << lines[i];
    EXPECT_EQ(std::string(r.reason), expected[i].second) << "line " << i + 1;
    parsed += got == 'p';
    unsupported += got == 'u';
    rejected += got == 'r';
  }
  EXPECT_EQ(parsed, 14u);
  EXPECT_EQ(unsupported + rejected + parsed, 65u);
}

TEST(Nmea, GgaValues) {
  auto g = parse_as<NmeaGga>("$GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,*47\r\n");
  EXPECT_DOUBLE_EQ(*g.time_s, 12 * 3600 + 35 * 60 + 19);
  EXPECT_DOUBLE_EQ(*g.lat_deg, 48 + 7.038 / 60);
  EXPECT_DOUBLE_EQ(*g.lon_deg, 11 + 31.0 / 60);
  EXPECT_EQ(g.quality, 1);
  EXPECT_EQ(*g.satellites, 8);
  EXPECT_DOUBLE_EQ(*g.hdop, 0.9);
  EXPECT_DOUBLE_EQ(*g.alt_msl_m, 545.4);
  EXPECT_DOUBLE_EQ(*g.geoid_separation_m, 46.9);
  auto h = parse_as<NmeaGga>("$GPGGA,123204.00,5106.94086,N,01701.51680,E,1,06,3.86,127.9,M,40.5,M,,*51");
  EXPECT_DOUBLE_EQ(*h.lat_deg, 51 + 6.94086 / 60);
  EXPECT_DOUBLE_EQ(*h.lon_deg, 17 + 1.51680 / 60);
  EXPECT_DOUBLE_EQ(*h.time_s, 12 * 3600 + 32 * 60 + 4.0);
  auto none = parse_as<NmeaGga>("$GPGGA,,,,,,0,00,99.99,,,,,,*48");
  EXPECT_EQ(none.quality, 0);
  EXPECT_FALSE(none.lat_deg || none.lon_deg || none.alt_msl_m || none.time_s);
  // No fix: only the fix quality becomes a measurement.
  NmeaSentence s;
  parse_nmea("$GPGGA,,,,,,0,00,99.99,,,,,,*48", s);
  std::array<mbo::Measurement, 8> m;
  ASSERT_EQ(nmea_measurements(s, 1.0, {}, m), 1u);
  EXPECT_EQ(m[0].channel, mbo::Channel::gnss_fix_quality);
  parse_nmea("$GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,*47", s);
  ASSERT_EQ(nmea_measurements(s, 2.5, {}, m), 4u);
  EXPECT_EQ(m[2].channel, mbo::Channel::gnss_alt);
  EXPECT_DOUBLE_EQ(m[2].value, 545.4 + 46.9);  // ellipsoid height
  EXPECT_EQ(m[2].t, 2.5);
}

TEST(Nmea, RmcValuesAndEmptyCourseAtStandstill) {
  auto r = parse_as<NmeaRmc>("$GPRMC,081836,A,3751.65,S,14507.36,E,000.0,360.0,130998,011.3,E*62");
  EXPECT_TRUE(r.valid);
  EXPECT_DOUBLE_EQ(*r.lat_deg, -(37 + 51.65 / 60));
  EXPECT_DOUBLE_EQ(*r.lon_deg, 145 + 7.36 / 60);
  EXPECT_DOUBLE_EQ(*r.speed_mps, 0.0);
  EXPECT_DOUBLE_EQ(*r.course_deg, 360.0);
  EXPECT_EQ(*r.date_ddmmyy, 130998);
  EXPECT_DOUBLE_EQ(*r.magnetic_variation_deg, 11.3);
  auto still = parse_as<NmeaRmc>("$GPRMC,123205.00,A,5106.94085,N,01701.51689,E,0.016,,280214,,,A*7B");
  EXPECT_FALSE(still.course_deg.has_value());
  EXPECT_DOUBLE_EQ(*still.speed_mps, 0.016 * 1852 / 3600);
  EXPECT_EQ(still.mode, 'A');
  NmeaSentence s;
  parse_nmea("$GPRMC,123205.00,A,5106.94085,N,01701.51689,E,0.016,,280214,,,A*7B", s);
  std::array<mbo::Measurement, 8> m;
  ASSERT_EQ(nmea_measurements(s, 0, {}, m), 1u);  // speed, no course
  EXPECT_EQ(m[0].channel, mbo::Channel::gnss_speed);
  parse_nmea("$GPRMC,081836,A,3751.65,S,14507.36,E,000.0,360.0,130998,011.3,E*62", s);
  ASSERT_EQ(nmea_measurements(s, 0, {}, m), 2u);
  EXPECT_EQ(m[1].channel, mbo::Channel::gnss_course);
  EXPECT_EQ(m[1].value, 0.0);  // 360 deg is north
  auto v = parse_as<NmeaRmc>("$GPRMC,,V,,,,,,,,,,N*53");
  EXPECT_FALSE(v.valid);
  EXPECT_EQ(v.mode, 'N');
  parse_nmea("$GPRMC,,V,,,,,,,,,,N*53", s);
  EXPECT_EQ(nmea_measurements(s, 0, {}, m), 0u);
  // Without the checksum requirement, old receivers' sentences are read.
  NmeaOptions lax;
  lax.require_checksum = false;
  auto old = parse_as<NmeaRmc>("$GPRMC,081836.75,A,3751.65,S,14507.36,E,000.0,360.0,130998,011.3,E", lax);
  EXPECT_DOUBLE_EQ(*old.time_s, 8 * 3600 + 18 * 60 + 36.75);
  NmeaSentence t;
  EXPECT_EQ(parse_nmea("$GPRMC,foo,bar,baz", t, lax).reason, "RMC: fewer than 9 fields");
}

TEST(Nmea, VtgValues) {
  auto a = parse_as<NmeaVtg>("$GPVTG,054.7,T,034.4,M,005.5,N,010.2,K*48");
  EXPECT_DOUBLE_EQ(*a.course_true_deg, 54.7);
  EXPECT_DOUBLE_EQ(*a.course_magnetic_deg, 34.4);
  EXPECT_DOUBLE_EQ(*a.speed_mps, 5.5 * 1852 / 3600);
  auto b = parse_as<NmeaVtg>("$GPVTG,188.36,T,,M,0.820,N,1.519,K,A*3F");
  EXPECT_DOUBLE_EQ(*b.course_true_deg, 188.36);
  EXPECT_FALSE(b.course_magnetic_deg.has_value());
  EXPECT_EQ(b.mode, 'A');
  auto c = parse_as<NmeaVtg>("$GPVTG,,T,,M,0.016,N,0.030,K,A*27");
  EXPECT_FALSE(c.course_true_deg.has_value());
  auto d = parse_as<NmeaVtg>("$GNVTG,,,,,,,,,N*2E");
  EXPECT_FALSE(d.speed_mps.has_value());
  EXPECT_EQ(d.mode, 'N');
  NmeaSentence s;
  parse_nmea("$GPVTG,188.36,T,,M,0.820,N,1.519,K,A*3F", s);
  std::array<mbo::Measurement, 8> m;
  EXPECT_EQ(nmea_measurements(s, 0, {}, m), 0u);  // RMC feeds velocity by default
  NmeaChannelOptions vtg;
  vtg.velocity_from_vtg = true;
  ASSERT_EQ(nmea_measurements(s, 0, vtg, m), 2u);
  EXPECT_NEAR(m[1].value, 188.36 * std::numbers::pi / 180, 1e-15);
}

TEST(Nmea, GstValues) {
  auto g = parse_as<NmeaGst>("$GPGST,024603.00,3.2,6.6,4.7,47.3,5.8,5.6,22.0*58");
  EXPECT_DOUBLE_EQ(*g.rms, 3.2);
  EXPECT_DOUBLE_EQ(*g.semi_major_m, 6.6);
  EXPECT_DOUBLE_EQ(*g.semi_minor_m, 4.7);
  EXPECT_DOUBLE_EQ(*g.orientation_deg, 47.3);
  EXPECT_DOUBLE_EQ(*g.std_lat_m, 5.8);
  EXPECT_DOUBLE_EQ(*g.std_lon_m, 5.6);
  EXPECT_DOUBLE_EQ(*g.std_alt_m, 22.0);
  NmeaSentence s;
  parse_nmea("$GPGST,024603.00,3.2,6.6,4.7,47.3,5.8,5.6,22.0*58", s);
  std::array<mbo::Measurement, 8> m;
  ASSERT_EQ(nmea_measurements(s, 0, {}, m), 3u);
  EXPECT_EQ(m[0].channel, mbo::Channel::gnss_std_lat);
  EXPECT_EQ(m[2].value, 22.0);
}

TEST(Nmea, GarbageNeverCrashes) {
  NmeaSentence s;
  const char* bad[] = {"",
                       "$",
                       "$*",
                       "$GPGGA*00",
                       "$GPGGA,nan,,,,,1*00",
                       "$GPGGA,1e5",
                       "*$GPGGA",
                       "$GPGGA,123519,9907.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,"};
  NmeaOptions lax;
  lax.require_checksum = false;
  for (const char* b : bad) EXPECT_NE(parse_nmea(b, s, lax).status, NmeaStatus::parsed) << b;
  EXPECT_EQ(parse_nmea("$GPGGA,123519,9907.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,", s, lax).reason,
            "GGA latitude: not ddmm.mm,N|S");  // 99 degrees
}

TEST(NmeaFixTime, TheAgeIsTheClocksDifferenceAcrossMidnight) {
  // 2026-11-29 12:35:19.25 UTC is 1795955719.25 s since 1970 (1795910400 at midnight)
  EXPECT_NEAR(nmea_fix_age_s(12 * 3600 + 35 * 60 + 19.10, 1795955719.25), 0.15, 1e-6);
  // a fix of 23:59:59.90 read at 00:00:00.05 the next day
  EXPECT_NEAR(nmea_fix_age_s(86399.90, 1795910400.05), 0.15, 1e-6);
  // a clock behind the receiver's: a negative age, not a day
  EXPECT_NEAR(nmea_fix_age_s(0.30, 1795910400.05), -0.25, 1e-6);
  EXPECT_NEAR(nmea_fix_age_s(86399.95, 1795910399.90), -0.05, 1e-6);
  // a leap second's 23:59:60.20, read while the system clock repeats 23:59:59 (.35)
  EXPECT_NEAR(nmea_fix_age_s(86400.20, 1795910399.35), 0.15, 1e-6);
}

TEST(NmeaFixTime, SentencesAreStampedAtTheirFixAndThoseWithoutATimeAreDropped) {
  NmeaSentence gga, vtg, rmc;
  ASSERT_EQ(parse_nmea("$GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,*47", gga).status,
            NmeaStatus::parsed);
  ASSERT_EQ(parse_nmea("$GPVTG,054.7,T,034.4,M,005.5,N,010.2,K*48", vtg).status, NmeaStatus::parsed);
  ASSERT_EQ(parse_nmea("$GPRMC,123205.00,A,5106.94085,N,01701.51689,E,0.016,,280214,,,A*7B", rmc).status,
            NmeaStatus::parsed);
  const double midnight = 1795910400, fix = 12 * 3600 + 35 * 60 + 19;  // GGA's 12:35:19
  NmeaFixTimeStamper s(1.0);
  // a VTG before any timed sentence has no epoch to take
  EXPECT_FALSE(s.stamp(vtg, 499.9, midnight + fix).has_value());
  EXPECT_EQ(s.untimed(), 1u);
  // read at monotonic 500.0 when the system clock said 0.12 s after the fix
  EXPECT_NEAR(s.stamp(gga, 500.0, midnight + fix + 0.12).value(), 500.0 - 0.12, 1e-6);
  EXPECT_TRUE(s.last_agreed());
  // VTG of the same epoch 10 ms later: the same instant
  EXPECT_NEAR(s.stamp(vtg, 500.01, midnight + fix + 0.13).value(), 500.0 - 0.12 + 0.01, 1e-6);
  // ... but not one that comes a second later with no timed sentence before it
  EXPECT_FALSE(s.stamp(vtg, 501.5, midnight + fix + 1.62).has_value());
  EXPECT_EQ(s.untimed(), 2u);
  EXPECT_EQ(s.stamped(), 1u);
  // RMC of 12:32:05, read at 12:35:20: the host clock is not on GNSS time; dropped
  EXPECT_FALSE(s.stamp(rmc, 502.0, midnight + fix + 1.0).has_value());
  EXPECT_FALSE(s.last_agreed());
  EXPECT_NEAR(s.last_age_s(), 195.0, 1e-6);
  EXPECT_EQ(s.unsynchronised(), 1u);
  // and a VTG after it has no age to take
  EXPECT_FALSE(s.stamp(vtg, 502.01, midnight + fix + 1.01).has_value());
  // a clock 0.2 s behind the receiver's (the fix "from the future"): dropped
  EXPECT_FALSE(s.stamp(gga, 503.0, midnight + fix - 0.2).has_value());
  EXPECT_EQ(s.unsynchronised(), 2u);
  // within a few ms of it (a host on GNSS time without PPS): on time
  EXPECT_NEAR(s.stamp(gga, 504.0, midnight + fix - 0.01).value(), 504.0, 1e-9);
  EXPECT_TRUE(s.last_agreed());
  EXPECT_EQ(s.stamped(), 2u);
}
