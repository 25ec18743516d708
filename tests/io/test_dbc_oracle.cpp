// Random payloads of every message of every fixture DBC decode to the same raw and physical
// values as Debian's python3-canmatrix (tests/io/oracles/canmatrix_decode.py).
#include <cmath>
#include <cstring>
#include <iostream>
#include <random>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "mbobserver/io/dbc.hpp"
#include "mbobserver/io/dbc_codec.hpp"
#include "test_util.hpp"

using namespace mbo::io;
using nlohmann::json;

namespace {

std::string hex(std::span<const std::uint8_t> d) {
  static const char* k = "0123456789abcdef";
  std::string s;
  for (auto b : d) {
    s += k[b >> 4];
    s += k[b & 15];
  }
  return s;
}

double as_double(const json& v) {
  if (v.is_string()) {
    auto s = v.get<std::string>();
    if (s == "nan") return std::nan("");
    return s == "inf" ? HUGE_VAL : -HUGE_VAL;
  }
  return v.get<double>();
}

// canmatrix computes raw * factor + offset in Decimal (28 digits) from the factor's text and
// rounds once to double; we multiply and add in double: each side may be off by a couple of
// ulps of the larger term.
bool phys_close(double ours, double theirs, const DbcSignal& s, double raw) {
  if (std::isnan(ours) || std::isnan(theirs)) return std::isnan(ours) && std::isnan(theirs);
  if (std::isinf(ours) || std::isinf(theirs)) return ours == theirs;
  const double scale = std::fabs(raw * s.factor) + std::fabs(s.offset);
  return std::fabs(ours - theirs) <= 4 * std::ldexp(scale, -52) + 1e-300;
}

}  // namespace

TEST(DbcOracle, RandomPayloadsDecodeLikeCanmatrix) {
  auto files = mbo::test::files_with_extension(mbo::test::fixtures() / "dbc", ".dbc");
  files.push_back(mbo::test::source_dir() / "config/can/vehicle.dbc");
  std::mt19937_64 rng(12345);
  std::vector<DbcCodec> codecs;
  std::vector<std::vector<std::pair<const MessageCodec*, std::vector<std::uint8_t>>>> sent;
  json request = {{"dbcs", json::array()}};
  for (const auto& f : files) {
    codecs.emplace_back(load_dbc(f));
    const DbcCodec& codec = codecs.back();
    json frames = json::array();
    sent.emplace_back();
    for (const auto& m : codec.messages()) {
      for (int k = 0; k < 24; ++k) {
        std::vector<std::uint8_t> d(m.message().size);
        for (auto& b : d) b = static_cast<std::uint8_t>(rng());
        // Half of the payloads select a random multiplexed signal's group, so that every
        // multiplexor value the DBC defines gets exercised, not only what chance picks.
        if (k % 2 == 1 && m.signal_count() > 0) {
          std::size_t i = rng() % m.signal_count();
          if (m.layout(i).mux_parent >= 0 && m.layout(i).end_byte <= d.size()) m.select(i, d);
        }
        frames.push_back({{"id", m.message().id}, {"extended", m.message().extended}, {"data", hex(d)}});
        sent.back().emplace_back(&m, std::move(d));
      }
    }
    request["dbcs"].push_back({{"path", f.string()}, {"frames", frames}});
  }
  auto dir = mbo::test::scratch_dir("dbc_oracle");
  mbo::test::write_text(dir / "request.json", request.dump());
  auto r = mbo::test::run_command(mbo::test::python_command(
      mbo::test::source_dir() / "tests/io/oracles/canmatrix_decode.py", {dir / "request.json", dir / "reply.json"}));
  ASSERT_EQ(r.code, 0) << r.output;
  json reply = json::parse(mbo::test::read_text(dir / "reply.json"));
  ASSERT_EQ(reply["dbcs"].size(), files.size());

  std::size_t messages = 0, values = 0, mismatches = 0, known_canmatrix_gaps = 0;
  for (std::size_t fi = 0; fi < files.size(); ++fi) {
    SCOPED_TRACE(files[fi].string());
    const json& theirs = reply["dbcs"][fi];
    const Dbc& db = codecs[fi].dbc();
    EXPECT_EQ(theirs["messages"].get<std::size_t>(), db.messages.size());
    messages += db.messages.size();
    for (std::size_t k = 0; k < sent[fi].size(); ++k) {
      const auto& [m, data] = sent[fi][k];
      const json& t = theirs["frames"][k];
      if (t.contains("error")) {
        ADD_FAILURE() << m->message().name << ": canmatrix: " << t["error"];
        ++mismatches;
        continue;
      }
      std::vector<DecodedSignal> ours(m->signal_count());
      ours.resize(m->decode_all(data, ours));
      const json& ts = t["signals"];
      for (const auto& d : ours) {
        const DbcSignal& s = m->message().signals[d.index];
        auto it = ts.find(s.name);
        if (it == ts.end()) {
          // canmatrix 0.9.5 drops plain m<n> signals from messages that also use
          // SG_MUL_VAL_ (its complex-multiplex path only follows SG_MUL_VAL_ entries).
          bool has_mul_val = false;
          for (const auto& o : m->message().signals) has_mul_val |= o.multiplexed() && o.mux_ranges.size() > 1;
          if (has_mul_val && s.mux_value && s.mux_ranges.size() == 1) {
            ++known_canmatrix_gaps;
            continue;
          }
          ADD_FAILURE() << m->message().name << "." << s.name << " decoded by us only, data " << hex(data);
          ++mismatches;
          continue;
        }
        double raw_ours;
        bool raw_equal;
        if (s.value_type == ValueType::integer) {
          const json& tr = (*it)["raw"];
          raw_equal = s.is_signed ? tr.get<std::int64_t>() == d.raw_signed() : tr.get<std::uint64_t>() == d.raw;
          raw_ours = s.is_signed ? static_cast<double>(d.raw_signed()) : static_cast<double>(d.raw);
        } else {
          if (s.value_type == ValueType::float32) {
            float f;
            auto bits = static_cast<std::uint32_t>(d.raw);
            std::memcpy(&f, &bits, 4);
            raw_ours = f;
          } else {
            std::memcpy(&raw_ours, &d.raw, 8);
          }
          double tr = as_double((*it)["raw"]);
          raw_equal = (std::isnan(tr) && std::isnan(raw_ours)) || tr == raw_ours;
        }
        const bool phys_equal = phys_close(d.value, as_double((*it)["phys"]), s, raw_ours);
        ++values;
        if (!raw_equal || !phys_equal) {
          ++mismatches;
          ADD_FAILURE() << m->message().name << "." << s.name << " data " << hex(data) << ": ours raw "
                        << d.raw_signed() << " phys " << d.value << ", canmatrix " << it->dump();
        }
      }
      // Nothing canmatrix decodes may be missing on our side.
      for (auto it = ts.begin(); it != ts.end(); ++it) {
        bool found = false;
        for (const auto& d : ours) found |= m->message().signals[d.index].name == it.key();
        if (!found) {
          ++mismatches;
          ADD_FAILURE() << m->message().name << "." << it.key() << " decoded by canmatrix only";
        }
      }
    }
  }
  std::cout << "[ oracle   ] " << files.size() << " DBC files, " << messages << " messages, " << values
            << " signal values compared with canmatrix, " << mismatches << " mismatches, " << known_canmatrix_gaps
            << " values canmatrix does not decode (SG_MUL_VAL_ gap)\n";
  EXPECT_EQ(mismatches, 0u);
  EXPECT_GT(values, 30000u);
}
