// User events the framework itself fires through user_event_triggered (half-closure of a
// connection). Handlers test for them with `evt.is<ChannelInputShutdownEvent>()`.
#pragma once

namespace trellis {

/// The peer shut down its output (we read EOF) while our output stays open (half-closure).
struct ChannelInputShutdownEvent {};
/// Fired after the last channel_read_complete of a half-closed input.
struct ChannelInputShutdownReadComplete {};
/// Our output was shut down (shutdown_output or a write failure on a half-closed socket).
struct ChannelOutputShutdownEvent {};

}  // namespace trellis
