// HTTP/1.1 echo server: GET /plaintext says hello, a request with a body gets its body back,
// any other request gets its request line and headers back (see http_echo_handler.hpp).
//
//   http_echo_server [--host H] [--port P] [--threads N]     (default 127.0.0.1:8080)
//                    [--acceptor-threads N]
//                    [--header-timeout-ms N] [--body-timeout-ms N] [--idle-timeout-ms N]
//                    [--tls-cert FILE --tls-key FILE [--tls-ocsp FILE]] [--compress]
//                    [--proxy-protocol]
//
// The timeouts bound how long a client may take over a request head (default 30 s), leave a
// request body without sending (60 s) and keep an idle connection (60 s); 0 turns one off.
// With --tls-cert (a PEM chain, leaf first) and --tls-key it serves HTTPS (TLS 1.2 and 1.3, ALPN
// http/1.1) with the same contract; --tls-ocsp staples that DER OCSP response for the certificate
// (whose issuer must follow it in the --tls-cert chain) to clients that ask. SIGHUP reads the
// files again and serves the new certificate (and response) to new connections (connections
// already open keep theirs; when the files cannot be loaded, it says why and keeps the old one).
// --compress compresses response bodies (br, zstd, gzip or deflate, as the request's
// Accept-Encoding allows; see HttpContentCompressor). --port 0 picks a free port; the
// "listening on" line tells which. --proxy-protocol expects a PROXY protocol header (v1 or v2,
// as HAProxy's send-proxy / send-proxy-v2 send it) first on every connection, within 5 s, and
// refuses connections without one; the request dump then shows the client address it gave.
// Connections are accepted on a loop of their own (--acceptor-threads 1, the default) or, with
// --acceptor-threads 0, on the worker loops (as nginx's workers accept: with one worker, no
// thread hop per new connection). SIGINT/SIGTERM stop it.
#include <algorithm>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <thread>

#include <trellis/codec/haproxy/haproxy_message_decoder.hpp>
#include <trellis/ssl.hpp>
#include <trellis/transport.hpp>

#include "example_main.hpp"
#include "http_echo_handler.hpp"

int main(int argc, char** argv) {
  std::string host = "127.0.0.1";
  std::uint16_t port = 8080;
  unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  unsigned acceptor_threads = 1;
  trellis::http::HttpServerTimeouts timeouts;
  std::string tls_cert;
  std::string tls_key;
  std::string tls_ocsp;
  bool compress = false;
  bool proxy_protocol = false;
  const char* usage =
      "http_echo_server [--host H] [--port P] [--threads N] [--acceptor-threads N] "
      "[--header-timeout-ms N] [--body-timeout-ms N] [--idle-timeout-ms N] "
      "[--tls-cert FILE --tls-key FILE [--tls-ocsp FILE]] [--compress] "
      "[--proxy-protocol]";
  using examples::Milliseconds;
  if (!examples::read_flags(argc, argv,
                            {{"--host", &host},
                             {"--port", &port},
                             {"--threads", &threads},
                             {"--acceptor-threads", &acceptor_threads},
                             {"--header-timeout-ms", Milliseconds{&timeouts.header_timeout}},
                             {"--body-timeout-ms", Milliseconds{&timeouts.body_timeout}},
                             {"--idle-timeout-ms", Milliseconds{&timeouts.idle_timeout}},
                             {"--tls-cert", &tls_cert},
                             {"--tls-key", &tls_key},
                             {"--tls-ocsp", &tls_ocsp},
                             {"--compress", &compress},
                             {"--proxy-protocol", &proxy_protocol}},
                            usage)) {
    return 2;
  }
  if (tls_cert.empty() != tls_key.empty() || (tls_cert.empty() && !tls_ocsp.empty())) {
    std::fprintf(stderr, "usage: %s\n", usage);
    return 2;
  }
  threads = std::max(1u, threads);

  auto tls_builder = [&] {
    auto builder = trellis::ssl::SslContextBuilder::for_server(tls_cert, tls_key);
    builder.alpn({"http/1.1"});
    if (!tls_ocsp.empty()) builder.ocsp_response_file(tls_ocsp);
    return builder;
  };
  std::optional<trellis::ssl::SslContext> tls;  // its copies share reloads
  if (!tls_cert.empty()) {
    try {
      tls = tls_builder().build();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "http_echo_server: %s\n", e.what());
      return 1;
    }
  }

  examples::StopSignals stop(
      /*with_hangup=*/tls
          .has_value());  // before the loops: their threads inherit the blocked signals
  trellis::EventLoopGroup workers(threads);
  std::optional<trellis::EventLoopGroup> acceptor;
  if (acceptor_threads > 0) acceptor.emplace(acceptor_threads);
  trellis::ServerBootstrap bootstrap;
  bootstrap.group(acceptor ? *acceptor : workers, workers)
      .channel<trellis::ServerSocketChannel>()
      .option(trellis::channel_option::so_reuseaddr, true)
      .child_handler(trellis::ChannelInitializer::from(
          [timeouts, tls, compress, proxy_protocol](trellis::Channel& ch) {
            // The PROXY header comes first, in the clear, before any TLS.
            if (proxy_protocol) {
              ch.pipeline().add_last("proxy-protocol",
                                     std::make_shared<trellis::codec::HAProxyMessageDecoder>());
            }
            if (tls)
              ch.pipeline().add_last("tls", std::make_shared<trellis::ssl::SslHandler>(*tls));
            examples::init_http_echo_pipeline(ch, 1 << 20, timeouts);
            if (compress) {
              ch.pipeline().add_after("keep-alive", "compressor",
                                      std::make_shared<trellis::http::HttpContentCompressor>());
            }
          }));

  std::shared_ptr<trellis::Channel> server =
      examples::bind_or_report(bootstrap.bind(host, port), "http_echo_server");
  if (!server) return 1;
  std::printf("http_echo_server listening on %s (%u worker threads%s)\n",
              server->local_address()->to_string().c_str(), threads, tls ? ", TLS" : "");
  std::fflush(stdout);

  int signal = stop.wait();
  for (; signal == SIGHUP; signal = stop.wait()) {
    try {
      tls->reload(tls_builder());
      std::printf("http_echo_server: reloaded the certificate from %s\n", tls_cert.c_str());
    } catch (const std::exception& e) {
      std::printf("http_echo_server: reload failed, keeping the certificate: %s\n", e.what());
    }
    std::fflush(stdout);
  }
  std::printf("http_echo_server: signal %d, shutting down\n", signal);
  server->close();
  server->close_future().wait();
  workers.shutdown_gracefully(std::chrono::milliseconds(0), std::chrono::seconds(5)).wait();
  if (acceptor) {
    acceptor->shutdown_gracefully(std::chrono::milliseconds(0), std::chrono::seconds(5)).wait();
  }
  return 0;
}
