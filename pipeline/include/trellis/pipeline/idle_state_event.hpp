// IdleStateEvent: the user event IdleStateHandler fires when a channel has not read, not
// written, or done neither for the configured time. Test for it with `evt.is<IdleStateEvent>()`.
#pragma once

namespace trellis {

/// Which kind of idleness an IdleStateEvent reports.
enum class IdleState {
  reader_idle,  ///< Nothing was read for the reader-idle time.
  writer_idle,  ///< Nothing was written for the writer-idle time.
  all_idle,     ///< Neither read nor written for the all-idle time.
};

/// The user event IdleStateHandler fires when a channel has not read, not written, or done
/// neither for the configured time. Test for it with `evt.is<IdleStateEvent>()`.
struct IdleStateEvent {
  /// Which kind of idleness.
  IdleState state;
  /// True for the first event of a period of idleness; false for each further period with no
  /// activity in between.
  bool first;

  /// Equal state and first flag.
  friend bool operator==(const IdleStateEvent&, const IdleStateEvent&) = default;
};

/// The state's name: "reader_idle", "writer_idle" or "all_idle".
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
