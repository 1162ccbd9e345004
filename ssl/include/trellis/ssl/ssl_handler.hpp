// SslHandler: TLS for one channel. Put it first in the pipeline: inbound ciphertext ByteBufs come
// out as plaintext ByteBufs, outbound plaintext goes out encrypted. It drives OpenSSL through
// memory BIOs from the pipeline's events alone, so it works on any channel, EmbeddedChannel
// included.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <trellis/pipeline/byte_buf.hpp>
#include <trellis/pipeline/channel_handler.hpp>
#include <trellis/pipeline/future.hpp>
#include <trellis/pipeline/promise.hpp>
#include <trellis/pipeline/scheduled_future.hpp>
#include <trellis/ssl/peer_certificate.hpp>
#include <trellis/ssl/ssl_context.hpp>

typedef struct ssl_st SSL;  // NOLINT(modernize-use-using): OpenSSL's own declaration
typedef struct bio_st BIO;  // NOLINT(modernize-use-using)

namespace trellis::ssl {

namespace detail {
struct ConnectionData;
struct SslContextState;
}  // namespace detail

/// TLS over OpenSSL 3 for one channel: put it first in the pipeline; it encrypts what is written
/// and decrypts what is read. One per channel (not sharable); every member must be called on the
/// channel's loop, except handshake_future() and the accessors read after the handshake.
///
/// - The handshake starts when the channel is active (a client sends its ClientHello then);
///   handshake_future() completes when it is done, or fails with SslHandshakeError (OpenSSL's
///   reason and the certificate verification result), after which the channel is closed. A
///   handshake still running after the handshake timeout (the context's, 10 s by default) fails
///   the same way.
/// - Writes issued before the handshake completes are kept and sent after it. Writes flushed
///   together are encrypted into as few records as fit (16 KiB of plaintext each); a write's
///   promise completes when the ciphertext carrying its last byte was written. Only ByteBuf and
///   CompositeByteBuf are accepted (a FileRegion cannot be encrypted in the kernel).
/// - Every record of one read of ciphertext comes out as its own plaintext ByteBuf, then one
///   channel_read_complete.
/// - close() sends close_notify, and closes once it was written (or after the close_notify
///   timeout). A close_notify from the peer is answered and closes the channel. A peer that
///   closes the connection without close_notify after the handshake is reported as
///   SslTruncationError (exception_caught), before channel_inactive.
/// - shutdown_output() (a half-close) sends close_notify after what was written and shuts the
///   transport's output down once it was written (or after the close_notify timeout); reading
///   goes on, and later writes fail.
/// - Renegotiation is refused; failures after the handshake are SslError (fired, then closed).
class SslHandler final : public ChannelDuplexHandler {
 public:
  /// The handler uses the context's configuration as of now, for the whole connection (a later
  /// SslContext::reload does not change it).
  ///
  /// A client handler sends server_name as SNI (unless it is an IP address), checks the server's
  /// certificate against it (when the context verifies the hostname) and resumes sessions cached
  /// under it. A server handler ignores it. Throws SslError for a client without a server name
  /// when its context verifies hostnames (build it with verify_hostname(false) to skip the
  /// check).
  explicit SslHandler(SslContext context, std::string server_name = {});
  ~SslHandler() override;

  /// Completes on the channel's event loop when the handshake succeeded; fails with
  /// SslHandshakeError, or when the channel closed first.
  Future<void> handshake_future() const { return handshake_.future(); }
  /// True once the handshake succeeded (and until the channel closes).
  bool is_handshake_done() const noexcept { return state_ == State::kReady; }

  /// After the handshake: the protocol chosen by ALPN ("" when none), the name the client asked
  /// for (a server's view of SNI), the protocol version ("TLSv1.3") and whether an earlier
  /// session was resumed.
  ///@{
  std::string_view alpn_protocol() const noexcept;
  std::string_view requested_server_name() const noexcept;
  std::string_view protocol_version() const noexcept;
  bool is_session_reused() const noexcept;
  ///@}

  /// After the handshake: the certificate chain the peer presented, leaf first, as values (a
  /// client sees the server's chain; a server the client's, with verify_peer(true)), also after
  /// the channel closed. Empty before the handshake succeeded and when the peer sent no
  /// certificate. Made on each call.
  std::vector<PeerCertificate> peer_certificates() const;

  /// After the handshake, on a client whose context has request_ocsp_stapling(true): the DER
  /// OCSP response the server stapled, also after the channel closed. Empty when the server
  /// stapled none, on a resumed session (no certificate is sent), on a server, and before the
  /// handshake succeeded. It is not checked: whether it is signed by the certificate's issuer (or
  /// its responder), current, and says "good" is the application's to verify (docs/tls.md, "OCSP
  /// stapling").
  std::vector<unsigned char> stapled_ocsp_response() const;

