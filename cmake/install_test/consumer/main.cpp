// A program that uses trellis only through its installed headers and the trellis:: targets (or
// the flags of `pkg-config trellis`), to prove the installed package is complete: headers,
// libraries and their usage requirements.
#include <trellis/codec/compression.hpp>
#include <trellis/pipeline.hpp>
#include <trellis/pipeline/error.hpp>
#include <trellis/pipeline/unique_function.hpp>
#include <trellis/ssl.hpp>
#include <trellis/testing/allocation_counter.hpp>
#include <trellis/transport.hpp>
#include <trellis/version.hpp>

#include <cstdio>
#include <memory>
#include <string>
#include <string_view>

// Usage requirements of trellis::transport must reach its consumers.
#ifndef ASIO_STANDALONE
#error "trellis::transport did not carry ASIO_STANDALONE to its consumer"
#endif
#if !__has_include(<asio.hpp>)
#error "trellis::transport did not make the Asio headers visible"
#endif

// The installed <trellis/version.hpp> is the version of the package that was found.
#ifndef TRELLIS_EXPECTED_VERSION
#error "compile with -DTRELLIS_EXPECTED_VERSION=\"MAJOR.MINOR.PATCH\""
#endif
static_assert(std::string_view(TRELLIS_VERSION) == TRELLIS_EXPECTED_VERSION,
              "<trellis/version.hpp> is not the version of the package");

int main() {
  int calls = 0;
  auto owned = std::make_unique<int>(41);
  trellis::UniqueFunction<void()> fn = [&calls, p = std::move(owned)] { calls += *p + 1; };
  fn();
  if (calls != 42) return 1;

  std::string caught;
  try {
    throw trellis::IllegalStateError("from the consumer");
  } catch (const trellis::Error& e) {
    caught = e.what();
  }
  if (caught != "from the consumer") return 2;

  // Links the installed trellis::testing library; the counting hook is never in user binaries.
  if (trellis::testing::allocation_hook_installed()) return 3;

  // Links the installed trellis::ssl and, through it, OpenSSL (found by the package's config).
  const trellis::ssl::SslContext tls =
      trellis::ssl::SslContextBuilder::for_client().verify_peer(false).build();
  if (tls.is_server()) return 4;
  // trellis::codec's compression engines link zlib, brotli and zstd through the package.
  trellis::ByteBuf packed = trellis::ByteBufAllocator::default_allocator().buffer(256);
  std::unique_ptr<trellis::codec::StreamCompressor> engines[] = {
      trellis::codec::make_zlib_compressor(trellis::codec::ZlibWrapper::kGzip, 6),
      trellis::codec::make_brotli_compressor(4), trellis::codec::make_zstd_compressor(3)};
  for (auto& compressor : engines) {
    packed.clear();
    compressor->compress({}, trellis::codec::StreamCompressor::Op::kFinish, packed);
    if (!packed.is_readable()) return 5;
  }

  std::printf("trellis %s (%d.%d.%d) consumer ok\n", TRELLIS_VERSION, TRELLIS_VERSION_MAJOR,
              TRELLIS_VERSION_MINOR, TRELLIS_VERSION_PATCH);
  return 0;
}
