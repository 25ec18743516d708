// The tree `cmake --install` writes (cmake/Install.cmake), as the fixture install.Setup
// installed it into build/test-install: every program with its man page, the configuration,
// schemas, scenarios, docs and the unit in the GNU install directories, and the installed
// programs working from there.
#include <unistd.h>

#include <fstream>
#include <set>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "install_tree.hpp"

using namespace mbo::itest;
using ::testing::HasSubstr;

namespace {

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// help2man writes '-' as "\-".
std::string roff(const std::string& s) {
  std::string out;
  for (char c : s) out += c == '-' ? std::string("\\-") : std::string(1, c);
  return out;
}

// The options ("--name") and positional arguments a program's --help lists (CLI11's layout:
// "Positionals:" and "Options:" blocks of two-space-indented lines).
std::vector<std::string> arguments_in_help(const std::string& help) {
  std::vector<std::string> found;
  bool positionals = false;
  for (const auto& line : split(help, '\n')) {
    if (line.rfind("Positionals:", 0) == 0 || line.rfind("Options:", 0) == 0) {
      positionals = line[0] == 'P';
      continue;
    }
    if (line.rfind("  ", 0) != 0 || line.size() < 3 || line[2] == ' ') continue;  // not an entry's first line
    const std::string entry = line.substr(2, line.find(' ', 2) - 2);
    if (positionals) {
      found.push_back(entry);
      continue;
    }
    for (auto at = entry.find("--"); at != std::string::npos; at = entry.find("--", at + 2)) {
      auto end = entry.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_-", at + 2);
      found.push_back(entry.substr(at, end == std::string::npos ? std::string::npos : end - at));
    }
  }
  return found;
}

std::set<std::string> file_names(const fs::path& dir, const std::string& extension) {
  std::set<std::string> names;
  if (fs::is_directory(dir))
    for (const auto& e : fs::directory_iterator(dir))
      if (e.is_regular_file() && e.path().extension() == extension) names.insert(e.path().filename().string());
  return names;
}

// Every "model" and "vehicle" string of a scenario or configuration: the files it names.
void referenced_files(const nlohmann::json& j, std::vector<std::string>& out) {
  if (j.is_object()) {
    for (const auto& [key, value] : j.items()) {
      if ((key == "model" || key == "vehicle") && value.is_string()) out.push_back(value.get<std::string>());
      referenced_files(value, out);
    }
  } else if (j.is_array()) {
    for (const auto& v : j) referenced_files(v, out);
  }
}

}  // namespace

TEST(InstallLayout, EveryProgramAndItsManPage) {
  MBO_SKIP_UNLESS_INSTALLED();
  const Tree tree = installed();
  // mbobserver-bench only where the bench is built (MBO_BUILD_BENCH; not in the sanitizer build)
  for (const char* name : {"mbobserverd", "mbobserver-sim", "mbobserver-eval", "mbobserver-experiment",
                           "mbobserver-candecode", "mbobserver-listen"})
    ASSERT_THAT(programs(), ::testing::Contains(name)) << MBO_PROGRAMS;
  for (const auto& name : programs()) {
    SCOPED_TRACE(name);
    const fs::path program = tree.bin() / name;
    ASSERT_TRUE(fs::exists(program));
    EXPECT_NE(fs::status(program).permissions() & fs::perms::others_exec, fs::perms::none);
    const fs::path page = tree.man1() / (name + ".1");
    ASSERT_TRUE(fs::exists(page));
    const std::string text = read(page);
    // help2man's header with --version's version, the hand-written NAME line, the options of --help
    EXPECT_THAT(text, HasSubstr(".TH " + upper(name) + " \"1\""));
    EXPECT_THAT(text, HasSubstr("\"mbobserver " + std::string(MBO_PROJECT_VERSION) + "\""));
    EXPECT_THAT(text, HasSubstr(".SH NAME\n" + name + " \\- "));
    EXPECT_THAT(text, HasSubstr(".SH OPTIONS\n")) << "no options: help2man could not run " << name;
    // everything --help lists, the positional arguments included
    const Command help = run(quoted(program.string()) + " --help");
    ASSERT_EQ(help.code, 0) << help.out;
    const auto arguments = arguments_in_help(help.out);
    EXPECT_GE(arguments.size(), 3u) << help.out;
    for (const auto& a : arguments) EXPECT_THAT(text, HasSubstr(roff(a))) << "not in the man page: " << a;
    EXPECT_THAT(text, HasSubstr(".SH \"SEE ALSO\"")) << text;
  }
  // nothing else in bin/ or man1/
  EXPECT_EQ(file_names(tree.man1(), ".1").size(), programs().size());
  std::size_t in_bin = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(tree.bin())) ++in_bin;
  EXPECT_EQ(in_bin, programs().size());
}

