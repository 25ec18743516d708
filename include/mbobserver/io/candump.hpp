// candump's log format ("candump -l", read back by canplayer and python-can):
//
//   (1436509052.249713) can0 123#DEADBEEF          classic frame, 3 hex digits = 11-bit id
//   (1436509052.249713) can0 12345678#00           8 hex digits = 29-bit id
//   (1436509052.249713) can0 123#R  / 123#R5       remote frame, optional DLC
//   (1436509052.249713) can0 123##1112233          CAN FD: "##", one flags nibble
//                                                  (1 = BRS, 2 = ESI, 4 = FDF), data
//   (1436509052.249713) can0 20000080#0000000000000000   error frame: CAN_ERR_FLAG set
//
// as printed by can-utils' lib.c (sprint_canframe) and parsed by its parse_canframe(): data
// bytes may be separated by '.', a classic 8-byte frame may carry the raw DLC as "_<hex>",
// and candump pads interface names to a common width, so fields are separated by one or more
// blanks. python-can's writer adds a direction token " R" or " T" at the end of the line;
// it is accepted and ignored.
#pragma once

#include <cstddef>
#include <cstdio>
#include <string>
#include <string_view>

#include "mbobserver/io/can_frame.hpp"

namespace mbo::io {

struct CandumpRecord {
  double t = 0;
  std::string_view interface;  // points into the parsed line
  CanFrame frame;  // channel left 0: the caller maps interface names
};

// Parses one line (without or with its trailing newline). Returns an empty view on success,
// else a description of the first problem naming the field, e.g. "id: 5 hex digits (candump
// writes 3 or 8)". Never throws, never reads outside `line`.
std::string_view parse_candump_line(std::string_view line, CandumpRecord& out);
// The same, straight into a frame (the log reader's hot path). On failure `frame` holds
// whatever was parsed before the problem.
std::string_view parse_candump_line(std::string_view line, CanFrame& frame, std::string_view& interface);

// Longest line format_candump_line() writes: "(" 20+1+6 ")" + name + " " + 8 "##" 1 + 128 + "\n".
inline constexpr std::size_t kCandumpMaxLine = 200;

// Writes one candump -l line ending in '\n' into `out` (which must hold kCandumpMaxLine
// bytes plus the interface name) and returns its length. Timestamps are printed with
// microseconds, as candump does; a negative or non-finite time is written as 0.
std::size_t format_candump_line(const CanFrame& frame, std::string_view interface, char* out);
std::string format_candump_line(const CanFrame& frame, std::string_view interface);

// Writes frames to a stdio stream (the caller owns and closes it).
class CandumpWriter {
 public:
  explicit CandumpWriter(std::FILE* out) : out_(out) {}
  // Returns false if the stream reported an error.
  bool write(const CanFrame& frame, std::string_view interface);

 private:
  std::FILE* out_;
};

}  // namespace mbo::io
