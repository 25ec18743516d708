// NMEA 0183 sentences as a receiver sends them, for tests that feed a serial line: the
// checksum computed, and a GGA whose fix is a given age behind the system clock.
#pragma once

#include <cmath>
#include <cstdio>
#include <ctime>
#include <string>

namespace mbo::test {

// "$" body "*hh" CR LF, the checksum the XOR of the body's bytes.
inline std::string nmea_sentence(const std::string& body) {
  unsigned char x = 0;
  for (char c : body) x ^= static_cast<unsigned char>(c);
  char tail[8];
  std::snprintf(tail, sizeof tail, "*%02X\r\n", x);
  return "$" + body + tail;
}

inline double clock_s(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// A GGA (Munich, 8 satellites) whose fix is `age` s before the system clock's now (UTC
// hhmmss.ss, the hundredths cut).
inline std::string gga_aged(double age) {
  const double tod = std::fmod(clock_s(CLOCK_REALTIME) - age + 86400, 86400);
  const int hh = static_cast<int>(tod / 3600), mm = static_cast<int>(std::fmod(tod, 3600) / 60);
  char body[120];
  std::snprintf(body, sizeof body, "GPGGA,%02d%02d%05.2f,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,", hh, mm,
                std::floor(std::fmod(tod, 60) * 100) / 100);
  return nmea_sentence(body);
}

}  // namespace mbo::test