  /// How long the handshake may take from its start before it fails with SslHandshakeError and
  /// the channel is closed (the context's SslContextBuilder::handshake_timeout, 10 s by
  /// default); zero or less: no deadline. Takes effect for a handshake not yet started.
  void set_handshake_timeout(std::chrono::nanoseconds timeout) noexcept {
    handshake_timeout_ = timeout;
  }
  /// How long close() and shutdown_output() wait for close_notify to be written before it closes
  /// anyway (3 s).
  void set_close_notify_timeout(std::chrono::nanoseconds timeout) noexcept {
    close_notify_timeout_ = timeout;
  }
  /// OpenSSL's connection object, for what this class does not offer (null before
  /// handler_added). Reading settings is safe; driving it (reads, writes, shutdown) is not.
  SSL* native_handle() const noexcept { return ssl_; }

  /// @name Handler callbacks
  ///@{

  /// The handler's side of the event: see the class description.
  void handler_added(ChannelHandlerContext& ctx) override;
  void handler_removed(ChannelHandlerContext& ctx) override;
  void channel_active(ChannelHandlerContext& ctx) override;
  void channel_inactive(ChannelHandlerContext& ctx) override;
  void channel_read(ChannelHandlerContext& ctx, Message msg) override;
  void channel_read_complete(ChannelHandlerContext& ctx) override;
  void write(ChannelHandlerContext& ctx, Message msg, ChannelPromise promise) override;
  void flush(ChannelHandlerContext& ctx) override;
  void close(ChannelHandlerContext& ctx, ChannelPromise promise) override;
  void shutdown_output(ChannelHandlerContext& ctx, ChannelPromise promise) override;
  ///@}

 private:
  enum class State { kIdle, kHandshaking, kReady, kClosed };
  struct PendingWrite {
    Message msg;
    ChannelPromise promise;
  };

  void start_handshake(ChannelHandlerContext& ctx);
  // Arms the handshake deadline (once), on the channel's clock.
  void start_handshake_timer(ChannelHandlerContext& ctx);
  void cancel_handshake_timer() noexcept;
  void do_handshake(ChannelHandlerContext& ctx);
  void read_records(ChannelHandlerContext& ctx);
  void encrypt_pending(ChannelHandlerContext& ctx);
  void encrypt_bytes(ChannelHandlerContext& ctx, const std::byte* data, std::size_t size,
                     bool last);
  void ssl_write(const std::byte* data, std::size_t size);
  // Writes the ciphertext waiting in the write BIO, with the promises of the writes it completes.
  void drain_output(ChannelHandlerContext& ctx);
  ChannelPromise take_done_promises(ChannelHandlerContext& ctx);
  // Sends close_notify after what was written, then closes (then_close) or shuts the output
  // down once it was written or after the close_notify timeout.
  void send_close_notify(ChannelHandlerContext& ctx, ChannelPromise promise, bool then_close);
  void fail(ChannelHandlerContext& ctx, std::exception_ptr error, bool handshake);
  void fail_pending(const std::exception_ptr& error);

  std::shared_ptr<detail::SslContextState> context_;  // the configuration as of construction
  std::string server_name_;
  std::unique_ptr<detail::ConnectionData> data_;
  SSL* ssl_ = nullptr;
  BIO* rbio_ = nullptr;  // ciphertext from the peer, for OpenSSL to read
  BIO* wbio_ = nullptr;  // ciphertext OpenSSL wrote, for the channel to send
  Promise<void> handshake_;
  State state_ = State::kIdle;
  bool flush_pending_ = false;        // a flush arrived during the handshake
  bool handshake_succeeded_ = false;  // stays true after the channel closed
  bool read_produced_ = false;        // plaintext fired since the last channel_read_complete
  bool close_started_ = false;        // close() sent (or is sending) close_notify
  bool peer_closed_ = false;          // close_notify received
  std::chrono::nanoseconds close_notify_timeout_ = std::chrono::seconds(3);
  std::chrono::nanoseconds handshake_timeout_;
  // Completes once the close_notify of close() or shutdown_output() was written (or its
  // timeout passed), after the close or half-close it was for; a close() meanwhile waits for it.
  ChannelPromise close_notify_settled_;
  ScheduledFuture<void> handshake_timer_;
  bool handshake_timer_started_ = false;
  std::vector<PendingWrite> pending_;
  std::vector<ChannelPromise> staged_promises_;  // writes whose bytes wait in the staging record
  std::vector<ChannelPromise> done_promises_;    // writes fully encrypted, not yet sent
  ByteBuf staging_;         // small writes gathered into one record (only during a flush)
  std::size_t staged_ = 0;  // plaintext bytes in staging_
};

}  // namespace trellis::ssl
