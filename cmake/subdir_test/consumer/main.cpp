// A program built together with trellis (add_subdirectory): it links trellis::pipeline, includes
// the generated version header and prints the version it was compiled against.
#include <trellis/pipeline/byte_buf_allocator.hpp>
#include <trellis/pipeline/error.hpp>
#include <trellis/pipeline/unique_function.hpp>
#include <trellis/version.hpp>

#include <cstdio>
#include <memory>
#include <string_view>

// The parent's CMAKE_CXX_FLAGS still reach its own targets.
#ifndef TRELLIS_CONSUMER_PARENT_FLAGS
#error "the parent's CMAKE_CXX_FLAGS were lost"
#endif

static_assert(std::string_view(TRELLIS_VERSION) == TRELLIS_EXPECTED_VERSION,
              "<trellis/version.hpp> disagrees with project(VERSION)");

int main() {
  int calls = 0;
  auto owned = std::make_unique<int>(41);
  trellis::UniqueFunction<void()> fn = [&calls, p = std::move(owned)] { calls += *p + 1; };
  fn();
  if (calls != 42) return 1;
  try {
    throw trellis::IllegalStateError("from the consumer");
  } catch (const trellis::Error& e) {
    if (std::string_view(e.what()) != "from the consumer") return 2;
  }
  // Code compiled into the trellis_pipeline library, not only its headers.
  trellis::ByteBuf buf = trellis::ByteBufAllocator::default_allocator().buffer(16);
  buf.write_u32(42);
  if (buf.readable_bytes() != 4) return 3;

  std::printf("trellis %s (%d.%d.%d) via add_subdirectory\n", TRELLIS_VERSION,
              TRELLIS_VERSION_MAJOR, TRELLIS_VERSION_MINOR, TRELLIS_VERSION_PATCH);
  return 0;
}
