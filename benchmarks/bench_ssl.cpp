// TLS micro-benchmarks over memory, trellis's SslHandler against raw OpenSSL doing the same work
// in the same binary: full handshakes (a new session each time), resumed handshakes (a TLS 1.3
// ticket), and bulk encrypt+decrypt throughput (TLS 1.3, 16 KiB records). The trellis side runs
// two SslHandlers on EmbeddedChannels (client and server) and moves the ciphertext between them;
// the raw side runs two SSL objects on memory BIOs and moves it the same way.
// allocs_per_op counts operator-new calls (OpenSSL's own mallocs are not seen).
// ServerHandshake/{Ecdsa,Rsa}{,Tls12}{Full,Resumed}: the server's CPU time alone per connection.
// LoopbackEcho/{Tls,Plain}: 100 MB echoed over one loopback TCP connection, client and server on
// a loop each, with and without TLS 1.3 (SslHandler on both sides): the MB/s of a bulk echo.
#include <benchmark/benchmark.h>

#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <ctime>

#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <trellis/pipeline.hpp>
#include <trellis/ssl.hpp>
#include <trellis/testing.hpp>
#include <trellis/transport.hpp>

#include "test_pki.hpp"
#include "tls_pair.hpp"

using namespace trellis;
using namespace trellis::ssl;
using trellis::ssl::testing::test_pki;
using trellis::ssl::testing::TlsPair;

