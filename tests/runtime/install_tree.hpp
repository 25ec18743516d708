// What the install tests share: the tree the ctest fixture install.Setup wrote with
// `cmake --install build --prefix build/test-install` (cmake/ProgramTests.cmake), its
// directories as the build configured them (GNUInstallDirs), and running commands.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace mbo::itest {

namespace fs = std::filesystem;

struct Command {
  int code = -1;  // exit status, -1 if it did not exit
  std::string out;  // stdout and stderr together
};

// Runs `cmd` with sh -c, stderr merged into stdout.
Command run(const std::string& cmd);
// 'text' quoted for sh.
std::string quoted(const std::string& text);
std::string read(const fs::path& file);
std::vector<std::string> split(const std::string& text, char sep);

// The programs (mbo_install_program), by name.
std::vector<std::string> programs();

// Why the installed tree cannot be checked here ("" when it can): a directory configured
// absolute, or a prefix under /opt, is not installed into the test prefix.
std::string why_not_installed();

// The directories of an install into `prefix`, as cmake/install_config_and_unit.cmake.in and
// the install() rules place them.
struct Tree {
  fs::path prefix;
  fs::path bin() const;
  fs::path etc() const;  // <sysconfdir>/mbobserver
  fs::path data() const;  // <datadir>/mbobserver
  fs::path doc() const;
  fs::path man1() const;
  fs::path unit() const;  // <unitdir>/mbobserver.service
};

// The fixture's tree (build/test-install).
Tree installed();

}  // namespace mbo::itest

// In a test body: skips when the tree cannot be installed here, fails when install.Setup left
// no tree.
#define MBO_SKIP_UNLESS_INSTALLED()                                                            \
  do {                                                                                         \
    if (const auto why = ::mbo::itest::why_not_installed(); !why.empty()) GTEST_SKIP() << why; \
    ASSERT_TRUE(::mbo::itest::fs::exists(::mbo::itest::installed().bin() / "mbobserverd"))     \
        << "install.Setup did not install into " << ::mbo::itest::installed().prefix;          \
  } while (0)
