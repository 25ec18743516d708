// candump -l and Vector ASC: our readers against python3-can on the fixture ASC logs and on
// generated candump logs; our writer read back by python-can; bad input never fatal.
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <iostream>
#include <random>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "mbobserver/core/json_reader.hpp"
#include "mbobserver/io/asc.hpp"
#include "mbobserver/io/candump.hpp"
#include "mbobserver/io/log_reader.hpp"
#include "test_util.hpp"

using namespace mbo::io;
using nlohmann::json;
using ::testing::HasSubstr;

namespace {

std::string hex(const CanFrame& f) {
  static const char* k = "0123456789abcdef";
  std::string s;
  if (f.remote || f.error) return s;
  for (std::size_t i = 0; i < f.len; ++i) {
    s += k[f.data[i] >> 4];
    s += k[f.data[i] & 15];
  }
  return s;
}

json python_can_read(const std::string& tag, const std::vector<std::filesystem::path>& files) {
  auto dir = mbo::test::scratch_dir(tag);
  std::string cmd =
      mbo::test::python_command(mbo::test::source_dir() / "tests/io/oracles/python_can_read.py", {dir / "reply.json"});
  for (const auto& f : files) {
    cmd.push_back(' ');
    cmd.append(mbo::test::quote(f));
  }
  auto r = mbo::test::run_command(cmd);
  EXPECT_EQ(r.code, 0) << r.output;
  return json::parse(mbo::test::read_text(dir / "reply.json"));
}

// Compares one of our frames with one of python-can's, field by field, in the terms
// python-can keeps (it drops the class and payload of error frames).
std::string differences(const CanFrame& f, const json& p, const json& channel) {
  std::string d;
  auto check = [&](bool ok, const std::string& what) {
    if (!ok) d += " " + what;
  };
  check(f.t == p["t"].get<double>(), "t");
  check(f.error == p["error"].get<bool>(), "error");
  if (!channel.is_null() && !p["channel"].is_null()) check(channel == p["channel"], "channel");
  if (f.error) return d;
  check(f.id == p["id"].get<std::uint32_t>(), "id");
  check(f.extended == p["extended"].get<bool>(), "extended");
  check(f.remote == p["remote"].get<bool>(), "remote");
  // CAN FD has no remote frames: python-can marks every ASC "CANFD" line FD, we keep the
  // Flags field's verdict (a classic remote frame logged on an FD channel).
  check(f.fd == (p["fd"].get<bool>() && !p["remote"].get<bool>()), "fd");
  check(f.brs == p["brs"].get<bool>(), "brs");
  check(f.esi == p["esi"].get<bool>(), "esi");
  if (f.remote)
    check(f.len == p["dlc"].get<int>(), "dlc");
  else
    check(hex(f) == p["data"].get<std::string>(), "data");
  return d;
}

struct Read {
  std::vector<CanFrame> frames;
  std::vector<std::string> interfaces;
  LogStats stats;
  std::vector<LogProblem> problems;
};

Read read_all(LogReader& r) {
  Read out;
  CanFrame f;
  while (r.next(f)) out.frames.push_back(f);
  out.interfaces = r.interfaces();
  out.stats = r.stats();
  out.problems = r.problems();
  return out;
}

Read read_file(const std::filesystem::path& p) {
  LogReader r(p);
  return read_all(r);
}

Read read_text(const std::string& text) {
  LogReader r(text, "text.log");
  return read_all(r);
}

// Random frames of every kind candump writes.
std::vector<std::pair<CanFrame, std::string>> random_frames(std::size_t n, std::uint64_t seed) {
  static const std::vector<std::string> names = {"can0", "vcan-long_name.1", "x", "slcan15charname", "can1"};
  static const int fd_lengths[] = {0, 1, 5, 8, 12, 16, 20, 24, 32, 48, 64};
  std::mt19937_64 rng(seed);
  std::vector<std::pair<CanFrame, std::string>> out;
  std::uint64_t us = 1'600'000'000'000'000ull;
  for (std::size_t i = 0; i < n; ++i) {
    CanFrame f;
    us += rng() % 5000;
    f.t = static_cast<double>(us) / 1e6;
    switch (rng() % 6) {
      case 0:
      case 1:
        f.id = static_cast<std::uint32_t>(rng() % 0x800);
        f.len = static_cast<std::uint8_t>(rng() % 9);
        break;
      case 2:
        f.extended = true;
        f.id = static_cast<std::uint32_t>(rng() % 0x20000000);
        f.len = static_cast<std::uint8_t>(rng() % 9);
        break;
      case 3:
        f.remote = true;
        f.extended = rng() % 2;
        f.id = static_cast<std::uint32_t>(rng() % (f.extended ? 0x20000000 : 0x800));
        f.len = static_cast<std::uint8_t>(rng() % 9);
        break;
      case 4:
        f.fd = true;
        f.brs = rng() % 2;
        f.esi = rng() % 2;
        f.extended = rng() % 2;
        f.id = static_cast<std::uint32_t>(rng() % (f.extended ? 0x20000000 : 0x800));
        f.len = static_cast<std::uint8_t>(fd_lengths[rng() % 11]);
        break;
      case 5:
        // Error frames python-can recognises carry CAN_ERR_BUSERROR (0x80).
        f.error = true;
        f.id = 0x80 | static_cast<std::uint32_t>(rng() % 0x100);
        f.len = 8;
        break;
    }
    if (!f.remote)
      for (std::size_t b = 0; b < f.len; ++b) f.data[b] = static_cast<std::uint8_t>(rng());
    out.emplace_back(f, names[rng() % names.size()]);
  }
  return out;
}

}  // namespace

