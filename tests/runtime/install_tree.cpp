#include "install_tree.hpp"

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace mbo::itest {

Command run(const std::string& cmd) {
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  std::string out;
  std::array<char, 512> buf{};
  while (p && std::fgets(buf.data(), buf.size(), p)) out += buf.data();
  const int status = p ? ::pclose(p) : -1;
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

std::string quoted(const std::string& text) {
  std::string q = "'";
  for (char c : text) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string read(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream in(text);
  while (std::getline(in, part, sep))
    if (!part.empty()) parts.push_back(part);
  return parts;
}

std::vector<std::string> programs() { return split(MBO_PROGRAMS, ':'); }

std::string why_not_installed() {
  for (const char* dir : {MBO_INSTALL_BINDIR, MBO_INSTALL_SYSCONFDIR, MBO_INSTALL_DATADIR, MBO_INSTALL_DOCDIR,
                          MBO_INSTALL_MANDIR, MBO_INSTALL_UNITDIR})
    if (fs::path(dir).is_absolute())
      return std::string("install directory ") + dir + " is absolute: the build is not installed into a test prefix";
  if (std::string(MBO_TEST_PREFIX).starts_with("/opt/"))
    return "the test prefix is under /opt, whose etc/ would be /etc/opt/...: not installed";
  return "";
}

fs::path Tree::bin() const { return prefix / MBO_INSTALL_BINDIR; }
fs::path Tree::etc() const { return prefix / MBO_INSTALL_SYSCONFDIR / "mbobserver"; }
fs::path Tree::data() const { return prefix / MBO_INSTALL_DATADIR / "mbobserver"; }
fs::path Tree::doc() const { return prefix / MBO_INSTALL_DOCDIR; }
fs::path Tree::man1() const { return prefix / MBO_INSTALL_MANDIR / "man1"; }
fs::path Tree::unit() const { return prefix / MBO_INSTALL_UNITDIR / "mbobserver.service"; }

Tree installed() { return Tree{fs::path(MBO_TEST_PREFIX)}; }

}  // namespace mbo::itest
