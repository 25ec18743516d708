// Helpers shared by the io tests: fixture paths, scratch files, running the Python oracles.
#pragma once

#include <sys/wait.h>
#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace mbo::test {

inline std::filesystem::path source_dir() { return MBO_SOURCE_DIR; }
// Files of public projects (tests/fixtures/README.md gives their origin and licence).
inline std::filesystem::path fixtures() { return MBO_FIXTURES_DIR; }

// The interpreter that has Debian's python3-can and python3-canmatrix.
inline const char* kPython = "/usr/bin/python3";

// A directory of its own for each test (ctest runs tests in parallel).
inline std::filesystem::path scratch_dir(const std::string& name) {
  auto d = std::filesystem::path(MBO_BINARY_DIR) / "io-test-scratch" / name;
  std::filesystem::create_directories(d);
  return d;
}

inline std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void write_text(const std::filesystem::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary) << text;
}

struct CommandResult {
  int code = -1;
  std::string output;  // stdout and stderr
};

inline CommandResult run_command(const std::string& cmd) {
  CommandResult r;
  std::string full = cmd;
  full.append(" 2>&1");
  FILE* p = popen(full.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf{};
  std::size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) r.output.append(buf.data(), n);
  int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

inline std::string quote(const std::filesystem::path& p) {
  std::string s = "'";
  s.append(p.string());
  s.push_back('\'');
  return s;
}

// "/usr/bin/python3 'script' 'arg'...": built with append (GCC 12 warns falsely, -Wrestrict,
// about chains of std::string operator+).
inline std::string python_command(const std::filesystem::path& script,
                                  std::initializer_list<std::filesystem::path> args) {
  std::string cmd = kPython;
  cmd.push_back(' ');
  cmd.append(quote(script));
  for (const auto& a : args) {
    cmd.push_back(' ');
    cmd.append(quote(a));
  }
  return cmd;
}

inline std::vector<std::filesystem::path> files_with_extension(const std::filesystem::path& dir,
                                                               const std::string& ext) {
  std::vector<std::filesystem::path> out;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir))
    if (e.is_regular_file() && e.path().extension() == ext) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace mbo::test