TEST(Candump, ParsesEveryKindOfLine) {
  CandumpRecord r;
  ASSERT_EQ(parse_candump_line("(1436509052.249713) can0 123#DEADBEEF", r), "");
  EXPECT_EQ(r.t, 1436509052.249713);
  EXPECT_EQ(r.interface, "can0");
  EXPECT_EQ(r.frame.id, 0x123u);
  EXPECT_FALSE(r.frame.extended);
  EXPECT_EQ(r.frame.len, 4);
  EXPECT_EQ(r.frame.data[0], 0xDE);
  ASSERT_EQ(parse_candump_line("(0.000001)   vcan12 1F334455#11.22.33 \r\n", r), "");
  EXPECT_TRUE(r.frame.extended);
  EXPECT_EQ(r.frame.id, 0x1F334455u);
  EXPECT_EQ(r.frame.len, 3);
  ASSERT_EQ(parse_candump_line("(1.5) can0 7FF#R5", r), "");
  EXPECT_TRUE(r.frame.remote);
  EXPECT_EQ(r.frame.len, 5);
  ASSERT_EQ(parse_candump_line("(1.5) can0 00000123##3" + std::string(24, 'A'), r), "");
  EXPECT_TRUE(r.frame.fd && r.frame.brs && r.frame.esi && r.frame.extended);
  EXPECT_EQ(r.frame.len, 12);
  ASSERT_EQ(parse_candump_line("(1.5) can0 20000080#0000080000000000", r), "");
  EXPECT_TRUE(r.frame.error);
  EXPECT_EQ(r.frame.id, 0x80u);
  ASSERT_EQ(parse_candump_line("(1.5) can0 123#1122334455667788_C", r), "");  // raw DLC 12
  EXPECT_EQ(r.frame.len, 8);
  ASSERT_EQ(parse_candump_line("(1.5) can0 123#11 T", r), "");  // python-can's direction
}

