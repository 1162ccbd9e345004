// ChannelGroup: a thread-safe set of open channels (on any loops) that can be written to,
// flushed and closed as one, as Netty's DefaultChannelGroup: a broadcast to every connected
// client, or closing every connection at shutdown. A closed channel leaves the group by itself.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include <trellis/pipeline/channel.hpp>
#include <trellis/pipeline/channel_group_error.hpp>
#include <trellis/pipeline/channel_id.hpp>
#include <trellis/pipeline/channel_matcher.hpp>
#include <trellis/pipeline/future.hpp>
#include <trellis/pipeline/message.hpp>

namespace trellis {

/// A set of open channels (on any loops) that can be written to, flushed and closed as one: a
/// broadcast to every connected client, or closing every connection at shutdown. A closed
/// channel leaves the group by itself.
///
/// Threading: every member function may be called from any thread (a handler on any loop included);
/// each operation on a channel runs on that channel's loop, through the channel's own thread-safe
/// entry points (Channel::write_and_flush, Channel::close...).
///
/// Membership: the group holds its channels by weak reference. An open channel is kept alive by
/// its transport (a registered socket channel holds itself) or its owner (a test's
/// EmbeddedChannel::create), and leaves the group when its close future completes, so the group
/// never owns, nor ends the life of, a channel: destroying the group with members still open
/// leaves them open, and a channel that closes during a broadcast is simply one whose write
/// fails (ClosedChannelError).
///
/// Back-pressure: a member whose peer does not read turns unwritable (its outbound buffer passed
/// the high water mark). By default a broadcast writes to it all the same, as Netty does, so its
/// buffer grows with every message; set_unwritable_policy() lets the group skip such a member or
/// close it once its backlog passes a bound, so one peer that never reads cannot grow the
/// process's memory without bound.
///
/// Group operations return a Future<void> that completes when the operation has completed on
/// every channel it went to: successfully when all succeeded, else with a ChannelGroupError that
/// names each failed channel and its error. The listeners of these futures run on the group's
/// executor (nullptr: on the loop of the channel whose operation completed last); do not block
/// on them from a member channel's loop.
class ChannelGroup {
 public:
  /// What a broadcast (write, write_and_flush) does with a member whose peer does not keep up.
  /// The decision is taken for each member on its own loop, when the message reaches it.
  enum class UnwritablePolicy {
    /// Write whatever the member's writability (the default): its outbound buffer may grow
    /// without bound.
    kWrite,
    /// Do not write to a member that is not writable (Channel::is_writable()): it misses the
    /// message, and its part of the operation fails with UnwritableChannelError.
    kSkip,
    /// Write while the member's backlog (the bytes queued in its outbound buffer, flushed or
    /// not) plus the message stays within max_backlog_bytes(); otherwise close the member
    /// instead of writing, and its part of the operation fails with UnwritableChannelError.
    kCloseAbove,
  };

  /// An empty group. `name` appears in its errors; `executor` runs the listeners of the group
  /// futures (nullptr: the loop of the channel whose operation completed last).
  explicit ChannelGroup(std::string name = "channel-group", EventExecutor* executor = nullptr);
  ChannelGroup(const ChannelGroup&) = delete;
  ChannelGroup& operator=(const ChannelGroup&) = delete;
  /// Forgets the members (they stay open); pending group futures still complete.
  ~ChannelGroup();

  /// The group's name.
  const std::string& name() const noexcept { return name_; }
  /// The executor of the group futures' listeners (may be nullptr).
  EventExecutor* executor() const noexcept { return executor_; }

  /// @name Adding members
  ///@{

  /// Adds a channel; false when it is already a member. A channel added after it closed leaves
  /// again as soon as its close future's listener runs. add(Channel&) shares the channel through
  /// Channel::shared_owner(), so a handler can write `group.add(ctx.channel())`; a channel with no
  /// shared owner (an EmbeddedChannel on a test's stack) is refused with InvalidArgumentError.
  bool add(Channel& channel);
  bool add(const std::shared_ptr<Channel>& channel);
  ///@}

  /// @name Removing members
  ///@{

  /// Removes a member (by the channel or its id); false when it was not one.
  bool remove(const Channel& channel);
  bool remove(const ChannelId& id);
  ///@}

  /// The member with this id, or nullptr.
  std::shared_ptr<Channel> find(const ChannelId& id) const;
  /// True when `channel` is a member.
  bool contains(const Channel& channel) const;
  /// The number of members.
  std::size_t size() const;
  /// True when the group has no member.
  bool empty() const { return size() == 0; }
  /// The members at this moment.
  std::vector<std::shared_ptr<Channel>> channels() const;

  /// @name Back-pressure
  ///@{

  /// Sets what later broadcasts do with members that do not keep up (from any thread); see
  /// UnwritablePolicy. `max_backlog_bytes` is the bound of kCloseAbove (ignored otherwise).
  /// Throws InvalidArgumentError for kCloseAbove with a bound of 0.
  void set_unwritable_policy(UnwritablePolicy policy, std::size_t max_backlog_bytes = 0);
  /// The policy for members that do not keep up (kWrite unless set).
  UnwritablePolicy unwritable_policy() const noexcept;
  /// The backlog bound of UnwritablePolicy::kCloseAbove, in bytes (0 unless set).
  std::size_t max_backlog_bytes() const noexcept;
  ///@}

  /// @name Broadcasting
  ///@{

  /// Writes `msg` to every member the matcher picks (all for an empty matcher), without / with a
  /// flush. A ByteBuf is not copied: each channel gets a slice of the same storage (its own
  /// indexes, the bytes shared; the storage is freed when the last channel has written it). Any
  /// other message is copied per channel (Message::clone()); a message that cannot be copied is
  /// refused with WrongTypeError before anything is written. Members that do not keep up are
  /// treated as unwritable_policy() says.
  Future<void> write(Message msg, const ChannelMatcher& matcher = {});
  Future<void> write_and_flush(Message msg, const ChannelMatcher& matcher = {});
  ///@}

  /// Flushes every member the matcher picks.
  void flush(const ChannelMatcher& matcher = {});
  /// Closes every member the matcher picks; the future completes when all have closed.
  Future<void> close(const ChannelMatcher& matcher = {});
  /// Completes when every member the matcher picks (at the time of the call) has closed, however
  /// it closed (Netty's newCloseFuture).
  Future<void> close_future(const ChannelMatcher& matcher = {}) const;

 private:
  struct State;
  struct Operation;

  std::vector<std::shared_ptr<Channel>> matching(const ChannelMatcher& matcher) const;
  Future<void> broadcast(Message msg, const ChannelMatcher& matcher, bool flush,
                         const char* operation);

  std::string name_;
  EventExecutor* executor_;
  std::shared_ptr<State> state_;
  std::atomic<UnwritablePolicy> unwritable_policy_{UnwritablePolicy::kWrite};
  std::atomic<std::size_t> max_backlog_bytes_{0};
};

}  // namespace trellis
