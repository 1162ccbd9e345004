// The chat example's pipeline, set up for each accepted connection: idle timeout, lines,
// strings, and the chat handler.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <utility>

#include <trellis/codec/line_based_frame_decoder.hpp>
#include <trellis/codec/string_codec.hpp>
#include <trellis/pipeline.hpp>

#include "chat_handler.hpp"
#include "chat_idle_handler.hpp"

namespace examples {

using namespace trellis;

// Lines longer than this are dropped (the client is told).
inline constexpr std::size_t kMaxLineLength = 1024;

// Without a chat handler (nullptr) the pipeline ends with the string codec: the coroutine
// server reads the lines from there through an AsyncChannel<std::string, std::string>.
class ChatInitializer : public ChannelInitializer {
 public:
  ChatInitializer(std::chrono::nanoseconds idle_timeout, std::shared_ptr<ChatHandler> chat)
      : idle_timeout_(idle_timeout), chat_(std::move(chat)) {}

 protected:
  void init_channel(Channel& ch) override {
    ChannelPipeline& p = ch.pipeline();
    p.add_last("idle", std::make_shared<ChatIdleHandler>(idle_timeout_));
    p.add_last("lines", std::make_shared<codec::LineBasedFrameDecoder>(kMaxLineLength));
    p.add_last("string-decoder", string_decoder_);  // ByteBuf -> std::string
    p.add_last("string-encoder", string_encoder_);  // std::string -> ByteBuf
    if (chat_) p.add_last("chat", chat_);
  }

 private:
  std::chrono::nanoseconds idle_timeout_;
  std::shared_ptr<ChatHandler> chat_;
  // Sharable: one of each serves every connection.
  std::shared_ptr<codec::StringDecoder> string_decoder_ = std::make_shared<codec::StringDecoder>();
  std::shared_ptr<codec::StringEncoder> string_encoder_ = std::make_shared<codec::StringEncoder>();
};

}  // namespace examples
