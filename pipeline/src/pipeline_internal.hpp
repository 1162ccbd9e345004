// Helpers shared by the pipeline's source files (not installed).
#pragma once

#include <exception>
#include <string>

namespace trellis::detail {

// what() of the exception, or a placeholder for non-standard ones.
std::string describe_exception(const std::exception_ptr& error);

}  // namespace trellis::detail
