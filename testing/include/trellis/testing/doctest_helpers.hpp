// doctest helpers for the common assertions of channel tests: read the next ByteBuf as a
// string, expect no more messages, and check that a test left no buffer alive. Include it from
// test files only (it includes doctest).
#pragma once

#include <doctest/doctest.h>

#include <cstdint>
#include <optional>
#include <string>

#include <trellis/pipeline/byte_buf_allocator.hpp>
#include <trellis/pipeline/composite_byte_buf.hpp>
#include <trellis/testing/embedded_channel.hpp>

namespace trellis::testing {

/// The readable bytes of the next inbound ByteBuf, or nullopt when the queue is
/// empty. A message of another type throws WrongTypeError.
inline std::optional<std::string> read_inbound_string(EmbeddedChannel& ch) {
  auto buf = ch.read_inbound<ByteBuf>();
  return buf ? std::optional<std::string>(buf->to_string()) : std::nullopt;
}
/// The readable bytes of the next outbound ByteBuf, as read_inbound_string().
inline std::optional<std::string> read_outbound_string(EmbeddedChannel& ch) {
  auto buf = ch.read_outbound<ByteBuf>();
  return buf ? std::optional<std::string>(buf->to_string()) : std::nullopt;
}

/// Every outbound message (ByteBuf or CompositeByteBuf) as bytes, concatenated, until the queue is
/// empty. Any other message type throws WrongTypeError.
inline std::string drain_outbound_bytes(EmbeddedChannel& ch) {
  std::string out;
  while (auto m = ch.read_outbound<Message>()) {
    if (auto* buf = m->try_get<ByteBuf>()) {
      out += buf->to_string();
    } else if (auto* composite = m->try_get<CompositeByteBuf>()) {
      composite->for_each_readable([&](std::span<const std::byte> s) {
        out.append(reinterpret_cast<const char*>(s.data()), s.size());
      });
    } else {
      throw WrongTypeError("drain_outbound_bytes: outbound message of type " +
                           std::string(m->type_name()) + " is not bytes");
    }
  }
  return out;
}

/// Remembers an allocator's live buffer count; leaked() is how many more are alive now.
class BufferLeakCheck {
 public:
  /// Remembers allocator's live buffer count now.
  explicit BufferLeakCheck(ByteBufAllocator& allocator = ByteBufAllocator::default_allocator())
      : allocator_(&allocator), start_(allocator.stats().live_buffers) {}
  /// How many more buffers of the allocator are alive than at construction.
  std::int64_t leaked() const {
    return static_cast<std::int64_t>(allocator_->stats().live_buffers) -
           static_cast<std::int64_t>(start_);
  }

 private:
  ByteBufAllocator* allocator_;
  std::uint64_t start_;
};

}  // namespace trellis::testing

/// CHECKs that the next inbound message is a ByteBuf holding exactly `expected`.
#define TRELLIS_CHECK_INBOUND_STRING(ch, expected)                   \
  do {                                                               \
    auto trellis_got_ = ::trellis::testing::read_inbound_string(ch); \
    CHECK_MESSAGE(trellis_got_.has_value(), "no inbound message");   \
    if (trellis_got_) CHECK(*trellis_got_ == std::string(expected)); \
  } while (false)
/// CHECKs that the next outbound message is a ByteBuf holding exactly `expected`.
#define TRELLIS_CHECK_OUTBOUND_STRING(ch, expected)                   \
  do {                                                                \
    auto trellis_got_ = ::trellis::testing::read_outbound_string(ch); \
    CHECK_MESSAGE(trellis_got_.has_value(), "no outbound message");   \
    if (trellis_got_) CHECK(*trellis_got_ == std::string(expected));  \
  } while (false)

/// CHECKs that no message is left in the inbound queue.
#define TRELLIS_CHECK_NO_MORE_INBOUND(ch)               \
  CHECK_MESSAGE((ch).inbound_messages().empty(),        \
                "unexpected inbound message: "          \
                    << ((ch).inbound_messages().empty() \
                            ? std::string()             \
                            : std::string((ch).inbound_messages().front().type_name())))
/// CHECKs that no message is left in the outbound queue.
#define TRELLIS_CHECK_NO_MORE_OUTBOUND(ch)               \
  CHECK_MESSAGE((ch).outbound_messages().empty(),        \
                "unexpected outbound message: "          \
                    << ((ch).outbound_messages().empty() \
                            ? std::string()              \
                            : std::string((ch).outbound_messages().front().type_name())))

/// CHECKs that a BufferLeakCheck sees no buffer left alive.
#define TRELLIS_CHECK_NO_LEAKED_BUFFERS(leak_check) CHECK((leak_check).leaked() == 0)
