// NMEA 0183 on arbitrary bytes: through the serial line assembler and the parser, in both
// checksum modes; parsed sentences turned into measurements, which must be finite, and stamped
// at their fix time, which must be finite and never later than their arrival.
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "mbobserver/io/nmea.hpp"
#include "mbobserver/io/serial_nmea_source.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto check = [](std::string_view line) {
    for (bool strict : {true, false}) {
      mbo::io::NmeaOptions o;
      o.require_checksum = strict;
      mbo::io::NmeaSentence s;
      if (mbo::io::parse_nmea(line, s, o).status != mbo::io::NmeaStatus::parsed) continue;
      std::array<mbo::Measurement, 8> m;
      for (bool alt : {false, true}) {
        mbo::io::NmeaChannelOptions c;
        c.position_from_rmc = alt;
        c.velocity_from_vtg = alt;
        std::size_t n = mbo::io::nmea_measurements(s, 1.0, c, m);
        for (std::size_t i = 0; i < n; ++i)
          if (!std::isfinite(m[i].value)) __builtin_trap();
      }
      // the system clock at midnight, noon and a day's last tenth of a second
      mbo::io::NmeaFixTimeStamper stamper(1.0);
      for (double utc : {1795910400.0, 1795953600.0, 1795996799.9}) {
        const auto t = stamper.stamp(s, 100.0, utc);
        if (t && (!std::isfinite(*t) || *t > 100.0 || *t < 99.0)) __builtin_trap();
      }
    }
  };
  check(std::string_view(reinterpret_cast<const char*>(data), size));
  mbo::io::NmeaLineAssembler a(96, check);
  a.feed(std::span<const char>(reinterpret_cast<const char*>(data), size));
  return 0;
}
