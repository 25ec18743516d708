#include "harness.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace mbo::dtest {

namespace {

const fs::path& temp_dir() {
  static const struct TempDir {
    fs::path path = fs::temp_directory_path() / ("mbo_daemon_" + std::to_string(::getpid()));
    TempDir() { fs::create_directories(path); }
    ~TempDir() {
      std::error_code ec;
      fs::remove_all(path, ec);
    }
  } dir;
  return dir.path;
}

}  // namespace

fs::path temp_path(const std::string& name) {
  const fs::path p = temp_dir() / name;
  std::error_code ec;
  fs::remove(p, ec);
  return p;
}

std::string slurp(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_file(const fs::path& file, const std::string& text) {
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out) throw std::runtime_error(file.string() + ": cannot write");
}

std::vector<std::string> lines_of(const fs::path& file) {
  std::vector<std::string> out;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

json read_json(const fs::path& file) {
  std::ifstream in(file);
  if (!in) return json{};
  return json::parse(in);
}

std::string first_difference(const std::string& a, const std::string& b) {
  if (a == b) return "";
  std::size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  const long line = 1 + std::count(a.begin(), a.begin() + static_cast<long>(i), '\n');
  // some context before the first differing byte, and what follows it in each
  const std::size_t from = i > 80 ? i - 80 : 0;
  auto around = [&](const std::string& s) {
    return i >= s.size() ? std::string("(end)") : s.substr(from, i - from + 80);
  };
  return "first difference at byte " + std::to_string(i) + ", line " + std::to_string(line) + ":\n  " + around(a) +
         "\n  " + around(b) + "\n(" + std::to_string(a.size()) + " vs " + std::to_string(b.size()) + " bytes)";
}

// ---- child processes ----

Child::Child(const std::string& program, const std::vector<std::string>& args, const std::string& tag)
    : out_(temp_path(tag + ".stdout")), err_(temp_path(tag + ".stderr")) {
  std::vector<std::string> a = args;
  a.insert(a.begin(), program);
  std::vector<char*> argv;
  for (auto& s : a) argv.push_back(s.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, out_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, err_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  const int rc = ::posix_spawn(&pid_, program.c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) throw std::runtime_error(program + ": posix_spawn: " + std::strerror(rc));
}

Child::~Child() {
  if (running()) {
    ::kill(pid_, SIGKILL);
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
  }
}

void Child::record(int status) {
  exited_ = true;
  code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

bool Child::running() {
  if (exited_) return false;
  int status = 0;
  if (::waitpid(pid_, &status, WNOHANG) == pid_) record(status);
  return !exited_;
}

void Child::signal(int signo) {
  if (!exited_) ::kill(pid_, signo);
}

Result Child::wait(double guard_s) {
  std::string note;
  if (!poll_until([this] { return !running(); }, guard_s)) {
    ::kill(pid_, SIGKILL);
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    record(status);
    note = "\n[killed by the test's hang guard after " + std::to_string(guard_s) + " s]\n";
  }
  return {code_, slurp(out_), slurp(err_) + note};
}

Result run(const std::string& program, const std::vector<std::string>& args, const std::string& tag) {
  Child c(program, args, tag);
  return c.wait();
}

Result validate_with_schemas(const fs::path& jsonl) {
  const std::string cmd = std::string("/usr/bin/python3 ") + MBO_SOURCE_DIR + "/tests/runtime/validate_jsonl.py " +
                          MBO_SOURCE_DIR + "/docs " + jsonl.string() + " 2>&1";
  Result r;
  FILE* p = ::popen(cmd.c_str(), "r");
  char buf[512];
  while (p && std::fgets(buf, sizeof buf, p)) r.out += buf;
  const int status = p ? ::pclose(p) : -1;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

bool poll_until(const std::function<bool()>& done, double guard_s) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::duration<double>(guard_s);
  while (!done()) {
    if (std::chrono::steady_clock::now() > give_up) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

// ---- configuration ----

json default_config() {
  const fs::path file = fs::path(MBO_SOURCE_DIR) / "config" / "mbobserver.json";
  json c = read_json(file);
  const fs::path dir = file.parent_path();
  c["vehicle"] = (dir / c["vehicle"].get<std::string>()).string();
  json& dbc = c["can"]["dbc"];
  if (dbc.is_string()) dbc = json::array({dbc});
  for (auto& d : dbc) d = (dir / d.get<std::string>()).string();
  c["publish"]["enabled"] = false;
  return c;
}

fs::path write_config(const json& config, const std::string& name) {
  const fs::path p = temp_path(name + ".json");
  write_file(p, config.dump(2));
  return p;
}

const fs::path& default_config_file() {
  static const fs::path c = write_config(default_config(), "config");
  return c;
}

// ---- the drive ----

fs::path drive_log() { return MBO_DRIVE_LOG; }
fs::path drive_truth() { return MBO_DRIVE_TRUTH; }

// ---- candump lines ----

double frame_time(const std::string& line) {
  const auto close = line.find(')');
  if (line.empty() || line[0] != '(' || close == std::string::npos)
    throw std::runtime_error("not a candump line: " + line);
  return std::stod(line.substr(1, close - 1));
}

std::uint32_t frame_id(const std::string& line) {
  const auto hash = line.find('#');
  const auto space = line.rfind(' ', hash);
  return static_cast<std::uint32_t>(std::stoul(line.substr(space + 1, hash - space - 1), nullptr, 16));
}

std::string with_time(const std::string& line, double t) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "(%.6f)", t);
  return buf + line.substr(line.find(')') + 1);
}

std::string with_data(const std::string& line, const std::string& hex) {
  return line.substr(0, line.find('#') + 1) + hex;
}

std::string candump_line(double t, const std::string& id_hex, const std::string& data_hex) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "(%.6f)", t);
  return std::string(buf) + " can0 " + id_hex + "#" + data_hex;
}

std::string le_double_hex(double v) {
  unsigned char b[8];
  std::memcpy(b, &v, 8);  // the DBC's byte order is Intel; so is every host this builds on
  std::string s;
  char h[3];
  for (unsigned char c : b) {
    std::snprintf(h, sizeof h, "%02X", c);
    s += h;
  }
  return s;
}

CandumpLog CandumpLog::read(const fs::path& file) {
  CandumpLog log;
  log.lines = lines_of(file);
  if (log.lines.empty()) throw std::runtime_error(file.string() + ": empty log");
  return log;
}

CandumpLog CandumpLog::first_seconds(double seconds) const {
  CandumpLog out;
  const double end = t0() + seconds;
  for (const auto& l : lines)
    if (frame_time(l) < end - 1e-7) out.lines.push_back(l);
  return out;
}

CandumpLog CandumpLog::without_ids_from(const std::vector<std::uint32_t>& ids, double from_s) const {
  CandumpLog out;
  const double from = t0() + from_s;
  for (const auto& l : lines) {
    const bool cut = frame_time(l) >= from - 1e-7 && std::find(ids.begin(), ids.end(), frame_id(l)) != ids.end();
    if (!cut) out.lines.push_back(l);
  }
  return out;
}

std::string CandumpLog::text() const {
  std::string s;
  for (const auto& l : lines) s += l + "\n";
  return s;
}

fs::path CandumpLog::write(const std::string& name) const {
  const fs::path p = temp_path(name + ".log");
  write_file(p, text());
  return p;
}

const CandumpLog& drive_piece(double seconds) {
  // std::map: its elements stay where they are as others are added
  static std::map<double, CandumpLog> pieces;
  auto it = pieces.find(seconds);
  if (it == pieces.end()) it = pieces.emplace(seconds, CandumpLog::read(drive_log()).first_seconds(seconds)).first;
  return it->second;
}

// ---- the daemon ----

std::vector<json> Replay::records() const {
  std::vector<json> out;
  for (const auto& l : lines_of(record)) out.push_back(json::parse(l));
  return out;
}

Replay replay(const fs::path& config, const fs::path& log, const std::string& tag,
              const std::vector<std::string>& extra, const std::string& rate) {
  Replay r;
  r.record = temp_path(tag + ".jsonl");
  const fs::path summary = temp_path(tag + ".summary.json");
  std::vector<std::string> args = {
      "--config", config.string(),   "--replay",       log.string(),     "--rate",       rate,
      "--record", r.record.string(), "--summary-json", summary.string(), "--no-progress"};
  args.insert(args.end(), extra.begin(), extra.end());
  r.result = run(MBO_DAEMON, args, tag);
  if (fs::exists(summary)) r.summary = read_json(summary);
  return r;
}

}  // namespace mbo::dtest