TEST(Candump, RejectsBadLinesWithTheField) {
  CandumpRecord r;
  // Near misses of candump's fixed layout "(%010lu.%06lu)".
  EXPECT_EQ(parse_candump_line("(16000000x0.000000) can0 123#00", r), "timestamp: not a plain decimal number");
  EXPECT_EQ(parse_candump_line("(1600000000.0000x0) can0 123#00", r), "timestamp: not a plain decimal number");
  EXPECT_EQ(parse_candump_line("(1600000000:000000) can0 123#00", r), "timestamp: not a plain decimal number");
  EXPECT_EQ(parse_candump_line("(1600000000.000000)can0 123#00", r), "interface: expected a blank after the timestamp");
  ASSERT_EQ(parse_candump_line("(9999999999.999999) can0 123#00", r), "");  // above 2^53 us
  EXPECT_EQ(r.t, 9999999999.999999);
  EXPECT_EQ(parse_candump_line("(nan) can0 123#00", r), "timestamp: not a plain decimal number");
  EXPECT_EQ(parse_candump_line("(-1.0) can0 123#00", r), "timestamp: not a plain decimal number");
  EXPECT_EQ(parse_candump_line("(1e9) can0 123#00", r), "timestamp: not a plain decimal number");
  EXPECT_EQ(parse_candump_line("(1.0 can0 123#00", r), "timestamp: no closing ')'");
  EXPECT_EQ(parse_candump_line("(1.0) can0 1234#00", r), "id: candump writes 3 or 8 hex digits");
  EXPECT_EQ(parse_candump_line("(1.0) can0 12G#00", r), "id: not hexadecimal");
  EXPECT_EQ(parse_candump_line("(1.0) can0 800#00", r), "id: 11-bit id above 0x7FF");
  EXPECT_EQ(parse_candump_line("(1.0) can0 123#0", r), "data: odd number of hex digits");
  EXPECT_EQ(parse_candump_line("(1.0) can0 123#0Z", r), "data: not hexadecimal");
  EXPECT_EQ(parse_candump_line("(1.0) can0 123#112233445566778899", r), "data: more than 8 bytes in a classic frame");
  EXPECT_EQ(parse_candump_line("(1.0) can0 123##0112233445566778899", r), "data: not a CAN FD payload length");
  EXPECT_EQ(parse_candump_line("(1.0) can0 123#R9", r), "data: remote frame DLC must be 0..8");
  EXPECT_EQ(parse_candump_line("(1.0) can0 123#00 extra", r), "unexpected text after the frame");
  EXPECT_EQ(parse_candump_line("(1.0) can0", r), "frame: missing");
  EXPECT_EQ(parse_candump_line("garbage", r), "timestamp: line does not start with '('");
}

TEST(Candump, WriterRoundTripsThroughOurReader) {
  auto frames = random_frames(2000, 1);
  std::string text;
  for (const auto& [f, name] : frames) text += format_candump_line(f, name);
  Read got = read_text(text);
  ASSERT_EQ(got.frames.size(), frames.size());
  EXPECT_EQ(got.stats.bad_lines, 0u);
  for (std::size_t i = 0; i < frames.size(); ++i) {
    const CanFrame& a = frames[i].first;
    const CanFrame& b = got.frames[i];
    EXPECT_EQ(got.interfaces[b.channel], frames[i].second);
    EXPECT_NEAR(a.t, b.t, 5e-7);
    EXPECT_EQ(a.id, b.id);
    EXPECT_EQ(a.extended, b.extended);
    EXPECT_EQ(a.remote, b.remote);
    EXPECT_EQ(a.error, b.error);
    EXPECT_EQ(a.fd, b.fd);
    EXPECT_EQ(a.len, b.len);
    EXPECT_EQ(hex(a), hex(b));
  }
}

