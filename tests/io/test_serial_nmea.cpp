// SerialNmeaSource over a pseudo-terminal (a real tty: termios, baud rate, hang-up), the line
// assembler byte by byte, and the "gnss" config section.
#include <fcntl.h>
#include <unistd.h>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "../support/nmea_text.hpp"
#include "mbobserver/io/serial_nmea_source.hpp"
#include "test_util.hpp"

using namespace mbo::io;
using mbo::test::clock_s;
using mbo::test::gga_aged;
using ::testing::HasSubstr;

namespace {

template <class Pred>
bool run_until(boost::asio::io_context& io, Pred done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    io.restart();
    io.run_for(std::chrono::milliseconds(5));
  }
  return true;
}

std::string gnss_config_error(const std::string& name, const std::string& json) {
  auto dir = mbo::test::scratch_dir("gnss_config");
  mbo::test::write_text(dir / name, json);
  try {
    read_gnss_serial_config(mbo::JsonReader::from_file(dir / name));
  } catch (const mbo::ConfigError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST(SerialNmea, LineAssemblerSplitsAndBoundsLines) {
  std::vector<std::string> lines;
  NmeaLineAssembler a(16, [&](std::string_view l) { lines.emplace_back(l); });
  std::string in = "$A,1*00\r\n$B,2";
  a.feed(in);
  a.feed(std::string_view(",3*00\r\n"));
  a.feed(std::string_view("0123456789abcdefXYZ\n$C*00\n"));
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], "$A,1*00\r");
  EXPECT_EQ(lines[1], "$B,2,3*00\r");
  EXPECT_EQ(lines[2], "$C*00");
  EXPECT_EQ(a.overlong(), 1u);
}

TEST(SerialNmea, ConfigSection) {
  auto dir = mbo::test::scratch_dir("gnss_config");
  mbo::test::write_text(dir / "ok.json", R"({"device": "/dev/ttyACM0", "baud": 115200, "velocity_from": "vtg"})");
  SerialNmeaOptions o = read_gnss_serial_config(mbo::JsonReader::from_file(dir / "ok.json"));
  EXPECT_EQ(o.device, "/dev/ttyACM0");
  EXPECT_EQ(o.baud, 115200u);
  EXPECT_TRUE(o.channels.velocity_from_vtg);
  EXPECT_FALSE(o.channels.position_from_rmc);
  EXPECT_TRUE(o.nmea.require_checksum);
  EXPECT_FALSE(o.stamp_fix_time);
  mbo::test::write_text(dir / "fix.json", R"({"device": "/dev/ttyACM0", "stamp": "fix_time", "max_fix_age_s": 0.5})");
  o = read_gnss_serial_config(mbo::JsonReader::from_file(dir / "fix.json"));
  EXPECT_TRUE(o.stamp_fix_time);
  EXPECT_DOUBLE_EQ(o.max_fix_age_s, 0.5);
  EXPECT_THAT(gnss_config_error("d.json", R"({"device": "/dev/x", "stamp": "utc"})"),
              HasSubstr("d.json: /stamp: unknown value \"utc\""));
  EXPECT_THAT(gnss_config_error("a.json", R"({"device": "/dev/x", "baud": 12345})"),
              HasSubstr("a.json: /baud: not a standard rate"));
  EXPECT_THAT(gnss_config_error("b.json", R"({"device": "/dev/x", "position_from": "gsa"})"),
              HasSubstr("b.json: /position_from: unknown value \"gsa\""));
  EXPECT_THAT(gnss_config_error("c.json", R"({"device": "/dev/x", "parity": "even"})"),
              HasSubstr("c.json: /parity: unknown key"));
}

