// mbobserver-listen end to end: the real program in a child process, fed by the real
// publisher over loopback. No timing assertions: the publisher keeps sending until the child
// has what it needs (UDP sent before the child binds is simply lost), with a hang guard.
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "mbobserver/runtime/estimate_json.hpp"
#include "mbobserver/runtime/udp_publisher.hpp"
#include "sample_records.hpp"
#include "udp_receiver.hpp"

extern char** environ;

using namespace mbo::runtime;
using namespace std::chrono_literals;
using nlohmann::json;
using ::testing::HasSubstr;

namespace {

namespace fs = std::filesystem;

const fs::path& temp_dir() {
  // Removed when the test process exits (CTest runs each test in a process of its own).
  static const struct TempDir {
    fs::path path = fs::temp_directory_path() / ("mbo_listen_" + std::to_string(::getpid()));
    ~TempDir() {
      std::error_code ec;
      fs::remove_all(path, ec);
    }
  } dir;
  return dir.path;
}

fs::path temp_file(const std::string& name) {
  const fs::path& dir = temp_dir();
  fs::create_directories(dir);
  fs::remove(dir / name);
  return dir / name;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> lines_of(const fs::path& p) {
  std::vector<std::string> out;
  std::ifstream in(p);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

unsigned short free_port() {
  mbo::test::UdpReceiver probe;  // the kernel picks an unused port; released on return
  return probe.port();
}

class Child {
 public:
  explicit Child(std::vector<std::string> args, const fs::path& err) {
    args.insert(args.begin(), MBO_LISTEN);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    EXPECT_EQ(::posix_spawn(&pid_, MBO_LISTEN, &fa, nullptr, argv.data(), environ), 0);
    posix_spawn_file_actions_destroy(&fa);
  }
  ~Child() {
    if (running()) {
      ::kill(pid_, SIGKILL);
      wait();
    }
  }
  bool running() {
    if (exited_) return false;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) record(status);
    return !exited_;
  }
  int wait() {
    if (!exited_) {
      int status = 0;
      ::waitpid(pid_, &status, 0);
      record(status);
    }
    return code_;
  }
  void signal(int s) { ::kill(pid_, s); }

 private:
  void record(int status) {
    exited_ = true;
    code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  pid_t pid_ = -1;
  bool exited_ = false;
  int code_ = -1;
};

// Calls `send_one()` every 10 ms until `done()` or the hang guard.
template <class Send, class Done>
bool keep_sending(Send send_one, Done done) {
  const auto give_up = std::chrono::steady_clock::now() + 60s;
  while (!done()) {
    if (std::chrono::steady_clock::now() > give_up) return false;
    send_one();
    std::this_thread::sleep_for(10ms);
  }
  return true;
}

// Runs a shell command; returns its exit code and appends its stdout and stderr to `out`.
int run(const std::string& cmd, std::string& out) {
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  char buf[512];
  while (p && std::fgets(buf, sizeof buf, p)) out += buf;
  const int status = p ? ::pclose(p) : -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// A sample estimate whose values change with `seq`, so that each row of a CSV is its own.
mbo::EstimateRecord varied_estimate(std::uint64_t seq) {
  mbo::EstimateRecord r = mbo::test::sample_estimate(seq);
  r.x = 101.25 + static_cast<double>(seq) / 3.0;
  r.t = 12.345 + 0.01 * static_cast<double>(seq);
  r.tyre_fz[2] = 3600.25 + 1e-7 * static_cast<double>(seq);
  r.std_tyre_fy = {12.5, 13.25, 9.0 + 1.0 / 7.0, 8};
  r.yaw_rate = std::nan("");  // published as null: an empty cell
  r.calibration[2] = {.estimated = true, .converged = false, .value = 1e-3 / static_cast<double>(seq + 1), .std = 2e-4};
  return r;
}

int validate_with_schema(const fs::path& jsonl, std::string& out) {
  const std::string cmd = std::string("/usr/bin/python3 ") + MBO_SOURCE_DIR + "/tests/runtime/validate_jsonl.py " +
                          MBO_SOURCE_DIR + "/docs " + jsonl.string() + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  char buf[512];
  while (p && std::fgets(buf, sizeof buf, p)) out += buf;
  const int status = p ? ::pclose(p) : -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// The publisher of a test: unicast to 127.0.0.1:port at 500 Hz.
PublishConfig unicast_to(unsigned short port) {
  PublishConfig c;
  c.port = port;
  c.rate_hz = 500;
  return c;
}

}  // namespace

TEST(Listen, RecordsWhatThePublisherSends) {
  const unsigned short port = free_port();
  const fs::path out = temp_file("est.jsonl"), err = temp_file("err.txt");
  Child child({"--port", std::to_string(port), "--bind", "127.0.0.1", "--count", "5", "--jsonl", out.string(),
               "--timeout", "120"},
              err);
  boost::asio::io_context io;
  UdpPublisher pub(io, unicast_to(port), 0.002);
  std::uint64_t seq = 0;
  ASSERT_TRUE(keep_sending(
      [&] {
        pub.on_record(mbo::test::sample_estimate(seq++));
        if (seq % 3 == 0) pub.send_status();
      },
      [&] { return !child.running(); }));
  EXPECT_EQ(child.wait(), 0) << slurp(err);

  const auto lines = lines_of(out);
  ASSERT_EQ(lines.size(), 5u) << slurp(out);
  for (const auto& line : lines) EXPECT_TRUE(json::accept(line)) << line;
  EXPECT_THAT(slurp(err), HasSubstr("mbobserver-listen: 5 datagrams"));
  std::string report;
  EXPECT_EQ(validate_with_schema(out, report), 0) << report;
}

TEST(Listen, GarbageIsCountedAndNotWritten) {
  const unsigned short port = free_port();
  const fs::path out = temp_file("garbage.jsonl"), err = temp_file("garbage_err.txt");
  Child child({"--port", std::to_string(port), "--bind", "127.0.0.1", "--count", "2", "--jsonl", out.string(), "--only",
               "estimate"},
              err);
  boost::asio::io_context io;
  UdpPublisher pub(io, unicast_to(port), 0.002);
  boost::asio::ip::udp::socket raw(io, boost::asio::ip::udp::v4());
  const boost::asio::ip::udp::endpoint to(boost::asio::ip::make_address("127.0.0.1"), port);
  std::uint64_t seq = 0;
  ASSERT_TRUE(keep_sending(
      [&] {
        raw.send_to(boost::asio::buffer(std::string("{\"truncated\": ")), to);
        raw.send_to(boost::asio::buffer(std::string("[1,2,3]")), to);
        pub.send_status();  // valid, but filtered out by --only estimate
        pub.on_record(mbo::test::sample_estimate(seq++));
      },
      [&] { return !child.running(); }));
  EXPECT_EQ(child.wait(), 0) << slurp(err);
  const auto lines = lines_of(out);
  ASSERT_EQ(lines.size(), 2u);
  for (const auto& line : lines) EXPECT_EQ(json::parse(line)["schema"], "mbobserver.estimate/2");
  const std::string e = slurp(err);
  // Between the two estimates it kept, at least one round of garbage arrived.
  EXPECT_THAT(e, HasSubstr("ignored a datagram that is not a JSON object"));
  EXPECT_THAT(e, ::testing::ContainsRegex("[1-9][0-9]* invalid"));
  EXPECT_THAT(e, ::testing::ContainsRegex("[1-9][0-9]* filtered out"));
}

TEST(Listen, SigtermStopsCleanlyWithASummary) {
  const unsigned short port = free_port();
  const fs::path out = temp_file("term.jsonl"), err = temp_file("term_err.txt");
  Child child({"--port", std::to_string(port), "--bind", "127.0.0.1", "--jsonl", out.string()}, err);
  boost::asio::io_context io;
  PublishConfig c;
  c.port = port;
  UdpPublisher pub(io, c, 0.002);
  // Wait until it is demonstrably receiving, then stop it as systemd would.
  ASSERT_TRUE(keep_sending([&] { pub.send_status(); }, [&] { return !lines_of(out).empty(); }));
  child.signal(SIGTERM);
  EXPECT_EQ(child.wait(), 0) << slurp(err);
  EXPECT_THAT(slurp(err), HasSubstr("SIGTERM: stopping"));
  EXPECT_THAT(slurp(err), HasSubstr("status"));
}

TEST(Listen, TimeoutAndBadUsageExitCodes) {
  const fs::path err = temp_file("usage_err.txt");
  {
    Child child({"--port", std::to_string(free_port()), "--bind", "127.0.0.1", "--timeout", "0.2"}, err);
    EXPECT_EQ(child.wait(), 1);
    EXPECT_THAT(slurp(err), HasSubstr("error: no datagram on port"));
  }
  {
    Child child({"--group", "10.1.2.3"}, err);
    EXPECT_EQ(child.wait(), 2);
    EXPECT_EQ(slurp(err), "mbobserver-listen: --group: expected a multicast address, got \"10.1.2.3\"\n");
  }
  {
    Child child({"--port", "0"}, err);
    EXPECT_EQ(child.wait(), 2);
  }
  {
    Child child({"--jsonl", "/nonexistent-dir/x.jsonl"}, err);
    EXPECT_EQ(child.wait(), 2);
    EXPECT_THAT(slurp(err), HasSubstr("/nonexistent-dir/x.jsonl: cannot open for writing"));
  }
}

TEST(Listen, JoinsAMulticastGroup) {
  std::string itf;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) == 0) {
    for (ifaddrs* a = list; a; a = a->ifa_next)
      if (a->ifa_addr && a->ifa_addr->sa_family == AF_INET && (a->ifa_flags & IFF_UP) &&
          (a->ifa_flags & IFF_MULTICAST) && !(a->ifa_flags & IFF_LOOPBACK)) {
        itf = a->ifa_name;
        break;
      }
    ::freeifaddrs(list);
  }
  if (itf.empty()) GTEST_SKIP() << "no up, multicast-capable IPv4 interface on this host";
  const unsigned short port = free_port();
  const fs::path out = temp_file("mcast.jsonl"), err = temp_file("mcast_err.txt");
  Child child({"--port", std::to_string(port), "--group", "239.255.77.78", "--interface", itf, "--count", "3",
               "--jsonl", out.string()},
              err);
  boost::asio::io_context io;
  PublishConfig c;
  c.address = "239.255.77.78";
  c.port = port;
  c.rate_hz = 500;
  c.multicast = {.ttl = 0, .interface = itf, .loopback = true};  // never leaves this host
  UdpPublisher pub(io, c, 0.002);
  std::uint64_t seq = 0;
  ASSERT_TRUE(
      keep_sending([&] { pub.on_record(mbo::test::sample_estimate(seq++)); }, [&] { return !child.running(); }));
  EXPECT_EQ(child.wait(), 0) << slurp(err);
  EXPECT_EQ(lines_of(out).size(), 3u);
}

// --csv next to --jsonl: the CSV holds every estimate the JSON lines hold, and a Python csv
// reader finds the JSON's values in it, exactly (check_csv.py is the oracle). Part of the run
// sends estimates with one calibration entry more than the first: they fill the known columns
// and are counted.
TEST(Listen, CsvHoldsTheEstimatesOfTheJsonLines) {
  const unsigned short port = free_port();
  const fs::path jsonl = temp_file("csv.jsonl"), csv = temp_file("est.csv"), err = temp_file("csv_err.txt");
  Child child({"--port", std::to_string(port), "--bind", "127.0.0.1", "--jsonl", jsonl.string(), "--csv", csv.string()},
              err);
  boost::asio::io_context io;
  UdpPublisher pub(io, unicast_to(port), 0.002);
  std::uint64_t seq = 0;
  auto send = [&](bool extra_key) {
    mbo::EstimateRecord r = varied_estimate(seq++);
    if (extra_key) r.calibration[10] = {.estimated = true, .converged = true, .value = 0.05, .std = 0.001};
    pub.on_record(r);
    if (seq % 4 == 0) pub.send_status();  // in the JSON lines, not in the CSV
  };
  // Until the child demonstrably writes rows, then a stretch with the extra key, then without.
  ASSERT_TRUE(keep_sending([&] { send(false); }, [&] { return lines_of(csv).size() >= 4; }));
  for (int i = 0; i < 5; ++i) send(true);
  const std::size_t target = lines_of(jsonl).size() + 15;
  ASSERT_TRUE(keep_sending([&] { send(false); }, [&] { return lines_of(jsonl).size() >= target; }));
  child.signal(SIGTERM);
  EXPECT_EQ(child.wait(), 0) << slurp(err);

  std::string report;
  ASSERT_EQ(run("/usr/bin/python3 " MBO_SOURCE_DIR "/tests/runtime/check_csv.py " + csv.string() + " " + jsonl.string(),
                report),
            0)
      << report;
  // rows N mismatched M columns C: the program's summary must say the same.
  unsigned long rows = 0, mismatched = 0, columns = 0;
  ASSERT_EQ(std::sscanf(report.c_str(), "rows %lu mismatched %lu columns %lu", &rows, &mismatched, &columns), 3)
      << report;
  EXPECT_GE(rows, 15u);
  EXPECT_GT(columns, 150u);  // every leaf of an estimate/2
  const std::string e = slurp(err);
  EXPECT_THAT(e, HasSubstr(std::to_string(rows) + " CSV rows (" + std::to_string(columns) + " columns) written to " +
                           csv.string()));
  // Loopback may drop a datagram of the extra-key stretch, but not all five.
  EXPECT_GE(mismatched, 1u);
  EXPECT_THAT(e, HasSubstr(", " + std::to_string(mismatched) + " of them from estimates whose keys differ"));
  const std::string header = lines_of(csv).at(0);
  EXPECT_THAT(header, ::testing::StartsWith("schema,seq,t,t_wall,state.x,state.y,"));
  EXPECT_THAT(header, HasSubstr(",virtual.tyre_fz.fl,virtual.tyre_fz.fr,virtual.tyre_fz.rl,virtual.tyre_fz.rr,"));
  EXPECT_THAT(header, HasSubstr(",std.tyre_fy.rl,"));
  EXPECT_THAT(header, HasSubstr(",health.faults,"));
  EXPECT_THAT(header, HasSubstr(",calibration.gyro_bias_z.value,"));
  EXPECT_THAT(header, ::testing::Not(HasSubstr("gnss_latency")));
}

TEST(Listen, WatchNeedsATerminal) {
  const fs::path err = temp_file("watch_err.txt");
  Child child({"--watch", "--port", std::to_string(free_port())}, err);  // stdout: /dev/null
  EXPECT_EQ(child.wait(), 2);
  EXPECT_EQ(slurp(err),
            "mbobserver-listen: --watch needs a terminal on standard output (use --jsonl or --csv to record)\n");
}

namespace {

// A tmux server of the test's own (-S: a socket in the test's temporary directory, which goes
// with it), killed at the end, with one 160x60 window that
// runs `mbobserver-listen --watch`, then prints its exit code and the terminal's line discipline
// flags (stty) and stays open so that both can be read.
class TmuxWatch {
 public:
  TmuxWatch(const std::string& socket, unsigned short port)
      : tmux_("/usr/bin/tmux -f /dev/null -S " + temp_file(socket).string()) {
    std::string out;
    // Run by bash directly (tmux execs a command given as several words): bash waits out a
    // SIGINT its child handles, where another sh might die of it first.
    const std::string cmd = std::string(MBO_LISTEN) + " --watch --refresh-hz 5 --bind 127.0.0.1 --port " +
                            std::to_string(port) +
                            "; echo EXIT=$?; echo TTY=$(stty -a | tr \" ;\" \"\\n\\n\" | grep -x -e icanon -e -icanon "
                            "-e echo -e -echo | tr \"\\n\" \" \"); sleep 300";
    started_ = run(tmux_ + " new-session -d -x 160 -y 60 /bin/bash -c '" + cmd + "'", out) == 0;
    EXPECT_TRUE(started_) << out;
  }
  ~TmuxWatch() {
    std::string out;
    run(tmux_ + " kill-server", out);
  }
  bool started() const { return started_; }
  std::string capture() {
    std::string out;
    run(tmux_ + " capture-pane -p", out);
    return out;
  }
  void keys(const std::string& k) {
    std::string out;
    EXPECT_EQ(run(tmux_ + " send-keys " + k, out), 0) << out;
  }
  // Polls the pane until it shows `text` (calling `between()` between polls), or 60 s pass.
  template <class F>
  bool wait_for(const std::string& text, F between) {
    const auto give_up = std::chrono::steady_clock::now() + 60s;
    while (capture().find(text) == std::string::npos) {
      if (std::chrono::steady_clock::now() > give_up) return false;
      between();
      std::this_thread::sleep_for(50ms);
    }
    return true;
  }
  bool wait_for(const std::string& text) {
    return wait_for(text, [] {});
  }

 private:
  std::string tmux_;
  bool started_ = false;
};

// Sends the sample status and an estimate with x = `x` (101.25 in the sample), as the
// daemon's serialiser writes them.
struct WatchFeed {
  explicit WatchFeed(unsigned short port)
      : socket(io, boost::asio::ip::udp::v4()), to(boost::asio::ip::make_address("127.0.0.1"), port) {}
  void send(double x) {
    mbo::EstimateRecord r = mbo::test::sample_estimate(seq++);
    r.x = x;
    r.std_tyre_fy = {12.5, 13.25, 9.125, 8};
    socket.send_to(boost::asio::buffer(estimate_json(r)), to);
    socket.send_to(boost::asio::buffer(status_json(mbo::test::sample_status())), to);
  }
  boost::asio::io_context io;
  boost::asio::ip::udp::socket socket;
  boost::asio::ip::udp::endpoint to;
  std::uint64_t seq = 0;
};

}  // namespace

// The live view in a real terminal: it waits, shows what arrives with its 1-sigma, updates,
// says STALE when the datagrams stop, and 'q' quits with 0 and leaves the terminal as it was.
TEST(Listen, WatchShowsUpdatesAndQuitsOnQ) {
  const unsigned short port = free_port();
  TmuxWatch tmux("tmux_q.sock", port);
  ASSERT_TRUE(tmux.started());
  ASSERT_TRUE(tmux.wait_for("waiting for datagrams on port " + std::to_string(port))) << tmux.capture();
  WatchFeed feed(port);
  ASSERT_TRUE(tmux.wait_for("101.250 +-    0.500", [&] { feed.send(101.25); })) << tmux.capture();
  const std::string first = tmux.capture();
  EXPECT_THAT(first, HasSubstr("live"));
  EXPECT_THAT(first, HasSubstr("virtual_sensors INVALID!"));
  EXPECT_THAT(first, HasSubstr("faults reset gnss_timeout   resets 2"));
  EXPECT_THAT(first, ::testing::ContainsRegex("tyre Fy +N +1500\\.0 \\+-   12\\.5  "));  // tyre_forces set
  EXPECT_THAT(first, ::testing::ContainsRegex("slip ratio .*!"));
  EXPECT_THAT(first, ::testing::ContainsRegex("gnss_pos +20\\.5 +100 +3 "));
  EXPECT_THAT(first, ::testing::ContainsRegex("frame_to_step +5000 +700\\.0 +1900\\.0 +2100\\.0 +2500\\.0"));
  EXPECT_THAT(first, HasSubstr("decode errors 4"));
  // A new value replaces the old in place.
  ASSERT_TRUE(tmux.wait_for("202.500 +-    0.500", [&] { feed.send(202.5); })) << tmux.capture();
  EXPECT_THAT(tmux.capture(), ::testing::Not(HasSubstr("101.250")));
  // Nothing more arrives: after a second the view says so (however late this poll looks).
  ASSERT_TRUE(tmux.wait_for("STALE: no datagram for")) << tmux.capture();
  tmux.keys("q");
  ASSERT_TRUE(tmux.wait_for("TTY=")) << tmux.capture();  // printed after EXIT=
  const std::string after = tmux.capture();
  EXPECT_THAT(after, HasSubstr("EXIT=0"));
  EXPECT_THAT(after, HasSubstr("TTY=icanon echo"));  // canonical mode and echo back
  EXPECT_THAT(after, ::testing::Not(HasSubstr("VIRTUAL SENSORS")));  // the alternate screen is gone
  EXPECT_THAT(after, ::testing::ContainsRegex("mbobserver-listen: [1-9][0-9]* datagrams"));
}

TEST(Listen, WatchQuitsOnSigint) {
  const unsigned short port = free_port();
  TmuxWatch tmux("tmux_int.sock", port);
  ASSERT_TRUE(tmux.started());
  WatchFeed feed(port);
  ASSERT_TRUE(tmux.wait_for("101.250 +-    0.500", [&] { feed.send(101.25); })) << tmux.capture();
  tmux.keys("C-c");
  ASSERT_TRUE(tmux.wait_for("TTY=")) << tmux.capture();  // printed after EXIT=
  const std::string after = tmux.capture();
  EXPECT_THAT(after, HasSubstr("EXIT=0"));
  EXPECT_THAT(after, HasSubstr("TTY=icanon echo"));
  EXPECT_THAT(after, ::testing::Not(HasSubstr("VIRTUAL SENSORS")));
}
