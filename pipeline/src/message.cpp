// Out-of-line parts of Message (see message.hpp).
#include <trellis/pipeline/message.hpp>

namespace trellis::detail {

void throw_wrong_message_type(std::string_view held, std::string_view wanted) {
  std::string what = "message holds ";
  what.append(held).append(", not ").append(wanted);
  throw WrongTypeError(what);
}

void throw_not_copyable_message(std::string_view held) {
  std::string what = "message holds ";
  what.append(held).append(", which cannot be copied");
  throw WrongTypeError(what);
}

}  // namespace trellis::detail
