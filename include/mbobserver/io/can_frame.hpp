// One CAN or CAN FD frame as every source (candump log, ASC log, live SocketCAN) delivers it.
#pragma once

#include <array>
#include <cstdint>

namespace mbo::io {

struct CanFrame {
  double t = 0;  // s: the log's timestamp, or the kernel's receive time live
  std::uint32_t id = 0;  // 11- or 29-bit identifier, flag bits removed
  bool extended = false;  // 29-bit identifier
  bool remote = false;  // RTR frame (no payload)
  bool error = false;  // error frame: `id` holds the CAN_ERR_* class bits
  bool fd = false;  // CAN FD frame
  bool brs = false;  // FD bit-rate switch
  bool esi = false;  // FD error-state indicator
  std::uint8_t len = 0;  // payload length in bytes: 0..8 classic, 0..64 FD
  std::uint8_t channel = 0;  // which interface (index into the source's interface table)
  std::array<std::uint8_t, 64> data{};
};

}  // namespace mbo::io
