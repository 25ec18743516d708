// Forgiving DBC loading (issue 20): the vendor quirks real production files carry are read
// with a warning, a malformed entry is left out with one warning naming file, line and reason,
// and the rest decodes as a reference decoder (python3-canmatrix) decodes the same file with
// the quirks written out properly. Strict loading refuses each of them as before.
#include <random>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "mbobserver/io/dbc.hpp"
#include "mbobserver/io/dbc_codec.hpp"
#include "test_util.hpp"

using namespace mbo::io;
using nlohmann::json;
using ::testing::HasSubstr;

namespace {

// 0x18FF0400 written without bit 31; a lone "m"; a signal with byte order
// @2; a message without its ':'; and statements about the entries left out.
const char* kQuirky =
    "VERSION \"\"\n"
    "BU_: ECU OBS\n"
    "BO_ 256 Plain: 8 ECU\n"
    " SG_ Speed : 0|16@1+ (0.01,0) [0|655.35] \"km/h\" OBS\n"
    " SG_ Angle : 16|16@1- (0.1,0) [-3276.8|3276.7] \"deg\" OBS\n"
    "BO_ 419365888 NoBit31: 8 ECU\n"
    " SG_ Torque : 0|16@1- (0.5,0) [-16384|16383.5] \"Nm\" OBS\n"
    " SG_ Gear : 16|4@1+ (1,0) [0|15] \"\" OBS\n"
    "BO_ 512 LoneM: 8 ECU\n"
    " SG_ Mux m : 0|8@1+ (1,0) [0|255] \"\" OBS\n"
    " SG_ A m1 : 8|16@1+ (0.1,0) [0|6553.5] \"bar\" OBS\n"
    " SG_ B m2 : 8|16@1- (1,0) [-32768|32767] \"Nm\" OBS\n"
    "BO_ 768 Broken: 8 ECU\n"
    " SG_ Good : 0|8@1+ (1,0) [0|255] \"\" OBS\n"
    " SG_ Bad : 8|8@2+ (1,0) [0|255] \"\" OBS\n"
    "BO_ 769 BrokenMsg 8 ECU\n"
    " SG_ X : 0|8@1+ (1,0) [0|255] \"\" OBS\n"
    "CM_ BO_ 769 \"a comment of the message left out\";\n"
    "CM_ SG_ 768 Bad \"a comment of the signal left out\";\n"
    "VAL_ 768 Bad 0 \"zero\" ;\n";

// The same bus as a careful writer would put it: bit 31 set, "M", the broken entries absent.
const char* kClean =
    "VERSION \"\"\n"
    "BU_: ECU OBS\n"
    "BO_ 256 Plain: 8 ECU\n"
    " SG_ Speed : 0|16@1+ (0.01,0) [0|655.35] \"km/h\" OBS\n"
    " SG_ Angle : 16|16@1- (0.1,0) [-3276.8|3276.7] \"deg\" OBS\n"
    "BO_ 2566849536 NoBit31: 8 ECU\n"
    " SG_ Torque : 0|16@1- (0.5,0) [-16384|16383.5] \"Nm\" OBS\n"
    " SG_ Gear : 16|4@1+ (1,0) [0|15] \"\" OBS\n"
    "BO_ 512 LoneM: 8 ECU\n"
    " SG_ Mux M : 0|8@1+ (1,0) [0|255] \"\" OBS\n"
    " SG_ A m1 : 8|16@1+ (0.1,0) [0|6553.5] \"bar\" OBS\n"
    " SG_ B m2 : 8|16@1- (1,0) [-32768|32767] \"Nm\" OBS\n"
    "BO_ 768 Broken: 8 ECU\n"
    " SG_ Good : 0|8@1+ (1,0) [0|255] \"\" OBS\n";

std::vector<std::string> warnings(const Dbc& db) {
  std::vector<std::string> out;
  for (const auto& w : db.warnings) out.push_back(w.text());
  return out;
}

std::string strict_error(const std::string& text) {
  try {
    parse_dbc(text, "q.dbc", DbcOptions{.strict = true});
  } catch (const DbcError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST(DbcForgiving, QuirksAndBrokenEntriesLoadWithOneWarningEach) {
  Dbc db = parse_dbc(kQuirky, "q.dbc");
  const auto w = warnings(db);
  ASSERT_EQ(w.size(), 4u) << ::testing::PrintToString(w);
  EXPECT_THAT(w[0], HasSubstr("q.dbc:6: BO_: id 419365888 of NoBit31 is > 2047 without bit 31: read as the 29-bit "
                              "id 0x18FF0400"));
  EXPECT_THAT(w[1], HasSubstr("q.dbc:10: SG_: Mux: lone multiplexer indicator \"m\" read as \"M\""));
  EXPECT_THAT(w[2], HasSubstr("q.dbc:15: SG_: Bad: byte order must be @0 or @1: signal Broken.Bad left out"));
  EXPECT_THAT(w[3], HasSubstr("q.dbc:16: BO_: expected ':' after the message name: message BrokenMsg and its "
                              "signals left out"));
  ASSERT_EQ(db.messages.size(), 4u);
  const DbcMessage* nb = db.find("NoBit31");
  ASSERT_NE(nb, nullptr);
  EXPECT_TRUE(nb->extended);
  EXPECT_EQ(nb->id, 0x18FF0400u);
  EXPECT_TRUE(db.find("LoneM")->signals[0].is_multiplexor);
  EXPECT_EQ(db.find("Broken")->signals.size(), 1u);
  EXPECT_EQ(db.find("BrokenMsg"), nullptr);
  ASSERT_NE(db.skipped_entry("BrokenMsg"), nullptr);
  EXPECT_EQ(db.skipped_entry("BrokenMsg")->line, 16u);
  ASSERT_NE(db.skipped_entry("Broken", "Bad"), nullptr);
  EXPECT_EQ(db.skipped_entry("Broken", "Good"), nullptr);
}

TEST(DbcForgiving, StrictRefusesEachQuirkAndBrokenEntry) {
  const std::string head = "VERSION \"\"\nBU_: ECU\n";
  EXPECT_THAT(strict_error(head + "BO_ 419365888 NoBit31: 8 ECU\n"),
              HasSubstr("q.dbc:3: BO_: standard id 419365888 > 2047 (29-bit ids have bit 31 set"));
  EXPECT_THAT(strict_error(head + "BO_ 1 L: 8 ECU\n SG_ Mux m : 0|8@1+ (1,0) [0|255] \"\" OBS\n"),
              HasSubstr("q.dbc:4: SG_: bad multiplexer indicator \"m\" for Mux"));
  EXPECT_THAT(strict_error(head + "BO_ 1 B: 8 ECU\n SG_ Bad : 8|8@2+ (1,0) [0|255] \"\" OBS\n"),
              HasSubstr("q.dbc:4: SG_: Bad: byte order must be @0 or @1"));
  EXPECT_THAT(strict_error(head + "BO_ 769 BrokenMsg 8 ECU\n"), HasSubstr("q.dbc:3: BO_: expected ':'"));
  EXPECT_EQ(strict_error(kClean), "no error");
}

TEST(DbcForgiving, LayoutProblemsLeaveOutTheSignalAndItsDependents) {
  Dbc db = parse_dbc(
      "BO_ 1 A: 8 N\n SG_ F : 0|16@1+ (1,0) [0|0] \"\" N\n SG_ S m1 : 16|8@1+ (1,0) [0|0] \"\" N\n"
      " SG_ K : 24|8@1+ (1,0) [0|0] \"\" N\nSIG_VALTYPE_ 1 F : 1;\n",
      "l.dbc");
  // F is a 16-bit float (impossible); S is multiplexed without a multiplexor; K stays.
  ASSERT_EQ(db.messages.size(), 1u);
  ASSERT_EQ(db.messages[0].signals.size(), 1u);
  EXPECT_EQ(db.messages[0].signals[0].name, "K");
  const auto w = warnings(db);
  ASSERT_EQ(w.size(), 2u) << ::testing::PrintToString(w);
  EXPECT_THAT(w[0], HasSubstr("l.dbc:2: A.F: an IEEE float signal must be 32 bits long, not 16: signal left out"));
  EXPECT_THAT(w[1], HasSubstr("l.dbc:3: A.S: multiplexed (m1) but the message has 0 top-level"));
}

// The messages a forgiving load keeps decode as canmatrix decodes the clean file.
TEST(DbcForgiving, AcceptedMessagesDecodeLikeCanmatrix) {
  auto dir = mbo::test::scratch_dir("dbc_forgiving");
  mbo::test::write_text(dir / "clean.dbc", kClean);
  DbcCodec codec(parse_dbc(kQuirky, "q.dbc"));
  std::mt19937_64 rng(20);
  json frames = json::array();
  std::vector<std::pair<const MessageCodec*, std::vector<std::uint8_t>>> sent;
  for (const auto& m : codec.messages())
    for (int k = 0; k < 16; ++k) {
      std::vector<std::uint8_t> d(8);
      for (auto& b : d) b = static_cast<std::uint8_t>(rng());
      if (m.message().name == "LoneM") d[0] = static_cast<std::uint8_t>(1 + k % 2);
      frames.push_back({{"id", m.message().id}, {"extended", m.message().extended}, {"data", [&] {
                                                                                       std::string s;
                                                                                       for (auto b : d)
                                                                                         s +=
                                                                                             "0123456789abcdef"[b >> 4],
                                                                                             s +=
                                                                                             "0123456789abcdef"[b & 15];
                                                                                       return s;
                                                                                     }()}});
      sent.emplace_back(&m, d);
    }
  json request = {{"dbcs", {{{"path", (dir / "clean.dbc").string()}, {"frames", frames}}}}};
  mbo::test::write_text(dir / "request.json", request.dump());
  auto r = mbo::test::run_command(mbo::test::python_command(
      mbo::test::source_dir() / "tests/io/oracles/canmatrix_decode.py", {dir / "request.json", dir / "reply.json"}));
  ASSERT_EQ(r.code, 0) << r.output;
  json reply = json::parse(mbo::test::read_text(dir / "reply.json"))["dbcs"][0];
  EXPECT_EQ(reply["messages"], 4);
  std::size_t compared = 0;
  for (std::size_t k = 0; k < sent.size(); ++k) {
    const auto& [m, d] = sent[k];
    const json& theirs = reply["frames"][k];
    ASSERT_TRUE(theirs.contains("signals")) << m->message().name << ": " << theirs.dump();
    std::vector<DecodedSignal> ours(m->signal_count());
    ours.resize(m->decode_all(d, ours));
    EXPECT_EQ(ours.size(), theirs["signals"].size()) << m->message().name;
    for (const auto& s : ours) {
      const std::string& name = m->message().signals[s.index].name;
      ASSERT_TRUE(theirs["signals"].contains(name)) << name;
      EXPECT_NEAR(s.value, theirs["signals"][name]["phys"].get<double>(), 1e-9 * (1 + std::abs(s.value))) << name;
      ++compared;
    }
  }
  EXPECT_GT(compared, 100u);
}
