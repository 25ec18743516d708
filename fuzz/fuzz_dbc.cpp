// DBC parser and codec on arbitrary bytes: a parse either succeeds or throws DbcError; every
// message of a parsed file then decodes and encodes a payload made from the input.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "mbobserver/io/dbc.hpp"
#include "mbobserver/io/dbc_codec.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  mbo::io::Dbc db;
  try {
    db = mbo::io::parse_dbc(text, "fuzz.dbc");
  } catch (const mbo::io::DbcError&) {
    return 0;
  }
  mbo::io::DbcCodec codec(std::move(db));
  std::vector<std::uint8_t> payload(64);
  for (std::size_t i = 0; i < payload.size(); ++i) payload[i] = size ? data[i % size] : 0;
  std::vector<mbo::io::DecodedSignal> out;
  for (const auto& m : codec.messages()) {
    out.resize(m.signal_count());
    m.decode_all(payload, out);
    std::vector<std::uint8_t> enc(64, 0);
    for (std::size_t s = 0; s < m.signal_count(); ++s) {
      m.select(s, enc);
      m.encode(s, 1.5, enc);
      m.encode(s, -1e300, enc);
    }
    if (codec.find(m.message().id, m.message().extended) == nullptr) __builtin_trap();
  }
  return 0;
}
