// IdleStateEvent: the user event IdleStateHandler fires when a channel has not read, not
// written, or done neither for the configured time. Test for it with `evt.is<IdleStateEvent>()`.
#pragma once

namespace trellis {

enum class IdleState {
  reader_idle,  // nothing was read for reader_idle time
  writer_idle,  // nothing was written for writer_idle time
  all_idle,     // neither read nor written for all_idle time
};

struct IdleStateEvent {
  IdleState state;
  // True for the first event of a period of idleness; false for each further period with no
  // activity in between.
  bool first;

  friend bool operator==(const IdleStateEvent&, const IdleStateEvent&) = default;
};

// "reader_idle", "writer_idle" or "all_idle".
constexpr const char* to_string(IdleState state) noexcept {
  switch (state) {
    case IdleState::reader_idle:
      return "reader_idle";
    case IdleState::writer_idle:
      return "writer_idle";
    case IdleState::all_idle:
      return "all_idle";
  }
  return "unknown";
}

}  // namespace trellis
