#pragma once
#include <string_view>
namespace mbo {
inline constexpr std::string_view kVersion = "0.1.0";
}