// The generated logs (every frame kind, odd interface names, candump's column padding) and
// the fixture ASC logs: same frames as python-can reads. Our writer's output: python-can
// reads back exactly the frames written.
TEST(Logs, SameFramesAsPythonCan) {
  auto dir = mbo::test::scratch_dir("logs_python_can");
  auto frames = random_frames(5000, 2);
  {
    std::FILE* out = std::fopen((dir / "written.log").c_str(), "w");
    CandumpWriter w(out);
    for (const auto& [f, name] : frames) ASSERT_TRUE(w.write(f, name));
    std::fclose(out);
  }
  // candump pads interface names to a common width; python-can writes " R"/" T".
  std::string padded;
  for (std::size_t i = 0; i < 300; ++i) {
    std::string line = format_candump_line(frames[i].first, frames[i].second);
    auto sp = line.find(' ');
    line.insert(sp + 1, std::string(16 - frames[i].second.size(), ' '));
    line.pop_back();
    line += (frames[i].first.error ? "\n" : (i % 2 ? " R\n" : " T\n"));
    padded += line;
  }
  mbo::test::write_text(dir / "padded.log", padded);

  std::vector<std::filesystem::path> files = {dir / "written.log", dir / "padded.log"};
  for (const auto& f : mbo::test::files_with_extension(mbo::test::fixtures() / "asc", ".asc")) files.push_back(f);
  json reply = python_can_read("logs_python_can", files);
  ASSERT_EQ(reply["files"].size(), files.size());

  std::size_t compared = 0;
  for (std::size_t fi = 0; fi < files.size(); ++fi) {
    SCOPED_TRACE(files[fi].string());
    Read ours = read_file(files[fi]);
    json theirs = reply["files"][fi]["frames"];
    if (files[fi].filename() == "single_frame.asc") {
      // Its one line is "d 40" followed by 64 bytes: DLC 0x40 is no classic DLC. python-can
      // keeps 8 of the 64 bytes under DLC 64; we reject the line and say why.
      ASSERT_EQ(theirs.size(), 1u);
      EXPECT_EQ(theirs[0]["dlc"], 64);
      EXPECT_EQ(ours.frames.size(), 0u);
      ASSERT_EQ(ours.problems.size(), 1u);
      EXPECT_EQ(ours.problems[0].line, 6u);
      EXPECT_EQ(ours.problems[0].message, "asc: dlc: not a classic CAN DLC (0..F)");
      continue;
    }
    EXPECT_EQ(ours.stats.bad_lines, 0u);
    ASSERT_EQ(ours.frames.size(), theirs.size());
    const bool asc = files[fi].extension() == ".asc";
    for (std::size_t i = 0; i < theirs.size(); ++i) {
      const CanFrame& f = ours.frames[i];
      json channel = asc ? json(f.channel) : json(ours.interfaces[f.channel]);
      std::string d = differences(f, theirs[i], channel);
      EXPECT_EQ(d, "") << "frame " << i << ": python-can " << theirs[i].dump();
      ++compared;
    }
    if (files[fi].filename() == "written.log") {
      // What python-can reads back is what we wrote.
      for (std::size_t i = 0; i < frames.size(); ++i) {
        const auto& [f, name] = frames[i];
        EXPECT_EQ(theirs[i]["t"].get<double>(), std::round(f.t * 1e6) / 1e6);
        EXPECT_EQ(differences(ours.frames[i], theirs[i], json(name)), "");
        if (!f.error) {
          EXPECT_EQ(theirs[i]["id"], f.id);
          EXPECT_EQ(theirs[i]["data"], hex(f));
        }
      }
    }
  }
  std::cout << "[ python-can ] " << files.size() << " logs, " << compared << " frames compared with python-can\n";
  EXPECT_GT(compared, 6500u);
}

TEST(Asc, RelativeTimesDecimalBaseAndSkippedEvents) {
  Read r = read_text(
      "date Mon Jan 1 00:00:00.000 2024\n"
      "base dec  timestamps relative\n"
      "no internal events logged\n"
      "Begin Triggerblock Mon Jan 1 00:00:00.000 2024\n"
      "   0.500000 Start of measurement\n"
      "   0.250000 1  291             Rx   d 2 255 16\n"
      "   0.250000 CAN 1 Status:chip status error active\n"
      "   0.125000 2  100x            Tx   r 3\n"
      "   0.100000 1  5 TxRq d 1 0\n"
      "   0.100000 1  Statistic: D 0 R 0 XD 0 XR 0 E 0 O 0 B 0.00%\n"
      "End TriggerBlock\n");
  ASSERT_EQ(r.frames.size(), 2u);
  const double t0 = *parse_asc_date("Mon Jan 1 00:00:00.000 2024");  // the log's clock: local time
  EXPECT_DOUBLE_EQ(r.frames[0].t, t0 + 0.75);
  EXPECT_EQ(r.frames[0].id, 291u);
  EXPECT_EQ(r.frames[0].data[0], 255);
  EXPECT_EQ(r.frames[0].data[1], 16);
  EXPECT_DOUBLE_EQ(r.frames[1].t, t0 + 1.125);
  EXPECT_TRUE(r.frames[1].extended && r.frames[1].remote);
  EXPECT_EQ(r.frames[1].id, 100u);
  EXPECT_EQ(r.frames[1].channel, 1);
  EXPECT_EQ(r.frames[1].len, 3);
  EXPECT_EQ(r.stats.bad_lines, 0u);
  EXPECT_EQ(r.stats.skipped_lines, 9u);
}

