// ChannelGroupError: how a ChannelGroup operation (write_and_flush, close...) failed on some of
// its channels: how many it went to, and each failed channel's id with its error. And
// UnwritableChannelError, the failure of a member a broadcast skipped or closed for back-pressure.
#pragma once

#include <cstddef>
#include <exception>
#include <string>
#include <vector>

#include <trellis/pipeline/channel_id.hpp>
#include <trellis/pipeline/error.hpp>

namespace trellis {

/// A ChannelGroup broadcast did not write to a member that does not keep up with it: skipped
/// because it was not writable (UnwritablePolicy::kSkip), or closed because its backlog would
/// have passed the group's bound (UnwritablePolicy::kCloseAbove); closed() says which.
class UnwritableChannelError : public Error {
 public:
  /// An error saying `what`; `closed`: the member was closed rather than skipped.
  UnwritableChannelError(const std::string& what, bool closed) : Error(what), closed_(closed) {}
  /// True when the member was closed, false when it only missed the message.
  bool closed() const noexcept { return closed_; }

 private:
  bool closed_;
};

/// How a ChannelGroup operation (write_and_flush, close...) failed on some of its channels: how
/// many it went to, and each failed channel's id with its error.
class ChannelGroupError : public Error {
 public:
  /// One channel the operation failed on.
  struct Failure {
    /// The channel's id.
    ChannelId channel;
    /// What the operation failed with on that channel.
    std::exception_ptr error;
  };

  /// `what()`: "<group>: <operation> failed on <failed> of <attempted> channels (first: <error>)".
  /// failures are kept in channel id order.
  ChannelGroupError(const std::string& group, const std::string& operation, std::size_t attempted,
                    std::vector<Failure> failures);

  /// How many channels the operation went to (those that succeeded included).
  std::size_t attempted() const noexcept { return attempted_; }
  /// The failed channels, in channel id order.
  const std::vector<Failure>& failures() const noexcept { return failures_; }
  /// The error of `channel`, or nullptr when it did not fail (or was not part of the operation).
  std::exception_ptr error_of(const ChannelId& channel) const noexcept;

 private:
  std::size_t attempted_;
  std::vector<Failure> failures_;
};

}  // namespace trellis
