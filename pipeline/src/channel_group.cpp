#include <trellis/pipeline/channel_group.hpp>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <unordered_map>
#include <utility>

#include <trellis/pipeline/channel_promise.hpp>
#include <trellis/pipeline/promise.hpp>

namespace trellis {

// --- ChannelGroupError ------------------------------------------------------------------------

namespace {

std::string describe(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "a non-standard exception";
  }
}

std::string describe_failures(const std::string& group, const std::string& operation,
                              std::size_t attempted,
                              std::vector<ChannelGroupError::Failure>& failures) {
  std::sort(failures.begin(), failures.end(),
            [](const auto& a, const auto& b) { return a.channel < b.channel; });
  std::string what = group + ": " + operation + " failed on " + std::to_string(failures.size()) +
                     " of " + std::to_string(attempted) + " channels";
  if (!failures.empty()) {
    what += " (first: [id: 0x" + failures.front().channel.as_short_text() + "] " +
            describe(failures.front().error) + ")";
  }
  return what;
}

}  // namespace

ChannelGroupError::ChannelGroupError(const std::string& group, const std::string& operation,
                                     std::size_t attempted, std::vector<Failure> failures)
    : Error(describe_failures(group, operation, attempted, failures)),
      attempted_(attempted),
      failures_(std::move(failures)) {}

std::exception_ptr ChannelGroupError::error_of(const ChannelId& channel) const noexcept {
  for (const auto& f : failures_) {
    if (f.channel == channel) return f.error;
  }
  return nullptr;
}

// --- matchers ---------------------------------------------------------------------------------

namespace channel_matchers {

ChannelMatcher all() {
  return [](const Channel&) { return true; };
}
ChannelMatcher is(const Channel& channel) {
  return [id = channel.id()](const Channel& c) { return c.id() == id; };
}
ChannelMatcher is_not(const Channel& channel) {
  return [id = channel.id()](const Channel& c) { return c.id() != id; };
}
ChannelMatcher is_parent() {
  return [](const Channel& c) { return c.parent() == nullptr; };
}
ChannelMatcher is_child() {
  return [](const Channel& c) { return c.parent() != nullptr; };
}

}  // namespace channel_matchers

// --- ChannelGroup -----------------------------------------------------------------------------

// The members. Shared with the close-future listeners through weak references, so a listener
// that runs after the group was destroyed finds nothing to update.
struct ChannelGroup::State {
  mutable std::mutex mutex;
  std::unordered_map<ChannelId, std::weak_ptr<Channel>> channels;

  bool erase(const ChannelId& id) {
    std::lock_guard lock(mutex);
    return channels.erase(id) != 0;
  }
};

// One group operation: counts the channels still to complete and collects their failures; the
// last completion completes the group's promise. Kept alive by the per-channel listeners.
struct ChannelGroup::Operation {
  Operation(std::string group_name, const char* operation_name, std::size_t count,
            EventExecutor* executor)
      : promise(executor),
        remaining(count),
        attempted(count),
        group(std::move(group_name)),
        operation(operation_name) {}

  void complete_one(const ChannelId& id, std::exception_ptr error) {
    if (error) {
      std::lock_guard lock(mutex);
      failures.push_back({id, std::move(error)});
    }
    if (remaining.fetch_sub(1, std::memory_order_acq_rel) == 1) finish();
  }

  void finish() {
    std::vector<ChannelGroupError::Failure> failed;
    {
      std::lock_guard lock(mutex);
      failed.swap(failures);
    }
    if (failed.empty()) {
      promise.try_set_value();
    } else {
      promise.try_set_exception(std::make_exception_ptr(
          ChannelGroupError(group, operation, attempted, std::move(failed))));
    }
  }

  // Counts `future` (the channel's part of the operation) when it completes.
  static void track(const std::shared_ptr<Operation>& op, const ChannelId& id,
                    const Future<void>& future) {
    future.add_listener([op, id](const Future<void>& f) { op->complete_one(id, f.cause()); });
  }

  Promise<void> promise;
  std::atomic<std::size_t> remaining;
  const std::size_t attempted;
  const std::string group;
  const char* const operation;
  std::mutex mutex;
  std::vector<ChannelGroupError::Failure> failures;
};

ChannelGroup::ChannelGroup(std::string name, EventExecutor* executor)
    : name_(std::move(name)), executor_(executor), state_(std::make_shared<State>()) {}

ChannelGroup::~ChannelGroup() = default;

