// DBC parsing and the codec, on hand-checked values and on every fixture file.
#include <cmath>
#include <cstring>
#include <iostream>
#include <random>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "mbobserver/io/dbc.hpp"
#include "mbobserver/io/dbc_codec.hpp"
#include "test_util.hpp"

using namespace mbo::io;
using ::testing::HasSubstr;

namespace {

std::vector<std::filesystem::path> fixture_dbcs() {
  auto files = mbo::test::files_with_extension(mbo::test::fixtures() / "dbc", ".dbc");
  files.push_back(mbo::test::source_dir() / "config" / "can" / "vehicle.dbc");
  return files;
}

std::vector<std::uint8_t> bytes(std::initializer_list<int> v) {
  std::vector<std::uint8_t> out;
  for (int b : v) out.push_back(static_cast<std::uint8_t>(b));
  return out;
}

double value_of(const MessageCodec& m, std::string_view signal, std::span<const std::uint8_t> d) {
  for (std::size_t i = 0; i < m.signal_count(); ++i)
    if (m.message().signals[i].name == signal) {
      DecodedSignal s;
      if (!m.decode(i, d, s)) return std::nan("");
      return s.value;
    }
  ADD_FAILURE() << "no signal " << signal;
  return 0;
}

std::size_t index_of(const MessageCodec& m, std::string_view signal) {
  for (std::size_t i = 0; i < m.signal_count(); ++i)
    if (m.message().signals[i].name == signal) return i;
  ADD_FAILURE() << "no signal " << signal;
  return 0;
}

}  // namespace

TEST(Dbc, EveryFixtureParses) {
  auto files = fixture_dbcs();
  ASSERT_GE(files.size(), 23u);
  std::size_t messages = 0, signals = 0;
  for (const auto& f : files) {
    SCOPED_TRACE(f.string());
    Dbc db;
    ASSERT_NO_THROW(db = load_dbc(f));
    messages += db.messages.size();
    for (const auto& m : db.messages) signals += m.signals.size();
  }
  EXPECT_GE(messages, 800u);
  EXPECT_GE(signals, 2800u);
}

// cantools' README example: ExampleMessage of motohawk.dbc (Motorola, signed, scaled).
TEST(Dbc, MotorolaSignedScaledByHand) {
  DbcCodec codec(load_dbc(mbo::test::fixtures() / "dbc/cantools/motohawk.dbc"));
  const MessageCodec* m = codec.find("ExampleMessage");
  ASSERT_NE(m, nullptr);
  auto d = bytes({0xc0, 0x06, 0xe0, 0, 0, 0, 0, 0});
  EXPECT_DOUBLE_EQ(value_of(*m, "Enable", d), 1.0);
  EXPECT_DOUBLE_EQ(value_of(*m, "AverageRadius", d), 3.2);
  EXPECT_NEAR(value_of(*m, "Temperature", d), 250.55, 1e-12);
  std::vector<std::uint8_t> out(8, 0);
  m->encode(index_of(*m, "Enable"), 1, out);
  m->encode(index_of(*m, "AverageRadius"), 3.2, out);
  m->encode(index_of(*m, "Temperature"), 250.55, out);
  EXPECT_EQ(out, d);
}

