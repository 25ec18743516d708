// Reading a whole input file (a configuration, a vehicle, a DBC) that a user names: a folder, a
// device or a pipe is refused before it is opened (/dev/zero would be read for ever), and so is
// a file larger than any such input, each with one message naming the file.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace mbo {

// A ConfigError naming `file` if it is a folder, a device, a pipe or a socket (a file that does
// not exist is left to the caller's open, which says why).
void require_regular_file(const std::filesystem::path& file);

// The text of `file`, or a ConfigError ("FILE: is a folder, not a file", ...); `kind` names
// what the file should be ("DBC file") in the message of a file that cannot be opened.
std::string read_input_file(const std::filesystem::path& file, std::uintmax_t max_bytes, const std::string& kind);

}  // namespace mbo