bool ChannelGroup::add(Channel& channel) {
  auto owner = channel.shared_owner();
  if (!owner) {
    throw InvalidArgumentError(name_ + ": cannot add channel [id: 0x" +
                               channel.id().as_short_text() +
                               "]: it is not owned by a std::shared_ptr (an EmbeddedChannel "
                               "must be made with EmbeddedChannel::create)");
  }
  return add(owner);
}

bool ChannelGroup::add(const std::shared_ptr<Channel>& channel) {
  if (!channel) throw InvalidArgumentError(name_ + ": cannot add a null channel");
  const ChannelId id = channel->id();
  {
    std::lock_guard lock(state_->mutex);
    auto [it, inserted] = state_->channels.try_emplace(id, channel);
    if (!inserted) {
      if (!it->second.expired()) return false;
      it->second = channel;
    }
  }
  // Outside the lock: on the channel's loop, a closed channel's listener runs inline.
  channel->close_future().add_listener(
      [weak = std::weak_ptr<State>(state_), id](const Future<void>&) {
        if (auto state = weak.lock()) state->erase(id);
      });
  return true;
}

bool ChannelGroup::remove(const Channel& channel) { return remove(channel.id()); }

bool ChannelGroup::remove(const ChannelId& id) { return state_->erase(id); }

std::shared_ptr<Channel> ChannelGroup::find(const ChannelId& id) const {
  std::lock_guard lock(state_->mutex);
  auto it = state_->channels.find(id);
  return it == state_->channels.end() ? nullptr : it->second.lock();
}

bool ChannelGroup::contains(const Channel& channel) const { return find(channel.id()) != nullptr; }

std::size_t ChannelGroup::size() const {
  std::lock_guard lock(state_->mutex);
  return state_->channels.size();
}

std::vector<std::shared_ptr<Channel>> ChannelGroup::channels() const { return matching({}); }

std::vector<std::shared_ptr<Channel>> ChannelGroup::matching(const ChannelMatcher& matcher) const {
  std::vector<std::shared_ptr<Channel>> out;
  {
    std::lock_guard lock(state_->mutex);
    out.reserve(state_->channels.size());
    for (auto it = state_->channels.begin(); it != state_->channels.end();) {
      if (auto channel = it->second.lock()) {
        out.push_back(std::move(channel));
        ++it;
      } else {
        // Gone without its close listener having run yet: it cannot be a member any more.
        it = state_->channels.erase(it);
      }
    }
  }
  // The matcher is user code: it runs outside the lock (it may look at the group).
  if (matcher) std::erase_if(out, [&](const auto& channel) { return !matcher(*channel); });
  return out;
}

Future<void> ChannelGroup::write(Message msg, const ChannelMatcher& matcher) {
  return broadcast(std::move(msg), matcher, false, "write");
}

Future<void> ChannelGroup::write_and_flush(Message msg, const ChannelMatcher& matcher) {
  return broadcast(std::move(msg), matcher, true, "write_and_flush");
}

namespace {

// Runs fn(channel, promise) on the channel's loop: inline when already there, else as a task
// that holds the channel, so a channel that closes meanwhile is released on its own loop, after
// the operation (which then fails its promise with ClosedChannelError). A loop that refuses the
// task fails the promise.
template <class Fn>
void run_on_channel(std::shared_ptr<Channel> channel, const ChannelPromise& promise, Fn&& fn) {
  try {
    EventExecutor& loop = channel->event_loop();
    if (loop.in_event_loop()) {
      fn(*channel, promise);
    } else {
      loop.execute([channel = std::move(channel), promise, fn = std::forward<Fn>(fn)]() mutable {
        fn(*channel, std::move(promise));
      });
    }
  } catch (...) {
    ChannelPromise failed = promise;
    failed.try_set_exception(std::current_exception());
  }
}

using UnwritablePolicy = ChannelGroup::UnwritablePolicy;

std::exception_ptr unwritable(const Channel& channel, const char* why, bool closed) {
  return std::make_exception_ptr(UnwritableChannelError(
      "channel [id: 0x" + channel.id().as_short_text() + "] " + why, closed));
}

// A broadcast's write to one member, on the member's loop, under the group's back-pressure
// policy (see ChannelGroup::UnwritablePolicy).
void write_member(Channel& channel, Message&& msg, ChannelPromise&& promise, bool flush,
                  UnwritablePolicy policy, std::size_t max_backlog) {
  if (policy == UnwritablePolicy::kSkip && channel.is_open() && !channel.is_writable()) {
    promise.try_set_exception(
        unwritable(channel, "is not writable: the message was skipped", false));
    return;
  }
  // kCloseAbove keeps a handle on the member's promise (the write takes the other one along): a
  // close for the backlog fails it with the reason before the close can fail it as closed.
  ChannelPromise outcome = policy == UnwritablePolicy::kCloseAbove ? promise : ChannelPromise{};
  if (flush) {
    channel.write_and_flush(std::move(msg), std::move(promise));
  } else {
    channel.write(std::move(msg), std::move(promise));
  }
  if (policy != UnwritablePolicy::kCloseAbove) return;
  const ChannelOutboundBuffer* out = channel.unsafe().outbound_buffer();
  if (out == nullptr || out->total_pending_write_bytes() <= max_backlog) return;
  // Failed first, so that the close's ClosedChannelError does not stand for the reason.
  outcome.try_set_exception(
      unwritable(channel, "has a backlog above the group's bound: the channel was closed", true));
  channel.close();
}

}  // namespace