TEST(Dbc, IntelSignedAndWideSignalsByHand) {
  const char* text =
      "BO_ 100 M: 16 Node\n"
      " SG_ A : 4|12@1- (0.5,-1) [0|0] \"\" Vector__XXX\n"
      " SG_ B : 3|64@1+ (1,0) [0|0] \"\" Vector__XXX\n"  // straddles nine bytes
      " SG_ C : 71|64@0+ (1,0) [0|0] \"\" Vector__XXX\n";  // Motorola, byte-aligned
  DbcCodec codec(parse_dbc(text, "inline.dbc"));
  const MessageCodec* m = codec.find(100, false);
  ASSERT_NE(m, nullptr);
  EXPECT_TRUE(m->message().fd);  // 16 bytes
  std::vector<std::uint8_t> d(16, 0);
  // A = raw 0xFFE (-2) at bits 4..15: byte0 high nibble E, byte1 FF.
  d[0] = 0xE0;
  d[1] = 0xFF;
  EXPECT_DOUBLE_EQ(value_of(*m, "A", d), -2 * 0.5 - 1);
  std::vector<std::uint8_t> w(16, 0);
  m->encode_raw(index_of(*m, "B"), 0x8123456789ABCDEFull, w);
  EXPECT_EQ(w[0], 0x78);  // low 5 bits of raw (0x0F) << 3
  DecodedSignal s;
  ASSERT_TRUE(m->decode(index_of(*m, "B"), w, s));
  EXPECT_EQ(s.raw, 0x8123456789ABCDEFull);
  std::vector<std::uint8_t> c(16, 0);
  for (int i = 0; i < 8; ++i) c[8 + i] = static_cast<std::uint8_t>(0x11 * (i + 1));
  ASSERT_TRUE(m->decode(index_of(*m, "C"), c, s));
  EXPECT_EQ(s.raw, 0x1122334455667788ull);
  // A frame too short for a signal does not decode it.
  EXPECT_FALSE(m->decode(index_of(*m, "C"), std::span(c).first(8), s));
}

TEST(Dbc, IeeeFloatAndDouble) {
  DbcCodec codec(load_dbc(mbo::test::fixtures() / "dbc/cantools/floating_point.dbc"));
  const MessageCodec* m1 = codec.find("Message1");
  const MessageCodec* m2 = codec.find("Message2");
  ASSERT_TRUE(m1 && m2);
  EXPECT_EQ(m1->message().signals[0].value_type, ValueType::float64);
  std::vector<std::uint8_t> d(8);
  double x = -1234.5678e-9;
  std::memcpy(d.data(), &x, 8);
  EXPECT_EQ(value_of(*m1, "Signal1", d), x);
  float a = 3.25f, b = -1e30f;
  std::memcpy(d.data(), &a, 4);
  std::memcpy(d.data() + 4, &b, 4);
  EXPECT_EQ(value_of(*m2, "Signal1", d), 3.25);
  EXPECT_EQ(value_of(*m2, "Signal2", d), static_cast<double>(b));
}

TEST(Dbc, ExtendedIdsAndFdFromAttributes) {
  Dbc db = load_dbc(mbo::test::fixtures() / "dbc/cantools/fd_test.dbc");
  auto* ex = db.find("TestMsg_FDEx");
  auto* std_fd = db.find("TestMsg_FDStd");
  auto* plain = db.find("TestMsg_Std");
  ASSERT_TRUE(ex && std_fd && plain);
  EXPECT_TRUE(ex->extended);
  EXPECT_EQ(ex->id, 0u);
  EXPECT_TRUE(ex->fd);
  EXPECT_TRUE(std_fd->fd);
  EXPECT_FALSE(std_fd->extended);
  EXPECT_FALSE(plain->fd);
  Dbc big = load_dbc(mbo::test::fixtures() / "dbc/cantools/big_numbers.dbc");
  auto* m = big.find("TheMessage");
  ASSERT_TRUE(m);
  EXPECT_TRUE(m->extended);
  EXPECT_EQ(m->id, 0x39u);
}

// SG_MUL_VAL_: BIT_L (m8) is present for 8, 16 and 24; BIT_K (m24, no SG_MUL_VAL_) for 24.
TEST(Dbc, ExtendedMultiplexing) {
  DbcCodec codec(load_dbc(mbo::test::fixtures() / "dbc/cantools/multiplex.dbc"));
  const MessageCodec* m = codec.find("Message1");
  ASSERT_NE(m, nullptr);
  auto payload = [](int mux) {
    std::vector<std::uint8_t> d(8, 0xFF);
    d[0] = static_cast<std::uint8_t>((mux << 2) | 0x03);
    return d;
  };
  for (int mux : {8, 16, 24}) {
    auto d = payload(mux);
    EXPECT_EQ(value_of(*m, "BIT_L", d), 1.0) << mux;
    EXPECT_EQ(value_of(*m, "Multiplexor", d), mux);
  }
  EXPECT_TRUE(std::isnan(value_of(*m, "BIT_K", payload(8))));
  EXPECT_EQ(value_of(*m, "BIT_K", payload(24)), 1.0);
  EXPECT_TRUE(std::isnan(value_of(*m, "BIT_L", payload(3))));
  // select() writes the multiplexor so that the signal is present.
  std::vector<std::uint8_t> d(8, 0);
  m->select(index_of(*m, "BIT_K"), d);
  m->encode(index_of(*m, "BIT_K"), 1, d);
  EXPECT_EQ(value_of(*m, "BIT_K", d), 1.0);
  EXPECT_EQ(value_of(*m, "Multiplexor", d), 24.0);
}

