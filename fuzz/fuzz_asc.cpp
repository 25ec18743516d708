// Vector ASC on arbitrary bytes, line by line (the parser keeps header state) and through the
// log reader. Every frame it returns must be a possible CAN frame.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "mbobserver/core/json_reader.hpp"
#include "mbobserver/io/asc.hpp"
#include "mbobserver/io/log_reader.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  mbo::io::AscParser parser;
  std::string_view rest = text;
  while (!rest.empty()) {
    std::size_t nl = rest.find('\n');
    std::string_view line = rest.substr(0, nl);
    rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
    mbo::io::CanFrame f;
    if (parser.parse_line(line, f) == mbo::io::AscParser::Kind::frame) {
      if (f.len > 64 || (!f.fd && !f.remote && !f.error && f.len > 8) ||
          (f.extended ? f.id > 0x1FFFFFFF : f.id > 0x7FF))
        __builtin_trap();
    }
  }
  try {
    mbo::io::LogReader reader(text, "fuzz.asc");
    mbo::io::CanFrame f;
    while (reader.next(f)) {
    }
  } catch (const mbo::ConfigError&) {
  }
  return 0;
}
