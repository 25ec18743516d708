// Vector ASC logs (CANoe/CANalyzer "ASCII logging format"), the CAN part:
//
//   date Sat Sep 30 15:06:13.191 2017
//   base hex  timestamps absolute          hex|dec numbers; absolute = since measurement
//                                          start, relative = since the previous event
//   internal events logged
//   Begin Triggerblock Sat Sep 30 15:06:13.191 2017
//      2.501000 1 ErrorFrame
//     17.876708 1  6F9             Rx   d 8 05 0C 00 00 00 00 00 00  Length = 240015 ...
//      2.584921 4  300             Tx   r 8                          remote, optional DLC
//     30.005071 CANFD   1 Rx  300  Name  1 0 8  8 11 22 ... <duration> <bits> <flags> <crc> ...
//                       channel dir id [symbolic name] BRS ESI DLC DataLength data...
//   End TriggerBlock
//
// Frame times are in the log's clock: the file's times plus the start its "date" line (or the
// last "Begin Triggerblock" line, as python-can reads it) gives, as UNIX time in the local time
// zone; 0 without a readable date. Channels are numbered from 1 in the file; CanFrame::channel is the file's number - 1
// (as python-can does). In CANFD lines the Flags field (the BLF CAN_FD_MESSAGE_64 flags) tells an FD frame (EDL,
// 0x1000) from a classic one logged on an FD channel, and marks remote frames (0x0010). Status, statistic, J1939TP,
// TxRq and other events are skipped; a line that has the shape of a frame but cannot be read is bad.
#pragma once

#include <optional>
#include <string_view>

#include "mbobserver/io/can_frame.hpp"

namespace mbo::io {

// The date of a "date" or "Begin Triggerblock" line ("Sat Sep 30 15:06:13.191 2017", "Thu Nov
// 14 10:13:20.002 pm 2023"; English or German month names) as UNIX time, read in the local
// time zone as the writer wrote it; nullopt if it is not such a date.
std::optional<double> parse_asc_date(std::string_view text);

class AscParser {
 public:
  enum class Kind { frame, skipped, bad };

  // Parses one line (the parser keeps the header's base and timestamp mode, and the running
  // time of relative logs). For Kind::bad, error() says why.
  Kind parse_line(std::string_view line, CanFrame& out);
  std::string_view error() const { return error_; }

  bool decimal() const { return decimal_; }
  bool relative() const { return relative_; }

 private:
  Kind bad(std::string_view why) {
    error_ = why;
    return Kind::bad;
  }
  Kind parse_classic(std::string_view channel, std::string_view rest, double t, CanFrame& out);
  Kind parse_fd(std::string_view rest, double t, CanFrame& out);

  bool decimal_ = false;
  bool relative_ = false;
  double last_t_ = 0;
  double start_ = 0;  // UNIX time of the measurement's start ("date", "Begin Triggerblock")
  std::string_view error_;
};

}  // namespace mbo::io
