// HTTP/1.1 static file server: GET and HEAD of the files under a root directory, with
// Last-Modified / If-Modified-Since, one byte range per request, and the bodies sent with
// sendfile(2) (see file_server_handler.hpp).
//
//   file_server --root DIR [--host H] [--port P] [--threads N] [--send-timeout-ms N]
//
// --port 0 picks a free port; the "listening on" line tells which. --send-timeout-ms bounds
// how long a connection may stay unwritable (a client that stops reading; default 60 s, which
// also bounds a download slower than the file size per minute). SIGINT/SIGTERM stop it.
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include <trellis/transport.hpp>

#include "file_server_handler.hpp"

int main(int argc, char** argv) {
  std::string host = "127.0.0.1";
  std::string root;
  int port = 8080;
  unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  trellis::http::HttpServerTimeouts timeouts;
  auto usage = [&] {
    std::fprintf(stderr,
                 "usage: %s --root DIR [--host H] [--port P] [--threads N] "
                 "[--send-timeout-ms N]\n",
                 argv[0]);
    return 2;
  };
  for (int i = 1; i < argc; i += 2) {
    std::string flag = argv[i];
    if (i + 1 >= argc) return usage();  // every flag takes a value
    char* end = nullptr;
    const long number = std::strtol(argv[i + 1], &end, 10);
    const bool numeric = end != argv[i + 1] && *end == '\0' && number >= 0;
    if (flag == "--host") {
      host = argv[i + 1];
    } else if (flag == "--root") {
      root = argv[i + 1];
    } else if (!numeric) {
      return usage();
    } else if (flag == "--port") {
      port = static_cast<int>(number);
    } else if (flag == "--threads") {
      threads = static_cast<unsigned>(std::max(1L, number));
    } else if (flag == "--send-timeout-ms") {
      timeouts.send_timeout = std::chrono::milliseconds(number);
    } else {
      return usage();
    }
  }
  if (root.empty()) return usage();

  std::shared_ptr<examples::FileServerHandler> files;
  try {
    files = std::make_shared<examples::FileServerHandler>(root);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "file_server: cannot serve %s: %s\n", root.c_str(), e.what());
    return 1;
  }

  // Block the stop signals in every thread (the loops inherit the mask); main waits for them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  trellis::EventLoopGroup acceptor(1);
  trellis::EventLoopGroup workers(threads);
  trellis::ServerBootstrap bootstrap;
  bootstrap.group(acceptor, workers)
      .channel<trellis::ServerSocketChannel>()
      .option(trellis::channel_option::so_reuseaddr, true)
      .child_handler(trellis::ChannelInitializer::from([files, timeouts](trellis::Channel& ch) {
        examples::init_file_server_pipeline(ch, files, timeouts);
      }));

  std::shared_ptr<trellis::Channel> server;
  try {
    server = bootstrap.bind(host, static_cast<std::uint16_t>(port)).get();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "file_server: cannot listen on %s:%d: %s\n", host.c_str(), port, e.what());
    return 1;
  }
  std::printf("file_server listening on %s (%u worker threads)\n",
              server->local_address()->to_string().c_str(), threads);
  std::fflush(stdout);

  int signal = 0;
  sigwait(&stop_signals, &signal);
  std::printf("file_server: signal %d, shutting down\n", signal);
  server->close();
  server->close_future().wait();
  workers.shutdown_gracefully(std::chrono::milliseconds(0), std::chrono::seconds(5)).wait();
  acceptor.shutdown_gracefully(std::chrono::milliseconds(0), std::chrono::seconds(5)).wait();
  return 0;
}
