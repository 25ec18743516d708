// mbobserver-listen end to end: the real program in a child process, fed by the real
// publisher over loopback. No timing assertions: the publisher keeps sending until the child
// has what it needs (UDP sent before the child binds is simply lost), with a hang guard.
#include <csignal>
#include <filesystem>
#include <fstream>
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

int validate_with_schema(const fs::path& jsonl, std::string& out) {
  const std::string cmd = std::string("/usr/bin/python3 ") + MBO_SOURCE_DIR + "/tests/runtime/validate_jsonl.py " +
                          MBO_SOURCE_DIR + "/docs " + jsonl.string() + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  char buf[512];
  while (p && std::fgets(buf, sizeof buf, p)) out += buf;
  const int status = p ? ::pclose(p) : -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

TEST(Listen, RecordsWhatThePublisherSends) {
  const unsigned short port = free_port();
  const fs::path out = temp_file("est.jsonl"), err = temp_file("err.txt");
  Child child({"--port", std::to_string(port), "--bind", "127.0.0.1", "--count", "5", "--jsonl", out.string(),
               "--timeout", "120"},
              err);
  boost::asio::io_context io;
  PublishConfig c;
  c.port = port;
  c.rate_hz = 500;
  UdpPublisher pub(io, c, 0.002);
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
  PublishConfig c;
  c.port = port;
  c.rate_hz = 500;
  UdpPublisher pub(io, c, 0.002);
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