TEST(Asc, FdFlagsTellClassicFromFd) {
  AscParser p;
  CanFrame f;
  ASSERT_EQ(p.parse_line("  1.0 CANFD 2 Rx 123 Name 1 0 9 12 " + std::string("01 02 03 04 05 06 07 08 09 0a 0b 0c") +
                             " 0 0 3000 0",
                         f),
            AscParser::Kind::frame);
  EXPECT_TRUE(f.fd && f.brs);
  EXPECT_EQ(f.len, 12);
  EXPECT_EQ(f.channel, 1);
  ASSERT_EQ(p.parse_line("  1.0 CANFD 1 Rx 7ff 0 0 8 8 01 02 03 04 05 06 07 08 0 0 0 0", f), AscParser::Kind::frame);
  EXPECT_FALSE(f.fd);  // no EDL flag: a classic frame on an FD channel
  EXPECT_EQ(p.parse_line("  1.0 CANFD 1 Rx 7ff 0 0 8 8 01 02 03", f), AscParser::Kind::bad);
  EXPECT_EQ(p.error(), "data: missing or invalid byte");
}

TEST(LogReader, BadInputIsCountedWithLineNumbersNeverFatal) {
  std::string text =
      "(1.000000) can0 123#00\n"
      "(nan) can0 123#00\n"
      "(2.000000) can0 123#01\n"
      "(3.000000) can0 123#GG\n"
      "(1.500000) can0 123#11\n"  // goes back
      "\x01\x02\xff\xfe garbage\n" +
      std::string("(4.0) can0 123#") + std::string(10000, 'A') + "\n" +
      "(5.000000) can0 123#112233445566778899\n"
      "\n"
      "(6.000000) can0 12345678##F00\n"
      "(7.000000) can0 123#22";  // no final newline
  Read r = read_text(text);
  ASSERT_EQ(r.frames.size(), 5u);
  EXPECT_EQ(r.frames[2].t, 1.5);
  EXPECT_TRUE(r.frames[3].fd && r.frames[3].brs && r.frames[3].esi);
  EXPECT_EQ(r.frames[4].t, 7.0);
  EXPECT_EQ(r.stats.bad_lines, 5u);
  EXPECT_EQ(r.stats.backwards, 1u);
  EXPECT_EQ(r.stats.lines, 11u);
  std::vector<std::pair<std::uint64_t, std::string>> expected = {
      {2, "candump: timestamp: not a plain decimal number"},
      {4, "candump: data: not hexadecimal"},
      {5, "timestamp goes back by 0.5 s"},
      {6, "candump: timestamp: line does not start with '('"},
      {7, "line longer than 4096 bytes"},
      {8, "candump: data: more than 8 bytes in a classic frame"},
  };
  ASSERT_GE(r.problems.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(r.problems[i].line, expected[i].first);
    EXPECT_EQ(r.problems[i].message, expected[i].second);
  }
}