TEST(SerialNmea, ReadsSentencesFromATtyAndReopensAfterHangup) {
  int master = posix_openpt(O_RDWR | O_NOCTTY);
  ASSERT_GE(master, 0);
  ASSERT_EQ(grantpt(master), 0);
  ASSERT_EQ(unlockpt(master), 0);
  // The source opens the pty through a link, as through udev's /dev/serial/by-id/ names. At the
  // hang-up the link goes first: the freed /dev/pts number may be handed at once to a test
  // running beside this one, and a reopen of the bare number would read that test's lines.
  const auto dir = mbo::test::scratch_dir("serial_hangup_" + std::to_string(::getpid()));
  const std::string link = (dir / "ttyGNSS").string();
  std::filesystem::remove(link);
  std::filesystem::create_symlink(ptsname(master), link);

  boost::asio::io_context io;
  SerialNmeaOptions o;
  o.device = link;
  o.baud = 115200;
  o.reconnect_initial_s = 0.001;
  o.reconnect_max_s = 0.004;
  std::vector<mbo::Measurement> got;
  SerialNmeaSource src(io, o, [&](std::span<const mbo::Measurement> m) { got.insert(got.end(), m.begin(), m.end()); });
  src.start();
  ASSERT_TRUE(src.health().connected) << src.health().last_error;
  const std::string text =
      "$GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,*47\r\n"
      "$GPGSV,4,4,13,39,31,170,27*40\r\n"
      "$GPRMC,123205.00,A,5106.94085,N,01701.51689,E,0.016,,280214,,,A*7B\r\n"
      "$GPGST,024603.00,3.2,6.6,4.7,47.3,5.8,5.6,22.0*58\r\n"
      "$GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,*48\r\n";  // bad checksum
  ASSERT_EQ(::write(master, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  ASSERT_TRUE(run_until(io, [&] { return src.health().lines == 5; }));
  NmeaHealth h = src.health();
  EXPECT_EQ(h.parsed, 3u);
  EXPECT_EQ(h.unsupported, 1u);
  EXPECT_EQ(h.rejected, 1u);
  EXPECT_THAT(h.last_rejected, HasSubstr("bad checksum: $GPGGA"));
  ASSERT_EQ(got.size(), 4u + 1u + 3u);  // GGA: lat, lon, alt, quality; RMC: speed; GST: 3
  EXPECT_EQ(got[0].channel, mbo::Channel::gnss_lat);
  EXPECT_DOUBLE_EQ(got[0].value, 48 + 7.038 / 60);
  EXPECT_GT(got[0].t, 0);
  EXPECT_EQ(got[4].channel, mbo::Channel::gnss_speed);
  EXPECT_EQ(got[7].channel, mbo::Channel::gnss_std_alt);

  // Hang-up: the master side goes away; the read fails, the device is gone, the source keeps
  // trying to reopen it without crashing.
  std::filesystem::remove(link);
  ::close(master);
  ASSERT_TRUE(run_until(io, [&] { return src.health().open_failures >= 2; }));
  h = src.health();
  EXPECT_EQ(h.read_errors, 1u);
  EXPECT_FALSE(h.connected);
  EXPECT_THAT(h.last_error, HasSubstr(link + ": cannot open"));
  src.stop();
}

TEST(SerialNmea, StampedAtTheFixTimeWhenTheHostClockIsOnGnssTime) {
  int master = posix_openpt(O_RDWR | O_NOCTTY);
  ASSERT_GE(master, 0);
  ASSERT_EQ(grantpt(master), 0);
  ASSERT_EQ(unlockpt(master), 0);
  boost::asio::io_context io;
  SerialNmeaOptions o;
  o.device = ptsname(master);
  o.stamp_fix_time = true;
  o.max_fix_age_s = 10;  // however slowly a loaded machine reads the line
  std::vector<mbo::Measurement> got;
  std::vector<std::string> warnings;
  SerialNmeaSource src(io, o, [&](std::span<const mbo::Measurement> m) { got.insert(got.end(), m.begin(), m.end()); });
  src.on_warning = [&](const std::string& w) { warnings.push_back(w); };
  src.start();
  ASSERT_TRUE(src.health().connected) << src.health().last_error;
  // The stamp is the line's read on the monotonic clock less (system clock - fix time): the
  // same as the monotonic clock at the fix, however long the line took to arrive.
  const double written = clock_s(CLOCK_MONOTONIC);
  std::string text = gga_aged(0.5);
  ASSERT_EQ(::write(master, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  ASSERT_TRUE(run_until(io, [&] { return src.health().lines == 1; }));
  ASSERT_EQ(got.size(), 4u);
  // the time field's 0.01 s and the two clocks' reads; at arrival it would be >= written
  EXPECT_NEAR(got[0].t, written - 0.5, 0.1);
  NmeaHealth h = src.health();
  EXPECT_EQ(h.fix_time_stamped, 1u);
  EXPECT_GT(h.last_fix_age_s, 0.4);
  EXPECT_TRUE(warnings.empty());

  // A fix 60 s old: the host clock is not on GNSS time. Dropped, counted, one warning; the
  // next one like it adds none.
  got.clear();
  text = gga_aged(60) + gga_aged(60);
  ASSERT_EQ(::write(master, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  ASSERT_TRUE(run_until(io, [&] { return src.health().lines == 3; }));
  EXPECT_TRUE(got.empty());
  h = src.health();
  EXPECT_EQ(h.fix_time_unsynchronised, 2u);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_THAT(warnings[0], HasSubstr("is the host clock on GNSS time?"));
  EXPECT_THAT(h.last_error, HasSubstr("dropped while it lasts"));

  // agreeing again is told once
  text = gga_aged(0.5);
  ASSERT_EQ(::write(master, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  ASSERT_TRUE(run_until(io, [&] { return src.health().lines == 4; }));
  EXPECT_EQ(got.size(), 4u);
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_THAT(warnings[1], HasSubstr("stamped at their own time again"));
  src.stop();
  ::close(master);
}
