// The one way the project includes Boost.Asio. Boost 1.74's awaitable.hpp uses std::exchange
// without including <utility>, which GCC 12 in C++20 mode rejects (docs/dependencies.md, item 1).
#pragma once

#include <utility>

#include <boost/asio.hpp>
