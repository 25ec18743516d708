#include "mbobserver/core/input_file.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "mbobserver/core/json_reader.hpp"

namespace mbo {

void require_regular_file(const std::filesystem::path& file) {
  std::error_code ec;
  const auto status = std::filesystem::status(file, ec);
  if (std::filesystem::is_directory(status)) throw ConfigError(file.string() + ": is a folder, not a file");
  if (std::filesystem::exists(status) && !std::filesystem::is_regular_file(status))
    throw ConfigError(file.string() + ": not a regular file (a device, a pipe or a socket)");
}

std::string read_input_file(const std::filesystem::path& file, std::uintmax_t max_bytes, const std::string& kind) {
  require_regular_file(file);
  std::error_code ec;
  const auto status = std::filesystem::status(file, ec);
  if (std::filesystem::is_regular_file(status) && std::filesystem::file_size(file, ec) > max_bytes)
    throw ConfigError(file.string() + ": larger than " + std::to_string(max_bytes >> 20) + " MiB: not a " + kind);
  std::ifstream in(file, std::ios::binary);
  if (!in) throw ConfigError(file.string() + ": cannot open " + kind + ": " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw ConfigError(file.string() + ": cannot read " + kind);
  return ss.str();
}

}  // namespace mbo