namespace {

constexpr std::size_t kBulkBytes = 1 << 20;
constexpr std::size_t kRecord = 16 * 1024;

struct Allocs {
  std::uint64_t start = trellis::testing::total_allocations();
  void report(benchmark::State& state) const {
    state.counters["allocs_per_op"] =
        static_cast<double>(trellis::testing::total_allocations() - start) /
        static_cast<double>(state.iterations());
  }
};

SslContext server_context() {
  return SslContextBuilder::for_server(test_pki().server_cert, test_pki().server_key).build();
}

SslContext client_context(std::size_t cache) {
  return SslContextBuilder::for_client()
      .trust_ca_file(test_pki().ca_cert)
      .session_cache_size(cache)
      .build();
}

void require(bool ok, const char* what) {
  if (!ok) throw std::runtime_error(what);
}

// --- trellis -------------------------------------------------------------------------------

void TrellisFullHandshake(benchmark::State& state) {
  const SslContext server = server_context();
  const SslContext client = client_context(0);
  for (auto _ : state) {
    TlsPair pair(client, server);
    pair.pump();
    require(pair.client_ssl->is_handshake_done() && !pair.client_ssl->is_session_reused(),
            "full handshake");
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(TrellisFullHandshake)->Unit(benchmark::kMicrosecond);

void TrellisResumedHandshake(benchmark::State& state) {
  const SslContext server = server_context();
  const SslContext client = client_context(16);
  {
    TlsPair first(client, server);
    first.pump();
  }
  for (auto _ : state) {
    TlsPair pair(client, server);
    pair.pump();
    require(pair.client_ssl->is_session_reused(), "resumed handshake");
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(TrellisResumedHandshake)->Unit(benchmark::kMicrosecond);

// 1 MiB written by the client in 16 KiB buffers, flushed once, encrypted, moved to the server in
// one read and decrypted there.
void TrellisBulk(benchmark::State& state) {
  const SslContext server = server_context();
  const SslContext client = client_context(0);
  TlsPair pair(client, server);
  pair.pump();
  std::vector<char> chunk(kRecord, 'x');
  const ByteBuf source = ByteBuf::from(std::string_view(chunk.data(), chunk.size()));
  Allocs allocs;
  for (auto _ : state) {
    for (std::size_t n = 0; n < kBulkBytes; n += kRecord) pair.client->write(source.share());
    pair.client->flush();
    std::size_t received = 0;
    while (auto m = pair.client->read_outbound()) pair.server->write_inbound(std::move(*m));
    while (auto m = pair.server->read_inbound<ByteBuf>()) received += m->readable_bytes();
    require(received == kBulkBytes, "bulk bytes");
  }
  allocs.report(state);
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * kBulkBytes));
}
BENCHMARK(TrellisBulk)->Unit(benchmark::kMicrosecond);

// --- the server's side of a handshake alone ----------------------------------------------
// ServerHandshake/{Ecdsa,Rsa}{,Tls12}{Full,Resumed}: only the server's CPU time per connection
// (CLOCK_THREAD_CPUTIME_ID around making the server's SslHandler and channel and around every
// delivery of the client's bytes to it, the close_notify exchange included); the client's work
// is not counted. TLS 1.3 (and 1.2), the default suites and groups; the client does not verify (its
// cost is not measured); TLS 1.2 variants too. Manual time: the reported time per iteration is the
// server's CPU.

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// An RSA-2048 self-signed server certificate and key, as PEM text (made once).
const std::pair<std::string, std::string>& rsa_server_pem() {
  static const std::pair<std::string, std::string> pem = [] {
    EVP_PKEY* key = EVP_RSA_gen(2048);
    X509* cert = X509_new();
    require(key != nullptr && cert != nullptr, "RSA key");
    X509_set_version(cert, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(cert), 1);
    X509_gmtime_adj(X509_getm_notBefore(cert), -86400);
    X509_gmtime_adj(X509_getm_notAfter(cert), 86400);
    X509_set_pubkey(cert, key);
    X509_NAME_add_entry_by_txt(X509_get_subject_name(cert), "CN", MBSTRING_ASC,
                               reinterpret_cast<const unsigned char*>("localhost"), -1, -1, 0);
    X509_set_issuer_name(cert, X509_get_subject_name(cert));
    require(X509_sign(cert, key, EVP_sha256()) > 0, "RSA certificate");
    auto text = [](auto write) {
      BIO* b = BIO_new(BIO_s_mem());
      write(b);
      char* data = nullptr;
      const long n = BIO_get_mem_data(b, &data);
      std::string out(data, static_cast<std::size_t>(n));
      BIO_free(b);
      return out;
    };
    auto result =
        std::make_pair(text([&](BIO* b) { PEM_write_bio_X509(b, cert); }), text([&](BIO* b) {
                         PEM_write_bio_PrivateKey(b, key, nullptr, nullptr, 0, nullptr, nullptr);
                       }));
    X509_free(cert);
    EVP_PKEY_free(key);
    return result;
  }();
  return pem;
}

void ServerHandshake(benchmark::State& state, bool rsa, bool resumed, bool tls12 = false) {
  const SslContext server =
      rsa ? SslContextBuilder::for_server_pem(rsa_server_pem().first, rsa_server_pem().second)
                .build()
          : server_context();
  const SslContext client = SslContextBuilder::for_client()
                                .verify_peer(false)
                                .verify_hostname(false)
                                .session_cache_size(resumed ? 16 : 0)
                                .max_version(tls12 ? TlsVersion::kTls12 : TlsVersion::kTls13)
                                .build();
  auto connect = [&](double& server_cpu, bool expect_resumed) {
    double t0 = thread_cpu_seconds();
    auto server_ssl = std::make_shared<SslHandler>(server);
    auto server_ch = EmbeddedChannel::create(server_ssl);
    server_cpu += thread_cpu_seconds() - t0;
    auto client_ssl = std::make_shared<SslHandler>(client, "localhost");
    auto client_ch = EmbeddedChannel::create(client_ssl);
    auto pump = [&] {
      for (bool moved = true; moved;) {
        moved = false;
        while (auto m = client_ch->read_outbound()) {
          moved = true;
          if (!server_ch->is_open()) continue;
          t0 = thread_cpu_seconds();
          server_ch->write_inbound(std::move(*m));
          server_cpu += thread_cpu_seconds() - t0;
        }
        while (auto m = server_ch->read_outbound()) {
          moved = true;
          if (client_ch->is_open()) client_ch->write_inbound(std::move(*m));
        }
      }
    };
    pump();
    require(client_ssl->is_handshake_done() && client_ssl->is_session_reused() == expect_resumed,
            expect_resumed ? "resumed handshake" : "full handshake");
    client_ch->close();
    pump();
  };
  if (resumed) {
    double ignored = 0;
    connect(ignored, false);
  }
  for (auto _ : state) {
    double server_cpu = 0;
    connect(server_cpu, resumed);
    state.SetIterationTime(server_cpu);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK_CAPTURE(ServerHandshake, EcdsaFull, false, false)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(ServerHandshake, EcdsaResumed, false, true)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(ServerHandshake, RsaFull, true, false)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(ServerHandshake, RsaResumed, true, true)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
// TLS 1.2: a resumption there has no key exchange at all (TLS 1.3's psk_dhe_ke, which OpenSSL's
// and the browsers' clients ask for, does an ECDHE on every resumption).
BENCHMARK_CAPTURE(ServerHandshake, EcdsaTls12Full, false, false, true)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(ServerHandshake, EcdsaTls12Resumed, false, true, true)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(ServerHandshake, RsaTls12Full, true, false, true)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(ServerHandshake, RsaTls12Resumed, true, true, true)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

// --- raw OpenSSL ---------------------------------------------------------------------------

struct RawEnd {
  SSL* ssl;
  BIO* in;
  BIO* out;
  RawEnd(SSL_CTX* ctx, bool server) : ssl(SSL_new(ctx)) {
    in = BIO_new(BIO_s_mem());
    out = BIO_new(BIO_s_mem());
    BIO_set_mem_eof_return(in, -1);
    SSL_set_bio(ssl, in, out);
    if (server) {
      SSL_set_accept_state(ssl);
    } else {
      SSL_set_connect_state(ssl);
    }
  }
  // close_notify, as SslHandler::close sends it: OpenSSL marks the session of a connection
  // freed without it as not resumable.
  ~RawEnd() {
    SSL_shutdown(ssl);
    SSL_free(ssl);
  }
  RawEnd(const RawEnd&) = delete;
  RawEnd& operator=(const RawEnd&) = delete;
};

// Moves what from wrote to to's input through a buffer, as a socket read would; true if any.
bool shuttle(RawEnd& from, RawEnd& to, std::vector<unsigned char>& buf) {
  const std::size_t pending = BIO_ctrl_pending(from.out);
  if (pending == 0) return false;
  if (buf.size() < pending) buf.resize(pending);
  const int n = BIO_read(from.out, buf.data(), static_cast<int>(pending));
  BIO_write(to.in, buf.data(), n);
  return true;
}

struct RawPair {
  RawEnd client;
  RawEnd server;
  std::vector<unsigned char> buf;
  std::vector<unsigned char> plain = std::vector<unsigned char>(kRecord);

  RawPair(SSL_CTX* client_ctx, SSL_CTX* server_ctx, SSL_SESSION* session)
      : client(client_ctx, false), server(server_ctx, true) {
    SSL_set_tlsext_host_name(client.ssl, "localhost");
    SSL_set1_host(client.ssl, "localhost");
    if (session != nullptr) SSL_set_session(client.ssl, session);
  }

  void handshake() {
    for (int i = 0; i < 100; ++i) {
      const int c = SSL_do_handshake(client.ssl);
      shuttle(client, server, buf);
      const int s = SSL_do_handshake(server.ssl);
      shuttle(server, client, buf);
      if (c == 1 && s == 1) break;
    }
    // The client reads the session ticket, as the trellis pair does.
    std::size_t n = 0;
    SSL_read_ex(client.ssl, plain.data(), plain.size(), &n);
    require(SSL_is_init_finished(client.ssl) && SSL_is_init_finished(server.ssl), "raw handshake");
  }
};

SSL_CTX* raw_client_ctx(bool cache) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_load_verify_locations(ctx, test_pki().ca_cert.c_str(), nullptr);
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  // Sessions are kept by the benchmark (as SslContext keeps them), not in OpenSSL's cache.
  SSL_CTX_set_session_cache_mode(
      ctx, cache ? SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE : SSL_SESS_CACHE_OFF);
  return ctx;
}

void RawFullHandshake(benchmark::State& state) {
  const SslContext server = server_context();  // the same server settings
  SSL_CTX* client = raw_client_ctx(false);
  for (auto _ : state) {
    RawPair pair(client, server.native_handle(), nullptr);
    pair.handshake();
    require(!SSL_session_reused(pair.client.ssl), "raw full handshake");
  }
  SSL_CTX_free(client);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(RawFullHandshake)->Unit(benchmark::kMicrosecond);

void RawResumedHandshake(benchmark::State& state) {
  const SslContext server = server_context();
  SSL_CTX* client = raw_client_ctx(true);
  SSL_SESSION* session = nullptr;
  {
    RawPair first(client, server.native_handle(), nullptr);
    first.handshake();
    session = SSL_get1_session(first.client.ssl);
  }
  for (auto _ : state) {
    RawPair pair(client, server.native_handle(), session);
    pair.handshake();
    require(SSL_session_reused(pair.client.ssl) == 1, "raw resumed handshake");
    // The ticket of this connection is used for the next (TLS 1.3 tickets are single-use on
    // the client; the trellis client cache does the same).
    SSL_SESSION_free(session);
    session = SSL_get1_session(pair.client.ssl);
  }
  SSL_SESSION_free(session);
  SSL_CTX_free(client);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(RawResumedHandshake)->Unit(benchmark::kMicrosecond);

void RawBulk(benchmark::State& state) {
  const SslContext server = server_context();
  SSL_CTX* client = raw_client_ctx(false);
  {
    RawPair pair(client, server.native_handle(), nullptr);
    pair.handshake();
    std::vector<unsigned char> chunk(kRecord, 'x');
    Allocs allocs;
    for (auto _ : state) {
      for (std::size_t n = 0; n < kBulkBytes; n += kRecord) {
        std::size_t w = 0;
        SSL_write_ex(pair.client.ssl, chunk.data(), chunk.size(), &w);
      }
      shuttle(pair.client, pair.server, pair.buf);
      std::size_t received = 0;
      std::size_t r = 0;
      while (SSL_read_ex(pair.server.ssl, pair.plain.data(), pair.plain.size(), &r) == 1) {
        received += r;
      }
      require(received == kBulkBytes, "raw bulk bytes");
    }
    allocs.report(state);
  }
  SSL_CTX_free(client);
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * kBulkBytes));
}
BENCHMARK(RawBulk)->Unit(benchmark::kMicrosecond);

// --- loopback echo (sockets) ---------------------------------------------------------------

constexpr std::size_t kEchoBytes = 100'000'000;  // 100 MB each way
constexpr std::size_t kEchoChunk = 16'000;       // one TLS record's worth per write

// Echoes every read; stops reading while the echo cannot be written, so memory stays bounded.
class EchoBack final : public ChannelInboundHandler {
 public:
  bool is_sharable() const noexcept override { return true; }
  void channel_read(ChannelHandlerContext& ctx, Message msg) override {
    ctx.write_and_flush(std::move(msg));
    if (!ctx.channel().is_writable()) ctx.channel().config().set_auto_read(false);
  }
  void channel_writability_changed(ChannelHandlerContext& ctx) override {
    if (ctx.channel().is_writable()) ctx.channel().config().set_auto_read(true);
    ctx.fire_channel_writability_changed();
  }
  void exception_caught(ChannelHandlerContext& ctx, std::exception_ptr) override { ctx.close(); }
};

// Writes shares of one chunk while the channel is writable (after the handshake when there is
// one), until kEchoBytes went out; completes done when they all came back.
class EchoSource final : public ChannelInboundHandler {
 public:
  EchoSource(const ByteBuf& chunk, Promise<void> done) : chunk_(chunk), done_(std::move(done)) {}
  void channel_active(ChannelHandlerContext& ctx) override {
    if (auto tls = ctx.pipeline().get<SslHandler>("tls")) {
      tls->handshake_future().add_listener([this, &ctx](const Future<void>& f) {
        if (f.is_success()) {
          write_more(ctx);
        } else {
          done_.try_set_exception(f.cause());
        }
      });
    } else {
      write_more(ctx);
    }
    ctx.fire_channel_active();
  }
  void channel_writability_changed(ChannelHandlerContext& ctx) override {
    if (started_) write_more(ctx);
    ctx.fire_channel_writability_changed();
  }
  void channel_read(ChannelHandlerContext&, Message msg) override {
    received_ += msg.get<ByteBuf>().readable_bytes();
    if (received_ == kEchoBytes) done_.try_set_value();
  }
  void exception_caught(ChannelHandlerContext& ctx, std::exception_ptr e) override {
    done_.try_set_exception(e);
    ctx.close();
  }

 private:
  void write_more(ChannelHandlerContext& ctx) {
    started_ = true;
    while (sent_ < kEchoBytes && ctx.channel().is_writable()) {
      ctx.write_and_flush(Message(chunk_.share()));
      sent_ += chunk_.readable_bytes();
    }
  }
  const ByteBuf& chunk_;
  Promise<void> done_;
  bool started_ = false;
  std::size_t sent_ = 0;
  std::size_t received_ = 0;
};

void loopback_echo(benchmark::State& state, bool tls) {
  const SslContext server_ctx = server_context();
  const SslContext client_ctx = client_context(0);
  std::vector<char> bytes(kEchoChunk, 'x');
  const ByteBuf chunk = ByteBuf::from(std::string_view(bytes.data(), bytes.size()));
  EventLoopGroup group(2);
  auto echo = std::make_shared<EchoBack>();
  auto server = ServerBootstrap()
                    .group(group)
                    .child_handler(ChannelInitializer::from([&server_ctx, tls, echo](Channel& ch) {
                      if (tls)
                        ch.pipeline().add_last("tls", std::make_shared<SslHandler>(server_ctx));
                      ch.pipeline().add_last("echo", echo);
                    }))
                    .bind("127.0.0.1", 0)
                    .get();
  const std::uint16_t port = server->local_address()->port();
  for (auto _ : state) {
    Promise<void> done;
    Future<void> finished = done.future();
    auto source = std::make_shared<EchoSource>(chunk, std::move(done));
    auto client = Bootstrap()
                      .group(group)
                      .handler(ChannelInitializer::from([&client_ctx, tls, source](Channel& ch) {
                        if (tls) {
                          ch.pipeline().add_last(
                              "tls", std::make_shared<SslHandler>(client_ctx, "localhost"));
                        }
                        ch.pipeline().add_last("source", source);
                      }))
                      .connect("127.0.0.1", port)
                      .get();
    finished.get();
    client->close();
    client->close_future().wait();
  }
  server->close();
  server->close_future().wait();
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * kEchoBytes));
}

void LoopbackEchoTls(benchmark::State& state) { loopback_echo(state, true); }
BENCHMARK(LoopbackEchoTls)
    ->Name("LoopbackEcho/Tls")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(3);
void LoopbackEchoPlain(benchmark::State& state) { loopback_echo(state, false); }
BENCHMARK(LoopbackEchoPlain)
    ->Name("LoopbackEcho/Plain")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(3);

}  // namespace

BENCHMARK_MAIN();
