// A per-thread pool of message lists for decoders and encoders, so producing several messages
// from one allocates nothing once the pool is warm (Netty's CodecOutputList idea).
#pragma once

#include <vector>

#include <trellis/pipeline/message.hpp>

namespace trellis::detail {

std::vector<Message> acquire_message_list();
void release_message_list(std::vector<Message>&& list) noexcept;

// Borrows a list for one scope (nesting is fine: each scope gets its own list).
class PooledMessageList {
 public:
  PooledMessageList() : list_(acquire_message_list()) {}
  ~PooledMessageList() { release_message_list(std::move(list_)); }
  PooledMessageList(const PooledMessageList&) = delete;
  PooledMessageList& operator=(const PooledMessageList&) = delete;
  std::vector<Message>& list() noexcept { return list_; }

 private:
  std::vector<Message> list_;
};

}  // namespace trellis::detail