TEST(InstallLayout, ConfigurationSchemasScenariosDocsAndUnit) {
  MBO_SKIP_UNLESS_INSTALLED();
  const Tree tree = installed();
  const fs::path src = MBO_SOURCE_DIR;
  // the configuration to edit, and the shipped copy the scenarios name
  for (const fs::path& root : {tree.etc(), tree.data() / "config"})
    for (const char* f : {"mbobserver.json", "vehicles/sedan.json", "vehicles/van.json", "can/vehicle.dbc",
                          "can/vehicle_signals.json", "models/fourbar.json"}) {
      SCOPED_TRACE(root / f);
      ASSERT_TRUE(fs::exists(root / f));
      EXPECT_EQ(read(root / f), read(src / "config" / f));
      EXPECT_NE(fs::status(root / f).permissions() & fs::perms::others_read, fs::perms::none)
          << "the service's dynamic user must read it";
    }
  for (const char* f : {"estimate.schema.json", "status.schema.json", "summary.schema.json"}) {
    ASSERT_TRUE(fs::exists(tree.data() / "schemas" / f)) << f;
    EXPECT_EQ(read(tree.data() / "schemas" / f), read(src / "docs" / f));
  }
  EXPECT_EQ(file_names(tree.data() / "scenarios", ".json"), file_names(src / "scenarios", ".json"));
  std::set<std::string> docs = file_names(src / "docs", ".md");
  EXPECT_FALSE(docs.empty());
  for (const auto& d : docs) EXPECT_TRUE(fs::exists(tree.doc() / d)) << d;
  for (const char* f : {"README.md", "CHANGELOG.md", "CONTRIBUTING.md", "LICENSE"})
    EXPECT_TRUE(fs::exists(tree.doc() / f)) << f;
  EXPECT_TRUE(fs::exists(tree.unit())) << tree.unit();
}

TEST(InstallLayout, InstalledScenariosAndConfigurationFindTheirFiles) {
  MBO_SKIP_UNLESS_INSTALLED();
  const Tree tree = installed();
  std::vector<fs::path> files = {tree.etc() / "mbobserver.json"};
  for (const auto& name : file_names(tree.data() / "scenarios", ".json"))
    files.push_back(tree.data() / "scenarios" / name);
  // the robustness suite, one folder down (its files name ../../config/...)
  const auto suite = file_names(tree.data() / "scenarios" / "robustness", ".json");
  EXPECT_EQ(suite, file_names(fs::path(MBO_SOURCE_DIR) / "scenarios" / "robustness", ".json"));
  for (const auto& name : suite) files.push_back(tree.data() / "scenarios" / "robustness" / name);
  std::size_t references = 0;
  for (const auto& file : files) {
    SCOPED_TRACE(file);
    std::vector<std::string> names;
    referenced_files(nlohmann::json::parse(read(file)), names);
    for (const auto& n : names) {
      ++references;
      EXPECT_TRUE(fs::exists(file.parent_path() / n)) << n;
    }
  }
  EXPECT_GE(references, files.size());
}

TEST(InstallLayout, InstalledDaemonAcceptsTheInstalledConfiguration) {
  MBO_SKIP_UNLESS_INSTALLED();
  const Tree tree = installed();
  const fs::path config = tree.etc() / "mbobserver.json";
  const Command r =
      run(quoted((tree.bin() / "mbobserverd").string()) + " --config " + quoted(config.string()) + " --check-config");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr(config.string() + ": configuration OK"));
}

TEST(InstallLayout, InstalledExperimentRunsAnInstalledScenario) {
  MBO_SKIP_UNLESS_INSTALLED();
  const Tree tree = installed();
  const fs::path scenario = tree.data() / "scenarios" / "fourbar_sinigaglia.json";
  const Command r =
      run(quoted((tree.bin() / "mbobserver-experiment").string()) + " " + quoted(scenario.string()) + " 2>/dev/null");
  ASSERT_EQ(r.code, 0) << r.out;
  const auto report = nlohmann::json::parse(r.out);
  EXPECT_LT(report.at("rmse").at("observer").at("x1").get<double>(),
            report.at("rmse").at("model").at("x1").get<double>());
}

TEST(InstallLayout, ReinstallKeepsAnEditedConfiguration) {
  MBO_SKIP_UNLESS_INSTALLED();
  const fs::path prefix = fs::path(MBO_BINARY_DIR) / ("test-reinstall-" + std::to_string(::getpid()));
  struct Remove {
    fs::path p;
    ~Remove() {
      std::error_code ec;
      fs::remove_all(p, ec);
    }
  } remove{prefix};
  const std::string install = std::string(quoted(MBO_CMAKE_COMMAND)) + " --install " + quoted(MBO_BINARY_DIR) +
                              " --prefix " + quoted(prefix.string());
  Command r = run(install);
  ASSERT_EQ(r.code, 0) << r.out;
  const Tree tree{prefix};
  const fs::path config = tree.etc() / "mbobserver.json";
  const std::string shipped = read(config);
  ASSERT_FALSE(shipped.empty());
  const std::string edited = shipped + "\n";
  std::ofstream(config, std::ios::binary) << edited;

  r = run(install);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(read(config), edited) << "the owner's edit was overwritten";
  EXPECT_EQ(read(config.string() + ".new"), shipped);
  EXPECT_THAT(r.out, HasSubstr("Kept (edited): " + config.string()));
  // files nobody edited are simply installed again
  EXPECT_FALSE(fs::exists(tree.etc() / "vehicles" / "sedan.json.new"));
  EXPECT_EQ(read(tree.etc() / "vehicles" / "sedan.json"),
            read(fs::path(MBO_SOURCE_DIR) / "config/vehicles/sedan.json"));
}
