// HttpBodyStream (see http_body_stream.hpp).
#include <trellis/codec/http/http_body_stream.hpp>

#include <trellis/pipeline/channel.hpp>
#include <trellis/pipeline/channel_config.hpp>
#include <trellis/pipeline/error.hpp>

namespace trellis::http {

void HttpBodyStream::push(ByteBuf chunk) {
  if (ended_ || abandoned_ || !chunk.is_readable()) return;
  if (waiting_) {
    Promise<std::optional<ByteBuf>> promise = std::move(*waiting_);
    waiting_.reset();
    promise.try_set_value(std::move(chunk));
    return;
  }
  chunks_.push_back(std::move(chunk));
  if (chunks_.size() >= kMaxBufferedChunks) pause();
}

void HttpBodyStream::finish() {
  if (ended_) return;
  ended_ = true;
  resume();  // the connection goes on with other requests: it must read again
  channel_ = nullptr;
  if (waiting_ && chunks_.empty()) {
    Promise<std::optional<ByteBuf>> promise = std::move(*waiting_);
    waiting_.reset();
    promise.try_set_value(std::nullopt);
  }
}

void HttpBodyStream::fail(std::exception_ptr error) {
  if (ended_) return;
  ended_ = true;
  error_ = std::move(error);
  resume();
  channel_ = nullptr;
  if (waiting_ && chunks_.empty()) {
    Promise<std::optional<ByteBuf>> promise = std::move(*waiting_);
    waiting_.reset();
    promise.try_set_exception(error_);
  }
}

Future<std::optional<ByteBuf>> HttpBodyStream::next() {
  Promise<std::optional<ByteBuf>> promise(&loop_);
  Future<std::optional<ByteBuf>> future = promise.future();
  if (loop_.in_event_loop()) {
    next_on_loop(std::move(promise));
  } else {
    loop_.execute([self = shared_from_this(), promise = std::move(promise)]() mutable {
      self->next_on_loop(std::move(promise));
    });
  }
  return future;
}

void HttpBodyStream::next_on_loop(Promise<std::optional<ByteBuf>> promise) {
  if (waiting_) {
    promise.try_set_exception(std::make_exception_ptr(
        IllegalStateError("HttpBodyStream::next() while another next() is pending")));
    return;
  }
  if (!chunks_.empty()) {
    ByteBuf chunk = std::move(chunks_.front());
    chunks_.pop_front();
    if (chunks_.size() < kMaxBufferedChunks) resume();
    promise.try_set_value(std::move(chunk));
    return;
  }
  if (error_) {
    promise.try_set_exception(error_);
    return;
  }
  if (ended_) {
    promise.try_set_value(std::nullopt);
    return;
  }
  waiting_.emplace(std::move(promise));
  resume();
}

void HttpBodyStream::abandon() {
  if (loop_.in_event_loop()) {
    abandon_on_loop();
    return;
  }
  loop_.execute([self = shared_from_this()] { self->abandon_on_loop(); });
}

void HttpBodyStream::abandon_on_loop() {
  abandoned_ = true;
  chunks_.clear();
  if (ended_ || channel_ == nullptr) return;
  // The rest of the body would have to be read and thrown away before the connection could
  // carry another request: closing it is cheaper and bounded.
  Channel* channel = channel_;
  resume();
  channel_ = nullptr;
  channel->close();
}

void HttpBodyStream::pause() {
  if (paused_ || channel_ == nullptr) return;
  paused_ = true;
  channel_->config().set_auto_read(false);
}

void HttpBodyStream::resume() {
  if (!paused_ || channel_ == nullptr) return;
  paused_ = false;
  channel_->config().set_auto_read(true);
}

}  // namespace trellis::http