TEST(LogReader, OverlongLinesInAFileAreSkippedWhateverTheBufferSize) {
  auto dir = mbo::test::scratch_dir("log_overlong");
  std::string text = "(1.000000) can0 123#00\n(2.0) can0 " + std::string(300000, 'x') + "\n(3.000000) can0 123#01\n" +
                     std::string(200000, 'y');
  mbo::test::write_text(dir / "a.log", text);
  Read r = read_file(dir / "a.log");
  ASSERT_EQ(r.frames.size(), 2u);
  EXPECT_EQ(r.frames[1].t, 3.0);
  EXPECT_EQ(r.stats.bad_lines, 2u);
  ASSERT_EQ(r.problems.size(), 2u);
  EXPECT_EQ(r.problems[0].line, 2u);
  EXPECT_EQ(r.problems[1].line, 4u);
}

TEST(LogReader, UnknownOrMissingFileIsAConfigError) {
  auto dir = mbo::test::scratch_dir("log_unknown");
  mbo::test::write_text(dir / "x.log", "hello\nworld\n");
  try {
    LogReader r(dir / "x.log");
    ADD_FAILURE();
  } catch (const mbo::ConfigError& e) {
    EXPECT_THAT(e.what(), HasSubstr("x.log: not a candump -l or Vector ASC log"));
  }
  try {
    LogReader r(dir / "missing.log");
    ADD_FAILURE();
  } catch (const mbo::ConfigError& e) {
    EXPECT_THAT(e.what(), HasSubstr("missing.log: cannot open: No such file or directory"));
  }
}

// The fast timestamp path (integer / power of ten) gives the same double as a correctly
// rounded decimal conversion, which is what python-can's float() gives.
TEST(Candump, TimestampsAreCorrectlyRounded) {
  std::mt19937_64 rng(3);
  CandumpRecord r;
  for (int i = 0; i < 200000; ++i) {
    char ts[48];
    const unsigned long long sec = rng() % 10'000'000'000ull;
    const int digits = static_cast<int>(rng() % 10);
    unsigned long long frac = rng() % 1'000'000'000ull;
    int n;
    if (i % 2 == 0) {  // candump's own layout (the parser's SWAR path)
      n = std::snprintf(ts, sizeof ts, "%010llu.%06llu", sec, frac % 1'000'000);
    } else {
      n = std::snprintf(ts, sizeof ts, "%llu", sec);
    }
    if (i % 2 == 1 && digits > 0) {
      for (int d = 9; d > digits; --d) frac /= 10;
      n += std::snprintf(ts + n, sizeof ts - static_cast<std::size_t>(n), ".%0*llu", digits, frac);
    }
    double expected = 0;
    std::from_chars(ts, ts + n, expected);
    std::string line = "(";
    line.append(ts, static_cast<std::size_t>(n));
    line.append(") can0 123#00");
    ASSERT_EQ(parse_candump_line(line, r), "") << line;
    ASSERT_EQ(r.t, expected) << line;
  }
}

TEST(Asc, BadLinesAreCountedWithLineNumbers) {
  Read r = read_text(
      "date Mon Jan 1 00:00:00.000 2024\n"
      "base hex  timestamps absolute\n"
      "   1.000000 1  123             Rx   d 2 01 02\n"
      "   nan 1  123             Rx   d 2 01 02\n"
      "   2.000000 1  12Z             Rx   d 2 01 02\n"
      "   3.000000 1  123             Rx   d 2 01 GG\n"
      "   4.000000 1  123             Rx   d 10 01 02\n"
      "   5.000000 1  123             Rx   d 8 01 02\n"
      "   6.000000 1  800             Rx   d 1 01\n"
      "   7.000000 0  123             Rx   d 1 01\n"
      "complete garbage \xff\xfe\n"
      "   0.500000 1  123             Rx   d 1 07\n");
  ASSERT_EQ(r.frames.size(), 2u);
  EXPECT_EQ(r.frames[1].t, *parse_asc_date("Mon Jan 1 00:00:00.000 2024") + 0.5);
  EXPECT_EQ(r.stats.backwards, 1u);
  EXPECT_EQ(r.stats.bad_lines, 8u);
  std::vector<std::pair<std::uint64_t, std::string>> expected = {
      {4, "asc: not an ASC header, comment or event line"},
      {5, "asc: id: not a valid CAN identifier"},
      {6, "asc: data: missing or invalid byte"},
      {7, "asc: dlc: not a classic CAN DLC (0..F)"},
      {8, "asc: data: missing or invalid byte"},
      {9, "asc: id: not a valid CAN identifier"},
      {10, "asc: channel: not in 1..256"},
      {11, "asc: not an ASC header, comment or event line"},
      {12, "timestamp goes back by 0.5 s"},
  };
  ASSERT_EQ(r.problems.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(r.problems[i].line, expected[i].first);
    EXPECT_EQ(r.problems[i].message, expected[i].second);
  }
}

