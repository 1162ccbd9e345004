// LoggingHandler: logs every inbound and outbound event of a channel through spdlog at a chosen
// level, with a hex dump of ByteBuf payloads (Netty's LoggingHandler). Sharable.
#pragma once

#include <cstddef>
#include <string>

#include <spdlog/fwd.h>

#include <trellis/pipeline/channel_handler.hpp>

namespace trellis {

class ByteBuf;

/// Logs every inbound and outbound event of a channel through spdlog at a chosen level, with a
/// hex dump of ByteBuf payloads, and passes the event on. Sharable.
class LoggingHandler final : public ChannelDuplexHandler {
 public:
  /// Hex dumps stop after this many bytes (the rest is counted, not shown).
  static constexpr std::size_t kMaxDumpBytes = 4096;

  /// Logs at `spdlog::level::debug`.
  LoggingHandler() noexcept;
  /// Logs at `level` (nothing is formatted when spdlog would drop that level; naming a level
  /// needs `<spdlog/spdlog.h>`).
  explicit LoggingHandler(spdlog::level::level_enum level) noexcept;
  /// True: one LoggingHandler may sit in several pipelines.
  bool is_sharable() const noexcept override { return true; }

  /// A Netty-style hex dump of the readable bytes of `buf`, up to `max_bytes`: offset, 16 bytes in
  /// hex, then printable ASCII.
  static std::string hex_dump(const ByteBuf& buf, std::size_t max_bytes = kMaxDumpBytes);

  void channel_registered(ChannelHandlerContext& ctx) override;
  void channel_unregistered(ChannelHandlerContext& ctx) override;
  void channel_active(ChannelHandlerContext& ctx) override;
  void channel_inactive(ChannelHandlerContext& ctx) override;
  void channel_read(ChannelHandlerContext& ctx, Message msg) override;
  void channel_read_complete(ChannelHandlerContext& ctx) override;
  void user_event_triggered(ChannelHandlerContext& ctx, Message event) override;
  void channel_writability_changed(ChannelHandlerContext& ctx) override;
  void exception_caught(ChannelHandlerContext& ctx, std::exception_ptr error) override;

  void bind(ChannelHandlerContext& ctx, const SocketAddress& local, ChannelPromise p) override;
  void connect(ChannelHandlerContext& ctx, const SocketAddress& remote,
               const std::optional<SocketAddress>& local, ChannelPromise p) override;
  void disconnect(ChannelHandlerContext& ctx, ChannelPromise p) override;
  void close(ChannelHandlerContext& ctx, ChannelPromise p) override;
  void read(ChannelHandlerContext& ctx) override;
  void write(ChannelHandlerContext& ctx, Message msg, ChannelPromise p) override;
  void flush(ChannelHandlerContext& ctx) override;

 private:
  bool enabled() const noexcept;
  void log(ChannelHandlerContext& ctx, std::string_view event, std::string_view detail = {});
  std::string describe(const Message& msg) const;

  spdlog::level::level_enum level_;
};

}  // namespace trellis
