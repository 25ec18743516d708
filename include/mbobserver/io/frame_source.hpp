// A live source of CAN frames (SocketCAN today). Frames are delivered on the thread that
// runs the source's io_context, in arrival order. Replay does not need this interface: the
// runtime pulls frames from a LogReader at the pace of its clock.
#pragma once

#include <functional>

#include "mbobserver/io/can_frame.hpp"

namespace mbo::io {

class FrameSource {
 public:
  using FrameHandler = std::function<void(const CanFrame&)>;
  virtual ~FrameSource() = default;
  virtual void start() = 0;  // begins (re)connecting and delivering frames
  virtual void stop() = 0;  // cancels everything; no frame is delivered after it returns
};

}  // namespace mbo::io
