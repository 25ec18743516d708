// mbobserver-listen: receives the daemon's UDP/JSON datagrams (docs/interfaces.md) and prints them,
// one per line, records them as JSON lines or the estimates as CSV, or shows them live.
//
//   mbobserver-listen [--port P] [--count N] [--jsonl OUT] [--csv OUT] [--watch [--refresh-hz HZ]]
//                     [--group MCAST] [--interface IF] [--bind ADDR] [--only estimate|status]
//                     [--timeout S]
//
// A datagram that is not a JSON object with a "schema" string is not written: it is counted,
// the first one is reported on stderr (not with --watch: the view counts it), and the summary
// gives the total. Exit 0 after N datagrams, on SIGINT/SIGTERM or on 'q' in --watch, 1 if
// nothing arrives within --timeout, 2 on bad usage (--watch without a terminal on stdout).
#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>

#include <net/if.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include "mbobserver/core/json_reader.hpp"
#include "mbobserver/core/program.hpp"
#include "mbobserver/runtime/asio.hpp"
#include "mbobserver/runtime/config.hpp"
#include "mbobserver/runtime/listen_csv.hpp"
#include "mbobserver/runtime/signals.hpp"
#include "watch_terminal.hpp"

namespace asio = boost::asio;
using asio::ip::udp;

namespace {

struct Options {
  unsigned port = mbo::runtime::kDefaultPort;
  std::uint64_t count = 0;
  std::string jsonl;
  std::string csv;
  bool watch = false;
  double refresh_hz = 4;
  std::string group;
  std::string interface;
  std::string bind;
  std::string only = "all";
  double timeout_s = 0;
};

struct Counts {
  std::uint64_t written = 0, estimates = 0, status = 0, other = 0, invalid = 0, skipped = 0;
};

// The newest datagram of each kind and when it arrived, for --watch.
struct Latest {
  std::optional<nlohmann::ordered_json> estimate, status;
  std::chrono::steady_clock::time_point estimate_at, status_at;
};

class Listener {
 public:
  // `out`: where datagrams are written (nullptr: nowhere, --watch alone); `csv`: the estimates'
  // CSV, or nullptr.
  Listener(asio::io_context& io, const Options& opt, std::ostream* out, mbo::runtime::CsvWriter* csv)
      : io_(io), opt_(opt), out_(out), csv_(csv), socket_(io), timer_(io) {}

  void open() {
    boost::system::error_code ec;
    std::optional<asio::ip::address> group;
    if (!opt_.group.empty()) {
      group = asio::ip::make_address(opt_.group, ec);
      if (ec || !group->is_multicast())
        throw mbo::ConfigError("--group: expected a multicast address, got \"" + opt_.group + "\"");
    }
    std::string bind = opt_.bind;
    if (bind.empty()) bind = group && group->is_v6() ? "::" : "0.0.0.0";
    const auto bind_address = asio::ip::make_address(bind, ec);
    if (ec) throw mbo::ConfigError("--bind: expected an IP address, got \"" + bind + "\"");
    unsigned ifindex = 0;
    if (!opt_.interface.empty()) {
      ifindex = ::if_nametoindex(opt_.interface.c_str());
      if (ifindex == 0) throw mbo::ConfigError("--interface: no network interface \"" + opt_.interface + "\"");
    }

    const udp::endpoint local(bind_address, static_cast<unsigned short>(opt_.port));
    socket_.open(local.protocol());
    // Several listeners (and the daemon's own tests) may share a multicast port.
    socket_.set_option(asio::socket_base::reuse_address(true));
    socket_.bind(local, ec);
    if (ec)
      throw std::runtime_error("cannot listen on " + bind + ":" + std::to_string(opt_.port) + ": " + ec.message());
    if (group) {
      if (group->is_v6())
        socket_.set_option(asio::ip::multicast::join_group(group->to_v6(), ifindex), ec);
      else if (ifindex != 0)
        join_v4_by_index(group->to_v4(), ifindex, ec);
      else
        socket_.set_option(asio::ip::multicast::join_group(group->to_v4()), ec);
      if (ec) throw std::runtime_error("cannot join " + opt_.group + ": " + ec.message());
    }
    spdlog::debug("listening on {}:{}{}", bind, opt_.port, group ? " group " + opt_.group : "");
  }

  void start() {
    receive();
    arm_timeout();
  }

