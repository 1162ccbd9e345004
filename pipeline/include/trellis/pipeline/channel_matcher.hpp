// ChannelMatcher: picks the members of a ChannelGroup that a group operation goes to (Netty's
// ChannelMatcher), and the usual ones in channel_matchers (all, is, is_not).
#pragma once

#include <functional>

#include <trellis/pipeline/channel.hpp>

namespace trellis {

/// Picks the members of a ChannelGroup that a group operation goes to (see channel_matchers for
/// the usual ones). Called on the thread of the group operation, not on the channel's loop: look
/// only at what a channel answers from any thread (id(), parent(), the attributes you set before
/// adding it). An empty matcher matches every channel.
using ChannelMatcher = std::function<bool(const Channel&)>;

/// The usual matchers.
namespace channel_matchers {

/// Every channel.
ChannelMatcher all();
/// Only `channel` (compared by id, so the matcher does not keep it alive).
ChannelMatcher is(const Channel& channel);
/// Every channel but `channel`: a chat server's "everyone but the sender".
ChannelMatcher is_not(const Channel& channel);
/// Channels that accept others (no parent).
ChannelMatcher is_parent();
/// Accepted channels (a server's children).
ChannelMatcher is_child();

}  // namespace channel_matchers

}  // namespace trellis
