// http_client: fetches a URL and prints the status line, the headers and the body, as curl -i.
//
//   http_client URL [-X METHOD] [-d BODY] [-H 'Name: value']... [--timeout-ms N] [--futures]
//               [--cacert FILE] [--insecure]
//
// Options and the URL come in any order, as with curl (http_client -X POST -d abc URL).
// An https:// URL is fetched over TLS: the server's certificate is verified against the system's
// trusted CAs, or those of --cacert; --insecure skips the verification (testing only).
// The request goes through a coroutine (co_await client.request(...)) by default, through the
// futures API (client.execute(...).get()) with --futures: the same engine either way. On failure
// it prints one line to stderr and exits with status 1 (2 for a bad command line).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include <trellis/http_client.hpp>
#include <trellis/ssl.hpp>
#include <trellis/transport.hpp>

using namespace trellis;
using namespace trellis::http;

namespace {

void print(const FullHttpResponse& r) {
  std::printf("%s %u %s\r\n", std::string(r.version.text()).c_str(), r.status.code,
              std::string(r.status.reason_phrase()).c_str());
  for (const auto& field : r.headers) {
    std::printf("%.*s: %.*s\r\n", static_cast<int>(field.name.size()), field.name.data(),
                static_cast<int>(field.value.size()), field.value.data());
  }
  std::printf("\r\n");
  const std::string body = r.content.to_string();
  std::fwrite(body.data(), 1, body.size(), stdout);
}

// The coroutine form: runs on one of the group's loops.
Task<FullHttpResponse> fetch(HttpClient& client, FullHttpRequest request) {
  FullHttpResponse response = co_await client.request(std::move(request));
  co_return response;
}

int usage(const char* self) {
  std::fprintf(stderr,
               "usage: %s [-X METHOD] [-d BODY] [-H 'Name: value']... [--timeout-ms N] "
               "[--futures] [--cacert FILE] [--insecure] URL (options and URL in any order)\n",
               self);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage(argv[0]);
  FullHttpRequest request;
  HttpClientOptions options;
  bool futures = false;
  bool insecure = false;
  std::string cacert;
  bool have_url = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    if (flag.empty() || flag.front() != '-') {  // the URL, wherever it is
      if (have_url) return usage(argv[0]);
      request.target = flag;
      have_url = true;
      continue;
    }
    if (flag == "--futures") {
      futures = true;
      continue;
    }
    if (flag == "--insecure") {
      insecure = true;
      continue;
    }
    if (i + 1 >= argc) return usage(argv[0]);
    const std::string_view value = argv[++i];
    if (flag == "-X") {
      request.method = HttpMethod::of(value);
    } else if (flag == "-d") {
      request.content = ByteBuf::from(std::string(value));
      if (request.method == HttpMethod::kGet) request.method = HttpMethod::kPost;
    } else if (flag == "-H") {
      const auto colon = value.find(':');
      if (colon == std::string_view::npos) return usage(argv[0]);
      std::string_view v = value.substr(colon + 1);
      while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
      request.headers.add(value.substr(0, colon), v);
    } else if (flag == "--cacert") {
      cacert = value;
    } else if (flag == "--timeout-ms") {
      options.request_timeout = std::chrono::milliseconds(std::atol(std::string(value).c_str()));
    } else {
      return usage(argv[0]);
    }
  }

  if (!have_url) return usage(argv[0]);

  if (insecure || !cacert.empty()) {
    try {
      auto tls = ssl::SslContextBuilder::for_client().alpn({"http/1.1"});
      if (!cacert.empty()) tls.trust_ca_file(cacert);
      if (insecure) tls.verify_peer(false);
      options.tls = std::make_shared<const ssl::SslContext>(tls.build());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "http_client: %s\n", e.what());
      return 1;
    }
  }

  EventLoopGroup group(1);
  HttpClient client(group, options);
  try {
    FullHttpResponse response = futures ? client.execute(std::move(request)).get()
                                        : group.spawn(fetch(client, std::move(request))).get();
    print(response);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "http_client: %s\n", e.what());
    return 1;
  }
}