  void stop() {
    boost::system::error_code ec;
    socket_.cancel(ec);
    timer_.cancel(ec);
    io_.stop();  // the signal handler's pending wait would otherwise keep run() going
  }

  const Counts& counts() const { return counts_; }
  const Latest& latest() const { return latest_; }
  bool timed_out() const { return timed_out_; }

 private:
  void join_v4_by_index(const asio::ip::address_v4& group, unsigned ifindex, boost::system::error_code& ec) {
    // ip(7) IP_ADD_MEMBERSHIP with struct ip_mreqn selects the interface by index.
    ip_mreqn req{};
    req.imr_multiaddr.s_addr = htonl(group.to_uint());
    req.imr_ifindex = static_cast<int>(ifindex);
    if (::setsockopt(socket_.native_handle(), IPPROTO_IP, IP_ADD_MEMBERSHIP, &req, sizeof req) != 0)
      ec.assign(errno, boost::system::system_category());
  }

  void arm_timeout() {
    if (opt_.timeout_s <= 0) return;
    timer_.expires_after(
        std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(opt_.timeout_s)));
    timer_.async_wait([this](const boost::system::error_code& ec) {
      if (ec) return;
      timed_out_ = true;
      stop();
    });
  }

  void receive() {
    socket_.async_receive_from(asio::buffer(buffer_), sender_,
                               [this](const boost::system::error_code& ec, std::size_t n) {
                                 if (ec) return;  // cancelled: stopping
                                 handle(std::string_view(buffer_.data(), n));
                                 if (opt_.count != 0 && counts_.written >= opt_.count) {
                                   stop();
                                   return;
                                 }
                                 arm_timeout();  // the timeout is per datagram: "nothing for S s"
                                 receive();
                               });
  }

