// The one include of Boost.Process v2 for src/process, with the includes Boost 1.81 forgets.
// With BOOST_PROCESS_USE_STD_FS its headers still name boost::optional (detail/config.hpp) and
// use unqualified decay / is_convertible / is_constructible / conditional / is_same, which only
// resolve to the boost:: type traits if those were included first.
#pragma once

// The order matters:
// clang-format off
#include <boost/optional.hpp>
#include <boost/type_traits.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/process/v2/environment.hpp>
#include <boost/process/v2/posix/default_launcher.hpp>
#include <boost/process/v2/process.hpp>
// clang-format on
