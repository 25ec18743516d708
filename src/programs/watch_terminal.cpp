#include "watch_terminal.hpp"

#include <cerrno>
#include <string_view>

#include <sys/ioctl.h>
#include <unistd.h>

namespace mbo {

namespace {

// ECMA-48 / xterm control sequences.
constexpr std::string_view kEnter = "\x1b[?1049h\x1b[?25l\x1b[H\x1b[2J";  // alternate screen, hide cursor, clear
constexpr std::string_view kLeave = "\x1b[?25h\x1b[?1049l";  // show cursor, main screen back
constexpr std::string_view kHome = "\x1b[H";
constexpr std::string_view kClearLine = "\x1b[K";  // to the end of the line
constexpr std::string_view kClearBelow = "\x1b[J";  // to the end of the screen

void write_all(std::string_view s) {
  while (!s.empty()) {
    const ssize_t n = ::write(STDOUT_FILENO, s.data(), s.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the terminal went away: nothing more to show
    s.remove_prefix(static_cast<std::size_t>(n));
  }
}

}  // namespace

WatchScreen::WatchScreen(boost::asio::io_context& io, double refresh_hz, std::function<void()> quit,
                         std::function<std::vector<std::string>()> lines)
    : timer_(io),
      keys_(io),
      period_(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
          std::chrono::duration<double>(1.0 / refresh_hz))),
      quit_(std::move(quit)),
      lines_(std::move(lines)) {
  if (::isatty(STDIN_FILENO) == 1 && ::tcgetattr(STDIN_FILENO, &saved_) == 0) {
    termios raw = saved_;
    raw.c_lflag &= ~static_cast<tcflag_t>(ICANON | ECHO);
    raw.c_cc[VMIN] = 1;
    raw.c_cc[VTIME] = 0;
    // No Ctrl-Z: a stopped view would leave the shell on the alternate screen.
    raw.c_cc[VSUSP] = _POSIX_VDISABLE;
    restore_termios_ = ::tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0;
    // A duplicate, so that closing the descriptor object leaves standard input open.
    const int fd = ::dup(STDIN_FILENO);
    if (fd >= 0) {
      keys_.assign(fd);
      read_keys();
    }
  }
  write_all(kEnter);
  tick();
}

WatchScreen::~WatchScreen() {
  boost::system::error_code ec;
  timer_.cancel(ec);
  keys_.close(ec);
  write_all(kLeave);
  if (restore_termios_) ::tcsetattr(STDIN_FILENO, TCSANOW, &saved_);
}

void WatchScreen::tick() {
  draw(lines_());
  timer_.expires_after(period_);
  timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) tick();
  });
}

void WatchScreen::read_keys() {
  keys_.async_read_some(boost::asio::buffer(key_buffer_), [this](const boost::system::error_code& ec, std::size_t n) {
    if (ec) return;  // closed, or standard input ended: keep showing until a signal
    for (std::size_t i = 0; i < n; ++i)
      if (key_buffer_[i] == 'q' || key_buffer_[i] == 'Q') {
        quit_();
        return;
      }
    read_keys();
  });
}

void WatchScreen::draw(const std::vector<std::string>& lines) {
  // Clip to the window: a wrapped or scrolled line would break drawing in place.
  std::size_t rows = 24, cols = 80;
  winsize ws{};
  if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 && ws.ws_col > 0) {
    rows = ws.ws_row;
    cols = ws.ws_col;
  }
  std::string screen(kHome);
  for (std::size_t i = 0; i < lines.size() && i < rows; ++i) {
    if (i) screen += "\r\n";
    // One column short of the edge: after the last column the cursor waits to wrap, and the
    // erase that follows would clear that column.
    screen += std::string_view(lines[i]).substr(0, cols - 1);
    screen += kClearLine;
  }
  screen += kClearBelow;
  write_all(screen);
}

}  // namespace mbo