TEST(Dbc, Cp1252CommentsSurviveAndNodeListsOnManyLines) {
  Dbc db = load_dbc(mbo::test::fixtures() / "dbc/cantools/cp1252.dbc");
  EXPECT_EQ(db.nodes, std::vector<std::string>{"Node1"});
  Dbc tesla = load_dbc(mbo::test::fixtures() / "dbc/opendbc/tesla_powertrain.dbc");
  ASSERT_GE(tesla.nodes.size(), 4u);
  EXPECT_EQ(tesla.nodes[0], "NEO");
  EXPECT_EQ(tesla.nodes[3], "EPAS");
  EXPECT_TRUE(tesla.warnings.empty());
}

TEST(Dbc, ValueTablesCommentsAttributes) {
  Dbc db = load_dbc(mbo::test::fixtures() / "dbc/cantools/choices.dbc");
  ASSERT_FALSE(db.messages.empty());
  const DbcSignal& s = db.messages[0].signals[0];
  EXPECT_FALSE(s.value_table.empty());
  Dbc own = load_dbc(mbo::test::source_dir() / "config/can/vehicle.dbc");
  ASSERT_NE(own.find("IMU_Gyro"), nullptr);
  EXPECT_EQ(own.find("IMU_Gyro")->cycle_time_s, 0.002);
  EXPECT_EQ(own.find("GNSS_Latitude")->cycle_time_s, 0.02);
  EXPECT_EQ(own.find("GNSS_Latitude")->signals[0].value_type, ValueType::float64);
  EXPECT_FALSE(own.find("GNSS_Latitude")->fd);
  EXPECT_THAT(own.find("IMU_Gyro")->comment, HasSubstr("500 Hz"));
}

