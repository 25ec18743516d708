// mbobserver-listen --watch: owns the terminal while the live view is up. The alternate screen
// (xterm's private mode 1049) keeps the user's scrollback intact; standard input goes
// non-canonical without echo so that a single 'q' quits, with ISIG kept so that Ctrl-C still
// raises SIGINT (Ctrl-Z is disabled while the view is up). The destructor puts everything back; it runs on every way
// out of main's body (return, exception, SIGINT/SIGTERM which stop the io_context).
#pragma once

#include <array>
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include <termios.h>

#include "mbobserver/runtime/asio.hpp"
#include "mbobserver/runtime/listen_view.hpp"

namespace mbo {

class WatchScreen {
 public:
  // Redraws `lines()` every 1/refresh_hz s and at once; calls `quit()` when 'q' is typed.
  WatchScreen(boost::asio::io_context& io, double refresh_hz, std::function<void()> quit,
              std::function<std::vector<std::string>()> lines);
  ~WatchScreen();
  WatchScreen(const WatchScreen&) = delete;
  WatchScreen& operator=(const WatchScreen&) = delete;

 private:
  void tick();
  void read_keys();
  void draw(const std::vector<std::string>& lines);

  boost::asio::steady_timer timer_;
  boost::asio::posix::stream_descriptor keys_;
  std::chrono::steady_clock::duration period_;
  std::function<void()> quit_;
  std::function<std::vector<std::string>()> lines_;
  std::array<char, 64> key_buffer_{};
  termios saved_{};
  bool restore_termios_ = false;
};

}  // namespace mbo