  void handle(std::string_view text) {
    // ordered_json keeps the datagram's key order: the CSV's columns and the view follow it.
    auto j = nlohmann::ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object() || !j.contains("schema") || !j["schema"].is_string()) {
      if (counts_.invalid++ == 0 && !opt_.watch)
        spdlog::warn(
            "{}:{}: ignored a datagram that is not a JSON object with a \"schema\" ({} bytes); "
            "further ones are only counted",
            sender_.address().to_string(), sender_.port(), text.size());
      return;
    }
    const std::string schema = j["schema"];
    const bool estimate = schema == "mbobserver.estimate/2" || schema == "mbobserver.estimate/1";
    const bool status = schema == "mbobserver.status/1";
    if ((opt_.only == "estimate" && !estimate) || (opt_.only == "status" && !status)) {
      ++counts_.skipped;
      return;
    }
    (estimate ? counts_.estimates : status ? counts_.status : counts_.other)++;
    if (out_) {
      // The bytes as received, unless they span lines (then compacted to keep one per line).
      if (text.find_first_of("\r\n") == std::string_view::npos)
        *out_ << text << '\n';
      else
        *out_ << j.dump() << '\n';
      out_->flush();
    }
    if (estimate && csv_) csv_->write(j);
    ++counts_.written;
    if (opt_.watch) {
      const auto now = std::chrono::steady_clock::now();
      if (estimate) {
        latest_.estimate = std::move(j);
        latest_.estimate_at = now;
      } else if (status) {
        latest_.status = std::move(j);
        latest_.status_at = now;
      }
    }
  }

  asio::io_context& io_;
  const Options& opt_;
  std::ostream* out_;
  mbo::runtime::CsvWriter* csv_;
  udp::socket socket_;
  asio::steady_timer timer_;
  udp::endpoint sender_;
  std::array<char, 65536> buffer_{};
  Counts counts_;
  Latest latest_;
  bool timed_out_ = false;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Receive mbobserverd's UDP/JSON datagrams and print or record them (JSON lines, CSV) or watch them live",
               "mbobserver-listen"};
  mbo::CommonOptions common;
  mbo::add_common_options(app, common);
  Options opt;
  app.add_option("--port", opt.port, "UDP port")->check(CLI::Range(1, 65535))->capture_default_str();
  app.add_option("--count", opt.count, "stop after N datagrams (0: until SIGINT/SIGTERM)")->capture_default_str();
  app.add_option("--jsonl", opt.jsonl, "append the datagrams to this file instead of printing them");
  app.add_option("--csv", opt.csv,
                 "also write the estimates to this file as CSV: a header of flattened keys (state.x, "
                 "virtual.tyre_fz.fl, ...) from the first estimate, one row per estimate");
  auto* watch = app.add_flag("--watch", opt.watch,
                             "show the newest estimate and status live in the terminal instead of printing "
                             "(q quits); needs a terminal on standard output");
  app.add_option("--refresh-hz", opt.refresh_hz, "--watch: redraws per second")
      ->check(CLI::Range(1.0, 20.0))
      ->needs(watch)
      ->capture_default_str();
  app.add_option("--group", opt.group, "join this multicast group (IPv4 or IPv6)");
  app.add_option("--interface", opt.interface, "network interface for --group (default: the routing table's)");
  app.add_option("--bind", opt.bind, "local address (default 0.0.0.0, or :: for an IPv6 group)");
  app.add_option("--only", opt.only, "keep only one kind of datagram")
      ->check(CLI::IsMember({"all", "estimate", "status"}))
      ->capture_default_str();
  app.add_option("--timeout", opt.timeout_s, "exit 1 if no datagram arrives for S seconds (0: wait forever)")
      ->check(CLI::NonNegativeNumber);

  return mbo::run_program(app, argc, argv, common, [&] {
    if (opt.watch && ::isatty(STDOUT_FILENO) != 1)
      throw mbo::ConfigError("--watch needs a terminal on standard output (use --jsonl or --csv to record)");
    std::ofstream file;
    if (!opt.jsonl.empty()) {
      file.open(opt.jsonl, std::ios::app);
      if (!file) throw mbo::ConfigError(opt.jsonl + ": cannot open for writing");
    }
    std::ofstream csv_file;
    std::optional<mbo::runtime::CsvWriter> csv;
    if (!opt.csv.empty()) {
      csv_file.open(opt.csv, std::ios::trunc);
      if (!csv_file) throw mbo::ConfigError(opt.csv + ": cannot open for writing");
      csv.emplace(csv_file);
    }
    std::ostream* out = !opt.jsonl.empty() ? &file : opt.watch ? nullptr : &std::cout;

    asio::io_context io;
    Listener listener(io, opt, out, csv ? &*csv : nullptr);
    listener.open();
    mbo::runtime::StopSignals signals(io, [&](int) { listener.stop(); });
    {
      // Scoped so that the terminal is restored before the summary below is printed, and on
      // every way out of here (an exception unwinds through the destructor).
      std::optional<mbo::WatchScreen> screen;
      if (opt.watch)
        screen.emplace(
            io, opt.refresh_hz, [&] { listener.stop(); },
            [&] {
              const Latest& l = listener.latest();
              const Counts& c = listener.counts();
              const auto now = std::chrono::steady_clock::now();
              mbo::runtime::WatchInput in;
              in.port = opt.port;
              in.estimate = l.estimate ? &*l.estimate : nullptr;
              in.status = l.status ? &*l.status : nullptr;
              in.estimate_age_s = std::chrono::duration<double>(now - l.estimate_at).count();
              in.status_age_s = std::chrono::duration<double>(now - l.status_at).count();
              in.estimates = c.estimates;
              in.statuses = c.status;
              in.invalid = c.invalid;
              return mbo::runtime::render_watch(in);
            });
      listener.start();
      io.run();
    }

    const Counts& c = listener.counts();
    std::fprintf(stderr,
                 "mbobserver-listen: %llu datagrams (%llu estimate, %llu status, %llu other), "
                 "%llu invalid, %llu filtered out%s%s\n",
                 static_cast<unsigned long long>(c.written), static_cast<unsigned long long>(c.estimates),
                 static_cast<unsigned long long>(c.status), static_cast<unsigned long long>(c.other),
                 static_cast<unsigned long long>(c.invalid), static_cast<unsigned long long>(c.skipped),
                 opt.jsonl.empty() ? "" : ", written to ", opt.jsonl.c_str());
    if (csv)
      std::fprintf(stderr, "mbobserver-listen: %llu CSV rows (%llu columns) written to %s%s\n",
                   static_cast<unsigned long long>(csv->rows()), static_cast<unsigned long long>(csv->columns().size()),
                   opt.csv.c_str(),
                   csv->mismatched() == 0
                       ? ""
                       : (", " + std::to_string(csv->mismatched()) +
                          " of them from estimates whose keys differ from the header's (only its columns kept)")
                             .c_str());
    if (listener.timed_out()) {
      std::fprintf(stderr, "mbobserver-listen: error: no datagram on port %u for %g s\n", opt.port, opt.timeout_s);
      return mbo::kExitRuntime;
    }
    return mbo::kExitOk;
  });
}
