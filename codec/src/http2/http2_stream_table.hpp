// Http2FrameCodec's table of open streams: the per-stream state (windows, queued writes,
// content-length accounting) in pooled slots found through a small open-addressing index, so
// opening and closing streams allocates nothing once the table is warm.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <utility>
#include <vector>

#include <trellis/codec/http2/http2_stream_state.hpp>
#include <trellis/pipeline/channel_promise.hpp>
#include <trellis/pipeline/message.hpp>

namespace trellis::http2::detail {

// A write waiting for flow-control window: an Http2DataFrame, or the Http2HeadersFrame of
// trailers queued behind data.
struct PendingWrite {
  Message msg;
  ChannelPromise promise;
};

struct Http2Stream {
  std::uint32_t id = 0;
  Http2StreamState state = Http2StreamState::kIdle;
  std::int64_t send_window = 0;
  std::int64_t recv_window = 0;       // what the peer may still send
  std::uint32_t unconsumed = 0;       // delivered to the application, not consumed yet
  std::uint32_t consumed = 0;         // consumed, not yet given back with WINDOW_UPDATE
  std::int64_t expected_length = -1;  // content-length of the request, -1: none
  std::int64_t received_length = 0;
  std::vector<PendingWrite> pending;  // kept with its capacity when the slot is reused
  std::size_t pending_head = 0;
  std::uint64_t pending_bytes = 0;
  bool end_queued = false;  // a write with END_STREAM was accepted
  bool writable = true;     // the last writability reported
  bool listed = false;      // in the codec's list of streams with queued writes
  bool local = false;       // opened by this endpoint

  bool has_pending() const noexcept { return pending_head < pending.size(); }
};

// Live streams by id. References stay valid until the stream is erased.
class Http2StreamTable {
 public:
  Http2StreamTable() : index_(16) {}

  Http2Stream* find(std::uint32_t id) noexcept {
    const std::size_t mask = index_.size() - 1;
    for (std::size_t i = home(id); index_[i].id != 0; i = (i + 1) & mask) {
      if (index_[i].id == id) return &slots_[index_[i].slot];
    }
    return nullptr;
  }
  const Http2Stream* find(std::uint32_t id) const noexcept {
    return const_cast<Http2StreamTable*>(this)->find(id);
  }

  // Adds stream `id` (not present), reset to its defaults.
  Http2Stream& insert(std::uint32_t id) {
    if ((size_ + 1) * 2 > index_.size()) grow();
    std::uint32_t slot;
    if (!free_.empty()) {
      slot = free_.back();
      free_.pop_back();
    } else {
      slot = static_cast<std::uint32_t>(slots_.size());
      slots_.emplace_back();
    }
    Http2Stream& s = slots_[slot];
    std::vector<PendingWrite> keep = std::move(s.pending);
    keep.clear();
    s = Http2Stream{};
    s.pending = std::move(keep);
    s.id = id;
    place(id, slot);
    ++size_;
    return s;
  }

  // Removes stream `id` (present); its queued writes must be gone.
  void erase(std::uint32_t id) noexcept {
    const std::size_t mask = index_.size() - 1;
    std::size_t i = home(id);
    while (index_[i].id != id) i = (i + 1) & mask;
    Http2Stream& s = slots_[index_[i].slot];
    s.pending.clear();
    s.pending_head = 0;
    s.id = 0;
    free_.push_back(index_[i].slot);
    // Backward-shift deletion keeps every probe chain unbroken without tombstones.
    std::size_t j = i;
    for (;;) {
      j = (j + 1) & mask;
      if (index_[j].id == 0) break;
      const std::size_t k = home(index_[j].id);
      const bool stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
      if (stays) continue;
      index_[i] = index_[j];
      i = j;
    }
    index_[i] = {};
    --size_;
  }

  std::size_t size() const noexcept { return size_; }

  // Appends the ids of every live stream to `out`.
  void ids(std::vector<std::uint32_t>& out) const {
    for (const Entry& e : index_) {
      if (e.id != 0) out.push_back(e.id);
    }
  }

 private:
  struct Entry {
    std::uint32_t id = 0;
    std::uint32_t slot = 0;
  };
  // Stream ids of one side go up by two: consecutive ids take consecutive buckets.
  std::size_t home(std::uint32_t id) const noexcept { return (id >> 1) & (index_.size() - 1); }
  void place(std::uint32_t id, std::uint32_t slot) noexcept {
    const std::size_t mask = index_.size() - 1;
    std::size_t i = home(id);
    while (index_[i].id != 0) i = (i + 1) & mask;
    index_[i] = {id, slot};
  }
  void grow() {
    std::vector<Entry> old = std::move(index_);
    index_.assign(old.size() * 2, Entry{});
    for (const Entry& e : old) {
      if (e.id != 0) place(e.id, e.slot);
    }
  }

  std::deque<Http2Stream> slots_;  // a deque: growing keeps references to the slots valid
  std::vector<std::uint32_t> free_;
  std::vector<Entry> index_;  // a power of two, at most half full
  std::size_t size_ = 0;
};

}  // namespace trellis::http2::detail