// The start of an ASC log ("date", "Begin Triggerblock") is kept in the log clock (issue 20).
TEST(Asc, DatesAreReadAsTheWriterWroteThem) {
  const char* tz = std::getenv("TZ");
  const std::string saved = tz ? tz : "";
  ::setenv("TZ", "UTC", 1);
  ::tzset();
  EXPECT_EQ(*parse_asc_date("Sat Sep 30 15:06:13.191 2017"), 1506783973 + 0.191);
  EXPECT_EQ(*parse_asc_date("Sam Sep 30 15:06:13.191 2017"), 1506783973 + 0.191);  // German, as CANoe writes
  EXPECT_EQ(*parse_asc_date("Tue May 27 04:09:35.000 pm 2014"), 1401206975.0);  // 12 h, as python-can writes
  EXPECT_EQ(*parse_asc_date("Mon Nov 14 12:00:00 AM 2022"), 1668384000.0);  // midnight
  EXPECT_EQ(*parse_asc_date("Mi Dez 31 23:59:59.999999 2025"), 1767225599 + 0.999999);
  EXPECT_FALSE(parse_asc_date("Sat Foo 30 15:06:13.191 2017"));
  EXPECT_FALSE(parse_asc_date("Sat Sep 30 25:06:13 2017"));
  EXPECT_FALSE(parse_asc_date(""));
  if (tz)
    ::setenv("TZ", saved.c_str(), 1);
  else
    ::unsetenv("TZ");
  ::tzset();
}

// A candump log converted by python-can's logconvert (log2asc: the ASCWriter's "Begin
// Triggerblock" date holds the first frame's time to the millisecond, the frames' times count
// from it) reads back with the candump log's times, and with python-can's own reading of it.
TEST(Asc, Log2AscOfACandumpLogKeepsItsTimes) {
  auto dir = mbo::test::scratch_dir("log2asc");
  std::string log;
  std::vector<double> times;
  for (int i = 0; i < 50; ++i) {
    CanFrame f;
    f.t = 1700000000.002 + i * 0.010017;  // the first on a whole millisecond
    f.id = 0x100 + static_cast<std::uint32_t>(i % 3);
    f.len = 2;
    f.data[0] = static_cast<std::uint8_t>(i);
    log += format_candump_line(f, "can0");
    times.push_back(std::round(f.t * 1e6) / 1e6);  // as candump prints it
  }
  mbo::test::write_text(dir / "in.log", log);
  auto conv = mbo::test::run_command("cd " + mbo::test::quote(dir) +
                                     " && /usr/bin/python3 -m can.logconvert in.log out.asc 2>&1");
  ASSERT_EQ(conv.code, 0) << conv.output;
  Read ours = read_file(dir / "out.asc");
  ASSERT_EQ(ours.frames.size(), times.size());
  auto r = mbo::test::run_command(mbo::test::python_command(
      mbo::test::source_dir() / "tests/io/oracles/python_can_read.py", {dir / "py.json", dir / "out.asc"}));
  ASSERT_EQ(r.code, 0) << r.output;
  const json theirs = json::parse(mbo::test::read_text(dir / "py.json"))["files"][0]["frames"];
  ASSERT_EQ(theirs.size(), times.size());
  for (std::size_t i = 0; i < times.size(); ++i) {
    EXPECT_NEAR(ours.frames[i].t, times[i], 1e-6) << i;
    EXPECT_EQ(ours.frames[i].t, theirs[i]["t"].get<double>()) << i;
  }
}
