// The one version number: CMake's project(VERSION), passed to every target (ProjectOptions.cmake).
#pragma once
#include <string_view>
namespace mbo {
inline constexpr std::string_view kVersion = MBO_VERSION;
}
