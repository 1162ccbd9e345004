#include <trellis/ssl/ssl_handler.hpp>

#include <algorithm>
#include <cstring>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <trellis/pipeline/byte_buf_allocator.hpp>
#include <trellis/pipeline/channel.hpp>
#include <trellis/pipeline/channel_config.hpp>
#include <trellis/pipeline/channel_handler_context.hpp>
#include <trellis/pipeline/composite_byte_buf.hpp>
#include <trellis/pipeline/event_executor.hpp>
#include <trellis/pipeline/scheduled_future.hpp>
#include <trellis/ssl/ssl_error.hpp>

#include "ocsp_stapling.hpp"
#include "openssl_errors.hpp"
#include "peer_certificate_convert.hpp"
#include "ssl_context_state.hpp"

namespace trellis::ssl {

namespace {

// The most plaintext one TLS record carries.
constexpr std::size_t kMaxRecord = 16 * 1024;
// Ciphertext is handed to the channel in pieces of three full records (49,218 bytes in TLS 1.3)
// while a large flush is encrypted, so the write BIO does not have to hold all of it and each
// piece fits the pooled allocator's largest size class (64 KiB).
constexpr std::size_t kOutputChunk = 48 * 1024;

bool is_ip_address(const std::string& host) {
  ASN1_OCTET_STRING* ip = a2i_IPADDRESS(host.c_str());
  if (ip == nullptr) return false;
  ASN1_OCTET_STRING_free(ip);
  return true;
}

SslHandshakeError handshake_error(SSL* ssl, const std::string& what) {
  const long verify = SSL_get_verify_result(ssl);
  std::string text = detail::openssl_error_text(what);
  const auto* data = static_cast<const detail::ConnectionData*>(
      SSL_get_ex_data(ssl, detail::connection_data_index()));
  if (verify == X509_V_ERR_APPLICATION_VERIFICATION && data != nullptr &&
      !data->verify_refusal.empty()) {
    text += " (refused by the verify callback: " + data->verify_refusal + ")";
    return SslHandshakeError(text, verify, data->verify_refusal);
  }
  if (verify != X509_V_OK) {
    const char* reason = X509_verify_cert_error_string(verify);
    text += " (certificate verify result " + std::to_string(verify) + ": " + reason + ")";
    return SslHandshakeError(text, verify, reason);
  }
  return SslHandshakeError(text);
}

}  // namespace

SslHandler::SslHandler(SslContext context, std::string server_name)
    : context_(context.state()),
      server_name_(std::move(server_name)),
      data_(std::make_unique<detail::ConnectionData>()),
      handshake_timeout_(context_->handshake_timeout) {
  ERR_clear_error();
  ssl_ = SSL_new(context_->ctx);
  if (ssl_ == nullptr) throw SslError(detail::openssl_error_text("SSL_new failed"));
  rbio_ = BIO_new(BIO_s_mem());
  wbio_ = BIO_new(BIO_s_mem());
  if (rbio_ == nullptr || wbio_ == nullptr) {
    BIO_free(rbio_);
    BIO_free(wbio_);
    SSL_free(ssl_);
    throw SslError(detail::openssl_error_text("BIO_new failed"));
  }
  // An empty read BIO means "more data later", not end of file.
  BIO_set_mem_eof_return(rbio_, -1);
  SSL_set_bio(ssl_, rbio_, wbio_);  // the SSL owns both now
  SSL_set_ex_data(ssl_, detail::connection_data_index(), data_.get());

  if (context_->server) {
    SSL_set_accept_state(ssl_);
    return;
  }
  SSL_set_connect_state(ssl_);
  const auto& state = *context_;
  if (server_name_.empty()) {
    if (!(state.verify_peer && state.verify_hostname)) return;
    // Without a name there is nothing to check the certificate against: refuse rather than
    // accept any certificate of a trusted CA.
    SSL_free(ssl_);
    throw SslError(
        "a client SslHandler needs the server name to verify the server's certificate against; "
        "build the context with verify_hostname(false) to skip the hostname check");
  }
  const bool ip = is_ip_address(server_name_);
  if (!ip) SSL_set_tlsext_host_name(ssl_, server_name_.c_str());
  if (state.verify_peer && state.verify_hostname) {
    X509_VERIFY_PARAM* param = SSL_get0_param(ssl_);
    X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    const int ok = ip ? X509_VERIFY_PARAM_set1_ip_asc(param, server_name_.c_str())
                      : X509_VERIFY_PARAM_set1_host(param, server_name_.c_str(), 0);
    if (ok != 1) {
      SSL_free(ssl_);
      throw SslError(detail::openssl_error_text("invalid server name '" + server_name_ + "'"));
    }
  }
  data_->session_key = server_name_;
  context_->sessions.apply(server_name_, ssl_);
}

SslHandler::~SslHandler() {
  cancel_handshake_timer();
  SSL_free(ssl_);
}

std::string_view SslHandler::alpn_protocol() const noexcept {
  const unsigned char* p = nullptr;
  unsigned int n = 0;
  SSL_get0_alpn_selected(ssl_, &p, &n);
  return p == nullptr ? std::string_view() : std::string_view(reinterpret_cast<const char*>(p), n);
}

std::string_view SslHandler::requested_server_name() const noexcept {
  const char* name = SSL_get_servername(ssl_, TLSEXT_NAMETYPE_host_name);
  return name == nullptr ? std::string_view() : std::string_view(name);
}

std::string_view SslHandler::protocol_version() const noexcept { return SSL_get_version(ssl_); }

bool SslHandler::is_session_reused() const noexcept { return SSL_session_reused(ssl_) == 1; }

std::vector<PeerCertificate> SslHandler::peer_certificates() const {
  // Still there after the channel closed; never the certificate of a failed handshake.
  if (ssl_ == nullptr || !handshake_succeeded_) return {};
  // A client's peer chain starts with the leaf; a server's leaves it out.
  return detail::to_peer_chain(SSL_get0_peer_certificate(ssl_), SSL_get_peer_cert_chain(ssl_));
}

std::vector<unsigned char> SslHandler::stapled_ocsp_response() const {
  if (ssl_ == nullptr || !handshake_succeeded_ || context_->server) return {};
  return detail::stapled_ocsp_response(ssl_);
}

void SslHandler::handler_added(ChannelHandlerContext& ctx) {
  data_->clock = &ctx.executor();
  if (ctx.channel().is_active()) start_handshake(ctx);
}

void SslHandler::handler_removed(ChannelHandlerContext& /*ctx*/) {
  cancel_handshake_timer();
  fail_pending(std::make_exception_ptr(ClosedChannelError("SslHandler removed")));
}

void SslHandler::channel_active(ChannelHandlerContext& ctx) {
  ctx.fire_channel_active();
  start_handshake(ctx);
}

void SslHandler::start_handshake(ChannelHandlerContext& ctx) {
  if (state_ != State::kIdle) return;
  state_ = State::kHandshaking;
  start_handshake_timer(ctx);
  // A server waits for the ClientHello; a client sends it now.
  if (!context_->server) do_handshake(ctx);
}

void SslHandler::start_handshake_timer(ChannelHandlerContext& ctx) {
  if (handshake_timer_started_ || handshake_timeout_.count() <= 0) return;
  handshake_timer_started_ = true;
  // Cancelled when the handshake ends, the channel goes inactive or the handler leaves, so the
  // context and the handler outlive the timer.
  auto* context = &ctx;
  handshake_timer_ = ctx.executor().schedule(handshake_timeout_, [this, context] {
    if (state_ != State::kHandshaking) return;
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(handshake_timeout_);
    fail(*context,
         std::make_exception_ptr(SslHandshakeError("TLS handshake timed out after " +
                                                   std::to_string(ms.count()) + " ms")),
         true);
  });
}

void SslHandler::cancel_handshake_timer() noexcept {
  if (handshake_timer_.valid()) handshake_timer_.cancel();
  handshake_timer_ = ScheduledFuture<void>();
}

void SslHandler::do_handshake(ChannelHandlerContext& ctx) {
  ERR_clear_error();
  const int r = SSL_do_handshake(ssl_);
  if (r == 1) {
    state_ = State::kReady;
    handshake_succeeded_ = true;
    cancel_handshake_timer();
    drain_output(ctx);  // the last flight (and a server's session ticket)
    ctx.flush();
    handshake_.try_set_value();
    if (flush_pending_) {
      flush_pending_ = false;
      encrypt_pending(ctx);
    }
    return;
  }
  const int err = SSL_get_error(ssl_, r);
  if (err == SSL_ERROR_WANT_READ) {
    if (BIO_ctrl_pending(wbio_) > 0) {
      drain_output(ctx);
      ctx.flush();
    }
    return;
  }
  fail(ctx, std::make_exception_ptr(handshake_error(ssl_, "TLS handshake failed")), true);
}

void SslHandler::channel_read(ChannelHandlerContext& ctx, Message msg) {
  if (!msg.is<ByteBuf>()) {
    ctx.fire_channel_read(std::move(msg));
    return;
  }
  if (state_ == State::kClosed || peer_closed_) return;  // nothing more is accepted
  const ByteBuf buf = msg.take<ByteBuf>();
  const auto bytes = buf.readable_span();
  if (bytes.empty()) return;
  if (BIO_write(rbio_, bytes.data(), static_cast<int>(bytes.size())) !=
      static_cast<int>(bytes.size())) {
    fail(ctx, std::make_exception_ptr(SslError("out of memory buffering TLS input")),
         state_ != State::kReady);
    return;
  }
  if (state_ == State::kIdle) {  // data before channel_active
    state_ = State::kHandshaking;
    start_handshake_timer(ctx);
  }
  if (state_ == State::kHandshaking) {
    do_handshake(ctx);
    if (state_ != State::kReady) return;
  }
  read_records(ctx);
}

void SslHandler::read_records(ChannelHandlerContext& ctx) {
  ByteBuf out;
  for (;;) {
    const std::size_t available =
        std::max<std::size_t>(BIO_ctrl_pending(rbio_), static_cast<std::size_t>(SSL_pending(ssl_)));
    if (available == 0) break;
    if (out.capacity() == 0)
      out = ctx.alloc().buffer(std::clamp<std::size_t>(available, 256, kMaxRecord));
    ERR_clear_error();
    std::size_t n = 0;
    const int r = SSL_read_ex(ssl_, out.writable_span().data(), out.writable_bytes(), &n);
    if (r == 1) {
      out.set_writer_index(out.writer_index() + n);
      read_produced_ = true;
      ctx.fire_channel_read(Message(std::move(out)));
      out = ByteBuf();
      if (state_ != State::kReady) return;  // a handler closed the channel
      continue;
    }
    const int err = SSL_get_error(ssl_, r);
    if (err == SSL_ERROR_WANT_READ) break;
    if (err == SSL_ERROR_ZERO_RETURN) {
      // close_notify: answer it and close.
      peer_closed_ = true;
      if (!close_started_) {
        close_started_ = true;
        SSL_shutdown(ssl_);
        drain_output(ctx);
        ctx.flush();
      }
      ctx.close();
      return;
    }
    fail(ctx, std::make_exception_ptr(SslError(detail::openssl_error_text("TLS read failed"))),
         false);
    return;
  }
  // Reading may have produced output (a key update answer).
  if (BIO_ctrl_pending(wbio_) > 0) {
    drain_output(ctx);
    ctx.flush();
  }
}

void SslHandler::channel_read_complete(ChannelHandlerContext& ctx) {
  const bool produced = std::exchange(read_produced_, false);
  // Without auto_read, a read that gave the application nothing (a handshake flight, half a
  // record) asks for more itself.
  if (!produced && state_ != State::kClosed && !ctx.channel().config().auto_read()) ctx.read();
  ctx.fire_channel_read_complete();
}

void SslHandler::channel_inactive(ChannelHandlerContext& ctx) {
  const bool truncated = state_ == State::kReady && !peer_closed_ && !close_started_;
  if (state_ == State::kIdle || state_ == State::kHandshaking) {
    handshake_.try_set_exception(std::make_exception_ptr(
        SslHandshakeError("the connection closed before the TLS handshake completed")));
  }
  state_ = State::kClosed;
  cancel_handshake_timer();
  fail_pending(std::make_exception_ptr(ClosedChannelError()));
  if (truncated) ctx.fire_exception_caught(std::make_exception_ptr(SslTruncationError()));
  ctx.fire_channel_inactive();
}

void SslHandler::write(ChannelHandlerContext& /*ctx*/, Message msg, ChannelPromise promise) {
  if (!msg.is<ByteBuf>() && !msg.is<CompositeByteBuf>()) {
    promise.try_set_exception(
        WrongTypeError("SslHandler encrypts ByteBuf and CompositeByteBuf only, not " +
                       std::string(msg.type_name())));
    return;
  }
  if (state_ == State::kClosed || close_started_) {
    promise.try_set_exception(ClosedChannelError());
    return;
  }
  pending_.push_back(PendingWrite{std::move(msg), std::move(promise)});
}

void SslHandler::flush(ChannelHandlerContext& ctx) {
  if (state_ == State::kReady) {
    encrypt_pending(ctx);
  } else if (state_ != State::kClosed) {
    flush_pending_ = true;  // sent once the handshake is done
  }
}

void SslHandler::encrypt_pending(ChannelHandlerContext& ctx) {
  if (pending_.empty()) {
    ctx.flush();
    return;
  }
  // A write completed (or failed) while encrypting may write again: that write lands in a fresh
  // pending_, not in the batch being walked.
  std::vector<PendingWrite> batch;
  batch.swap(pending_);
  try {
    for (std::size_t i = 0; i < batch.size(); ++i) {
      const bool last = i + 1 == batch.size();
      Message& msg = batch[i].msg;
      if (auto* buf = msg.try_get<ByteBuf>()) {
        const auto bytes = buf->readable_span();
        encrypt_bytes(ctx, bytes.data(), bytes.size(), last);
      } else {
        auto& composite = msg.get<CompositeByteBuf>();
        std::size_t skip = composite.reader_index();
        const std::size_t n = composite.num_components();
        for (std::size_t c = 0; c < n; ++c) {
          auto bytes = composite.component(c).readable_span();
          const std::size_t s = std::min(skip, bytes.size());
          skip -= s;
          bytes = bytes.subspan(s);
          encrypt_bytes(ctx, bytes.data(), bytes.size(), last && c + 1 == n);
        }
      }
      msg = Message();  // let the plaintext go as soon as it is encrypted
      if (!batch[i].promise.is_void()) {
        (staged_ == 0 ? done_promises_ : staged_promises_).push_back(std::move(batch[i].promise));
      }
    }
  } catch (...) {
    staged_ = 0;
    for (auto& w : batch) w.promise.try_set_exception(std::current_exception());
    fail(ctx, std::current_exception(), false);
    return;
  }
  batch.clear();
  if (pending_.empty()) pending_.swap(batch);  // keep the capacity
  drain_output(ctx);
  ctx.flush();
}

// Small writes are gathered into one staging record (OpenSSL makes one record per SSL_write, so
// gathering needs a plaintext copy); a run of a full record, or the last write of the flush when
// nothing is staged, is encrypted in place.
void SslHandler::encrypt_bytes(ChannelHandlerContext& ctx, const std::byte* data, std::size_t size,
                               bool last) {
  while (size > 0) {
    if (staged_ == 0 && (size >= kMaxRecord || last)) {
      const std::size_t n = std::min(size, kMaxRecord);
      ssl_write(data, n);
      data += n;
      size -= n;
    } else {
      if (staging_.capacity() == 0) staging_ = ctx.alloc().buffer(kMaxRecord);
      const std::size_t n = std::min(size, kMaxRecord - staged_);
      std::memcpy(staging_.data() + staged_, data, n);
      staged_ += n;
      data += n;
      size -= n;
      if (staged_ == kMaxRecord || (last && size == 0)) {
        ssl_write(staging_.data(), staged_);
        staged_ = 0;
        for (auto& p : staged_promises_) done_promises_.push_back(std::move(p));
        staged_promises_.clear();
      }
    }
    if (BIO_ctrl_pending(wbio_) >= kOutputChunk) drain_output(ctx);
  }
  if (last && staged_ > 0) {
    ssl_write(staging_.data(), staged_);
    staged_ = 0;
    for (auto& p : staged_promises_) done_promises_.push_back(std::move(p));
    staged_promises_.clear();
  }
  if (last) staging_ = ByteBuf();
}

void SslHandler::ssl_write(const std::byte* data, std::size_t size) {
  ERR_clear_error();
  std::size_t written = 0;
  if (SSL_write_ex(ssl_, data, size, &written) != 1 || written != size) {
    throw SslError(detail::openssl_error_text("TLS write failed"));
  }
}

void SslHandler::drain_output(ChannelHandlerContext& ctx) {
  const std::size_t pending = BIO_ctrl_pending(wbio_);
  if (pending == 0) {
    // Nothing to send (empty writes): their promises are done.
    for (auto& p : done_promises_) p.try_set_value();
    done_promises_.clear();
    return;
  }
  ByteBuf out = ctx.alloc().buffer(pending);
  const int n = BIO_read(wbio_, out.writable_span().data(), static_cast<int>(pending));
  out.set_writer_index(static_cast<std::size_t>(std::max(n, 0)));
  ctx.write(Message(std::move(out)), take_done_promises(ctx));
}

ChannelPromise SslHandler::take_done_promises(ChannelHandlerContext& ctx) {
  if (done_promises_.empty()) return {};
  if (done_promises_.size() == 1) {
    ChannelPromise p = std::move(done_promises_.front());
    done_promises_.clear();
    return p;
  }
  ChannelPromise combined = ctx.new_promise();
  combined.future().add_listener(
      [promises = std::move(done_promises_)](const Future<void>& f) mutable {
        for (auto& p : promises) {
          if (f.is_success()) {
            p.try_set_value();
          } else {
            p.try_set_exception(f.cause());
          }
        }
      });
  done_promises_ = {};
  return combined;
}

void SslHandler::close(ChannelHandlerContext& ctx, ChannelPromise promise) {
  if (close_started_ && !close_notify_settled_.is_void() && !close_notify_settled_.is_done() &&
      ctx.channel().is_active()) {
    // An earlier close() or shutdown_output() sent close_notify and the transport has not
    // written it yet (a second close from a listener of the same write, as an HTTP server's
    // codec and keep-alive handler both close after a last response): closing now would drop
    // it, and the peer would see a truncated stream. Close once it was written (or timed out).
    auto* context = &ctx;
    close_notify_settled_.future().add_listener(
        [context, keep = ctx.handler_ptr(), promise = std::move(promise)](
            const Future<void>&) mutable { context->close(std::move(promise)); });
    return;
  }
  if (close_started_ || state_ != State::kReady || !ctx.channel().is_active()) {
    close_started_ = true;
    fail_pending(std::make_exception_ptr(ClosedChannelError()));
    ctx.close(std::move(promise));
    return;
  }
  close_started_ = true;
  send_close_notify(ctx, std::move(promise), true);
}

void SslHandler::shutdown_output(ChannelHandlerContext& ctx, ChannelPromise promise) {
  if (close_started_ || state_ != State::kReady || !ctx.channel().is_active()) {
    ctx.shutdown_output(std::move(promise));
    return;
  }
  // The TLS stream ends with close_notify, then the TCP output; reading goes on (the peer's
  // close_notify, when it comes, closes the channel).
  close_started_ = true;
  send_close_notify(ctx, std::move(promise), false);
}

void SslHandler::send_close_notify(ChannelHandlerContext& ctx, ChannelPromise promise,
                                   bool then_close) {
  encrypt_pending(ctx);  // what was written before goes first
  fail_pending(std::make_exception_ptr(ClosedChannelError()));
  ERR_clear_error();
  SSL_shutdown(ssl_);  // queues close_notify in the write BIO
  ChannelPromise sent = ctx.new_promise();
  done_promises_.push_back(sent);
  drain_output(ctx);
  ctx.flush();
  // Close (or shut the output down) once close_notify was written, or when the peer takes too
  // long to read it; once only.
  struct Pending {
    ChannelPromise promise;
    ChannelPromise settled;
    bool done = false;
  };
  close_notify_settled_ = ctx.new_promise();
  auto pending = std::make_shared<Pending>(Pending{std::move(promise), close_notify_settled_});
  auto* context = &ctx;
  auto finish = [context, pending, then_close] {
    if (std::exchange(pending->done, true)) return;
    if (then_close) {
      context->close(std::move(pending->promise));
    } else {
      context->shutdown_output(std::move(pending->promise));
    }
    pending->settled.try_set_value();  // a close() that waited for close_notify goes on
  };
  if (sent.is_done()) {
    finish();
    return;
  }
  auto keep = ctx.handler_ptr();
  auto timer = ctx.executor().schedule(close_notify_timeout_, [finish, keep] { finish(); });
  sent.future().add_listener([finish, keep, timer](const Future<void>&) mutable {
    timer.cancel();
    finish();
  });
}

void SslHandler::fail(ChannelHandlerContext& ctx, std::exception_ptr error, bool handshake) {
  if (state_ == State::kClosed) return;
  state_ = State::kClosed;
  cancel_handshake_timer();
  // Send what OpenSSL queued (an alert telling the peer why), then close.
  if (BIO_ctrl_pending(wbio_) > 0) {
    drain_output(ctx);
    ctx.flush();
  }
  if (handshake) handshake_.try_set_exception(error);
  fail_pending(error);
  ctx.fire_exception_caught(error);
  close_started_ = true;
  ctx.close();
}

void SslHandler::fail_pending(const std::exception_ptr& error) {
  auto batch = std::move(pending_);
  pending_.clear();
  for (auto& w : batch) w.promise.try_set_exception(error);
  for (auto& p : staged_promises_) p.try_set_exception(error);
  staged_promises_.clear();
  for (auto& p : done_promises_) p.try_set_exception(error);
  done_promises_.clear();
}

}  // namespace trellis::ssl
