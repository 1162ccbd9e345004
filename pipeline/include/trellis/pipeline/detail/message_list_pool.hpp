// A per-thread stack of message lists for decoders and encoders, so producing several messages
// from one allocates nothing once the lists are warm (Netty's CodecOutputList idea).
#pragma once

#include <vector>

#include <trellis/pipeline/message.hpp>

namespace trellis::detail {

// The next free list of this thread's stack (its capacity kept from its last use), or null when
// the stack is used up or the thread is exiting.
std::vector<Message>* borrow_message_list() noexcept;
// Gives back the list borrow_message_list() handed out last on this thread, emptied.
void return_message_list(std::vector<Message>& list) noexcept;

// Borrows a list for one scope. Scopes nest (each gets its own list) and end in reverse order,
// so the lists are borrowed and given back in place, as a stack: no vector is moved.
class PooledMessageList {
 public:
  PooledMessageList() noexcept : list_(borrow_message_list()) {
    if (list_ == nullptr) list_ = &own_;
  }
  ~PooledMessageList() {
    if (list_ != &own_) return_message_list(*list_);
  }
  PooledMessageList(const PooledMessageList&) = delete;
  PooledMessageList& operator=(const PooledMessageList&) = delete;
  std::vector<Message>& list() noexcept { return *list_; }

 private:
  std::vector<Message>* list_;
  std::vector<Message> own_;  // when the stack is used up (deep nesting) or gone
};

}  // namespace trellis::detail
