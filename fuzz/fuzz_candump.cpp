// candump -l lines on arbitrary bytes, line by line and through the log reader. Property:
// whatever parses, formats to a line that parses back to the same frame.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "mbobserver/core/json_reader.hpp"
#include "mbobserver/io/candump.hpp"
#include "mbobserver/io/log_reader.hpp"

namespace {

bool same(const mbo::io::CanFrame& a, const mbo::io::CanFrame& b) {
  return a.id == b.id && a.extended == b.extended && a.remote == b.remote && a.error == b.error && a.fd == b.fd &&
         a.brs == b.brs && a.esi == b.esi && a.len == b.len &&
         (a.remote || std::memcmp(a.data.data(), b.data.data(), a.len) == 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  std::string_view rest = text;
  while (!rest.empty()) {
    std::size_t nl = rest.find('\n');
    std::string_view line = rest.substr(0, nl);
    rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
    mbo::io::CandumpRecord rec;
    if (!mbo::io::parse_candump_line(line, rec).empty()) continue;
    std::string iface(rec.interface);
    std::string again = mbo::io::format_candump_line(rec.frame, iface);
    mbo::io::CandumpRecord back;
    if (!mbo::io::parse_candump_line(again, back).empty() || !same(rec.frame, back.frame)) __builtin_trap();
  }
  try {
    mbo::io::LogReader reader(text, "fuzz.log");
    mbo::io::CanFrame f;
    while (reader.next(f)) {
    }
  } catch (const mbo::ConfigError&) {
  }
  return 0;
}
