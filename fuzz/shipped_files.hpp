// For the fuzz targets of the JSON readers: a scratch folder that sees the repository's shipped
// files, and a guard that keeps a fuzzed input's file references to them (a fuzzed path could
// name a FIFO or /dev/zero and hang the run).
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <initializer_list>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

namespace mbo::fuzz {

// A new folder under /tmp with `links` (name -> path under the repository) as symbolic links.
inline std::filesystem::path scratch_folder(const char* tag,
                                            std::initializer_list<std::pair<const char*, const char*>> links) {
  std::string tmpl = std::string("/tmp/mbo-fuzz-") + tag + "-XXXXXX";
  if (!::mkdtemp(tmpl.data())) std::abort();
  const std::filesystem::path dir = tmpl;
  for (const auto& [name, target] : links)
    std::filesystem::create_directory_symlink(std::filesystem::path(MBO_ROOT_DIR) / target, dir / name);
  return dir;
}

// `v` becomes the first of `shipped` unless it already names one of them.
inline void keep_to(nlohmann::json& v, std::initializer_list<const char*> shipped) {
  if (v.is_string())
    for (const char* s : shipped)
      if (v.get<std::string>() == s) return;
  v = *shipped.begin();
}

// The input with its references kept to the shipped files by `fix` when it is a JSON object,
// else the bytes as they are (the reader's own parse errors).
template <class Fix>
std::string with_shipped_files(const std::uint8_t* data, std::size_t size, Fix&& fix) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object()) return text;
  fix(j);
  return j.dump();
}

}  // namespace mbo::fuzz
