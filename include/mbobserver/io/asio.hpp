// The one io header that includes Boost.Asio. Boost 1.74's Asio uses std::exchange without
// including <utility>, which breaks under C++20 with GCC 12 (docs/dependencies.md): include it
// first, here, and include Asio only through this header.
#pragma once

#include <utility>

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/serial_port.hpp>
#include <boost/asio/steady_timer.hpp>
