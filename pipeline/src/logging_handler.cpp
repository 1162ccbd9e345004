// LoggingHandler (see logging_handler.hpp).
#include <trellis/pipeline/logging_handler.hpp>

#include <trellis/pipeline/byte_buf.hpp>
#include <trellis/pipeline/channel.hpp>
#include <trellis/pipeline/channel_handler_context.hpp>
#include <trellis/pipeline/composite_byte_buf.hpp>

#include <spdlog/spdlog.h>

namespace trellis {

LoggingHandler::LoggingHandler() noexcept : LoggingHandler(spdlog::level::debug) {}

LoggingHandler::LoggingHandler(spdlog::level::level_enum level) noexcept : level_(level) {}

bool LoggingHandler::enabled() const noexcept { return spdlog::should_log(level_); }

std::string LoggingHandler::hex_dump(const ByteBuf& buf, std::size_t max_bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  const auto span = buf.readable_span();
  const std::size_t n = std::min(span.size(), max_bytes);
  std::string out;
  for (std::size_t row = 0; row < n; row += 16) {
    out += fmt::format("\n{:08x}  ", row);
    std::string ascii;
    for (std::size_t i = row; i < row + 16; ++i) {
      if (i < n) {
        const auto b = static_cast<unsigned char>(span[i]);
        out += kHex[b >> 4];
        out += kHex[b & 15];
        out += ' ';
        ascii += (b >= 32 && b < 127) ? static_cast<char>(b) : '.';
      } else {
        out += "   ";
      }
    }
    out += " |" + ascii + "|";
  }
  if (n < span.size()) out += fmt::format("\n... {} more bytes", span.size() - n);
  return out;
}

std::string LoggingHandler::describe(const Message& msg) const {
  if (const auto* buf = msg.try_get<ByteBuf>()) {
    return fmt::format("{}B{}", buf->readable_bytes(), hex_dump(*buf));
  }
  if (const auto* composite = msg.try_get<CompositeByteBuf>()) {
    return fmt::format("{}B (composite)", composite->readable_bytes());
  }
  return std::string(msg.type_name());
}

void LoggingHandler::log(ChannelHandlerContext& ctx, std::string_view event,
                         std::string_view detail) {
  auto& ch = ctx.channel();
  const auto local = ch.local_address();
  const auto remote = ch.remote_address();
  spdlog::log(level_, "[id: 0x{}, L:{} - R:{}] {}{}{}", ch.id().as_short_text(),
              local ? local->to_string() : "-", remote ? remote->to_string() : "-", event,
              detail.empty() ? "" : ": ", detail);
}

void LoggingHandler::channel_registered(ChannelHandlerContext& ctx) {
  if (enabled()) log(ctx, "REGISTERED");
  ctx.fire_channel_registered();
}
void LoggingHandler::channel_unregistered(ChannelHandlerContext& ctx) {
  if (enabled()) log(ctx, "UNREGISTERED");
  ctx.fire_channel_unregistered();
}
void LoggingHandler::channel_active(ChannelHandlerContext& ctx) {
  if (enabled()) log(ctx, "ACTIVE");
  ctx.fire_channel_active();
}
void LoggingHandler::channel_inactive(ChannelHandlerContext& ctx) {
  if (enabled()) log(ctx, "INACTIVE");
  ctx.fire_channel_inactive();
}
void LoggingHandler::channel_read(ChannelHandlerContext& ctx, Message msg) {
  if (enabled()) log(ctx, "READ", describe(msg));
  ctx.fire_channel_read(std::move(msg));
}
void LoggingHandler::channel_read_complete(ChannelHandlerContext& ctx) {
  if (enabled()) log(ctx, "READ COMPLETE");
  ctx.fire_channel_read_complete();
}
void LoggingHandler::user_event_triggered(ChannelHandlerContext& ctx, Message event) {
  if (enabled()) log(ctx, "USER_EVENT", event.type_name());
  ctx.fire_user_event_triggered(std::move(event));
}
void LoggingHandler::channel_writability_changed(ChannelHandlerContext& ctx) {
  if (enabled())
    log(ctx, "WRITABILITY CHANGED", ctx.channel().is_writable() ? "writable" : "unwritable");
  ctx.fire_channel_writability_changed();
}
void LoggingHandler::exception_caught(ChannelHandlerContext& ctx, std::exception_ptr error) {
  if (enabled()) {
    std::string what = "unknown exception";
    try {
      std::rethrow_exception(error);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    log(ctx, "EXCEPTION", what);
  }
  ctx.fire_exception_caught(std::move(error));
}

void LoggingHandler::bind(ChannelHandlerContext& ctx, const SocketAddress& local,
                          ChannelPromise p) {
  if (enabled()) log(ctx, "BIND", local.to_string());
  ctx.bind(local, std::move(p));
}
void LoggingHandler::connect(ChannelHandlerContext& ctx, const SocketAddress& remote,
                             const std::optional<SocketAddress>& local, ChannelPromise p) {
  if (enabled()) log(ctx, "CONNECT", remote.to_string());
  ctx.connect(remote, local, std::move(p));
}
void LoggingHandler::disconnect(ChannelHandlerContext& ctx, ChannelPromise p) {
  if (enabled()) log(ctx, "DISCONNECT");
  ctx.disconnect(std::move(p));
}
void LoggingHandler::close(ChannelHandlerContext& ctx, ChannelPromise p) {
  if (enabled()) log(ctx, "CLOSE");
  ctx.close(std::move(p));
}
void LoggingHandler::read(ChannelHandlerContext& ctx) {
  if (enabled()) log(ctx, "READ REQUEST");
  ctx.read();
}
void LoggingHandler::write(ChannelHandlerContext& ctx, Message msg, ChannelPromise p) {
  if (enabled()) log(ctx, "WRITE", describe(msg));
  ctx.write(std::move(msg), std::move(p));
}
void LoggingHandler::flush(ChannelHandlerContext& ctx) {
  if (enabled()) log(ctx, "FLUSH");
  ctx.flush();
}

}  // namespace trellis