TEST(Dbc, StrictErrorsNameFileAndLine) {
  auto msg = [](const char* text) {
    try {
      parse_dbc(text, "bad.dbc", DbcOptions{.strict = true});
    } catch (const DbcError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_THAT(msg("BO_ 1 M: 8 N\n SG_ S : 0|8@2+ (1,0) [0|0] \"\" N\n"),
              HasSubstr("bad.dbc:2: SG_: S: byte order must be @0 or @1"));
  EXPECT_THAT(msg("\n\n SG_ S : 0|8@1+ (1,0) [0|0] \"\" N\n"), HasSubstr("bad.dbc:3: SG_: signal outside a message"));
  EXPECT_THAT(msg("BO_ 1 A: 8 N\nBO_ 1 B: 8 N\n"), HasSubstr("bad.dbc:2: BO_: message id 1 (B)"));
  EXPECT_THAT(msg("BO_ 1 A: 8 N\n SG_ S m1 : 0|8@1+ (1,0) [0|0] \"\" N\n"),
              HasSubstr("bad.dbc:2: A.S: multiplexed (m1) but the message has 0 top-level"));
  EXPECT_THAT(msg("BO_ 1 A: 8 N\n SG_ S : 0|16@1+ (1,0) [0|0] \"\" N\nSIG_VALTYPE_ 1 S : 1;\n"),
              HasSubstr("bad.dbc:2: A.S: an IEEE float signal must be 32 bits long"));
  EXPECT_THAT(msg("BO_ 1 A: 8 N\n SG_ S : 505|16@1+ (1,0) [0|0] \"\" N\n"), HasSubstr("does not fit in 64 bytes"));
  EXPECT_THAT(msg("BO_ 5000 A: 8 N\n"), HasSubstr("standard id 5000 > 2047"));
  EXPECT_THAT(msg("BO_ 1 A: 65 N\n"), HasSubstr("payload size 65 > 64"));
  try {
    load_dbc("/nonexistent/x.dbc");
    ADD_FAILURE();
  } catch (const DbcError& e) {
    EXPECT_THAT(e.what(), HasSubstr("/nonexistent/x.dbc: cannot open DBC file"));
  }
}

TEST(Dbc, SkipsWhatDoesNotMatterWithWarnings) {
  Dbc db = parse_dbc(
      "VERSION \"x\"\nNS_ :\n\tCM_\n\tBA_\n\nBS_:\nBU_: A B\n"
      "BO_ 1 M: 8 A\n SG_ S : 0|8@1+ (1,0) [0|0] \"\" B\n"
      "CM_ SG_ 1 S \"multi\nline \\\"quoted\\\"\";\n"
      "CM_ SG_ 2 X \"no such message\";\n"
      "FANCY_NEW_ thing ;\n"
      "BA_ \"Broken\" BO_ ;\n"
      "VAL_ 1 S 0 \"off\" 1 \"on\" ;\n",
      "ok.dbc");
  ASSERT_EQ(db.messages.size(), 1u);
  EXPECT_EQ(db.messages[0].signals[0].comment, "multi\nline \"quoted\"");
  EXPECT_EQ(db.messages[0].signals[0].value_table.size(), 2u);
  EXPECT_EQ(db.nodes, (std::vector<std::string>{"A", "B"}));
  EXPECT_EQ(db.warnings.size(), 3u);
}

// Encoding then decoding returns the value within half a raw step, for every signal of every
// fixture DBC (and exactly the raw value for values on the raw grid).
TEST(Dbc, EncodeThenDecodeIsIdentityWithinOneStep) {
  std::mt19937_64 rng(7);
  std::size_t checked = 0;
  for (const auto& f : fixture_dbcs()) {
    DbcCodec codec(load_dbc(f));
    for (const auto& m : codec.messages()) {
      for (std::size_t i = 0; i < m.signal_count(); ++i) {
        const SignalLayout& l = m.layout(i);
        const DbcSignal& s = m.message().signals[i];
        if (s.factor == 0) continue;
        SCOPED_TRACE(f.filename().string() + " " + m.message().name + "." + s.name);
        for (int k = 0; k < 20; ++k) {
          std::vector<std::uint8_t> d(64, 0);
          m.select(i, d);
          double v;
          if (l.type == ValueType::integer) {
            std::uniform_real_distribution<double> u(m.raw_min(i), m.raw_max(i));
            double raw = std::nearbyint(u(rng));
            if (k == 0) raw = m.raw_min(i);
            if (k == 1) raw = m.raw_max(i);
            // 2^64 - 1 is not a double: stay below the rounded bound.
            if (raw >= m.raw_max(i) && l.length > 53) raw = std::nextafter(m.raw_max(i), 0.0);
            v = (k % 2 == 0) ? raw * s.factor + s.offset
                             : (raw + std::uniform_real_distribution<double>(-0.49, 0.49)(rng)) * s.factor + s.offset;
            if (k <= 1) v = raw * s.factor + s.offset;
          } else {
            v = std::uniform_real_distribution<double>(-1e6, 1e6)(rng);
          }
          ASSERT_EQ(m.encode(i, v, d), EncodeStatus::ok) << v;
          DecodedSignal out;
          ASSERT_TRUE(m.decode(i, d, out));
          const double step = std::fabs(s.factor);
          double tol =
              l.type == ValueType::float32
                  ? std::fabs(v) * 6e-8
                  : (l.type == ValueType::float64 ? std::fabs(v) * 4e-16
                                                  : 0.5 * step + 4e-16 * (std::fabs(v) + std::fabs(s.offset)) +
                                                        step * std::ldexp(std::fabs(out.value - s.offset) / step, -52));
          EXPECT_LE(std::fabs(out.value - v), tol) << "raw " << out.raw_signed();
          ++checked;
        }
      }
    }
  }
  std::cout << "[ codec    ] " << checked << " encode-then-decode round trips\n";
  EXPECT_GT(checked, 50000u);
}