void ChannelGroup::set_unwritable_policy(UnwritablePolicy policy, std::size_t max_backlog_bytes) {
  if (policy == UnwritablePolicy::kCloseAbove && max_backlog_bytes == 0) {
    throw InvalidArgumentError(name_ + ": UnwritablePolicy::kCloseAbove needs a backlog bound");
  }
  // The bound first: a broadcast that sees the new policy sees its bound too.
  max_backlog_bytes_.store(max_backlog_bytes, std::memory_order_relaxed);
  unwritable_policy_.store(policy, std::memory_order_release);
}

ChannelGroup::UnwritablePolicy ChannelGroup::unwritable_policy() const noexcept {
  return unwritable_policy_.load(std::memory_order_acquire);
}

std::size_t ChannelGroup::max_backlog_bytes() const noexcept {
  return max_backlog_bytes_.load(std::memory_order_relaxed);
}

Future<void> ChannelGroup::broadcast(Message msg, const ChannelMatcher& matcher, bool flush,
                                     const char* operation) {
  ByteBuf* bytes = msg.try_get<ByteBuf>();
  if (bytes == nullptr && !msg.is_copyable()) {
    throw WrongTypeError(name_ + ": " + operation + " of a message that cannot be copied (" +
                         std::string(msg.type_name()) + ")");
  }
  const UnwritablePolicy policy = unwritable_policy();
  const std::size_t max_backlog = max_backlog_bytes();
  auto targets = matching(matcher);
  auto op = std::make_shared<Operation>(name_, operation, targets.size(), executor_);
  auto future = op->promise.future();
  if (targets.empty()) op->finish();
  for (std::size_t i = 0; i < targets.size(); ++i) {
    ChannelPromise promise = targets[i]->new_promise();
    Operation::track(op, targets[i]->id(), promise.future());
    // The last channel takes the message itself; the others a slice or a copy of it.
    Message own;
    try {
      if (i + 1 == targets.size()) {
        own = std::move(msg);
      } else if (bytes != nullptr) {
        own = Message(bytes->slice());
      } else {
        own = msg.clone();
      }
    } catch (...) {
      promise.try_set_exception(std::current_exception());
      continue;
    }
    run_on_channel(std::move(targets[i]), promise,
                   [m = std::move(own), flush, policy, max_backlog](Channel& channel,
                                                                    ChannelPromise p) mutable {
                     write_member(channel, std::move(m), std::move(p), flush, policy, max_backlog);
                   });
  }
  return future;
}

void ChannelGroup::flush(const ChannelMatcher& matcher) {
  for (auto& channel : matching(matcher)) {
    run_on_channel(std::move(channel), ChannelPromise{},
                   [](Channel& c, const ChannelPromise&) { c.flush(); });
  }
}

Future<void> ChannelGroup::close(const ChannelMatcher& matcher) {
  auto targets = matching(matcher);
  auto op = std::make_shared<Operation>(name_, "close", targets.size(), executor_);
  auto future = op->promise.future();
  if (targets.empty()) op->finish();
  for (auto& channel : targets) {
    ChannelPromise promise = channel->new_promise();
    Operation::track(op, channel->id(), promise.future());
    run_on_channel(std::move(channel), promise,
                   [](Channel& c, ChannelPromise p) { c.close(std::move(p)); });
  }
  return future;
}

Future<void> ChannelGroup::close_future(const ChannelMatcher& matcher) const {
  auto targets = matching(matcher);
  auto op = std::make_shared<Operation>(name_, "close_future", targets.size(), executor_);
  auto future = op->promise.future();
  if (targets.empty()) op->finish();
  for (const auto& channel : targets) Operation::track(op, channel->id(), channel->close_future());
  return future;
}

}  // namespace trellis
