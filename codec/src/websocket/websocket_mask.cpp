// WebSocket masking and masking keys (see websocket_mask.hpp).
#include <trellis/codec/websocket/websocket_mask.hpp>

#include <sys/random.h>

#include <cstdint>
#include <cstring>
#include <random>

namespace trellis::websocket {

namespace {

// The key repeated over eight bytes, in memory order, so one XOR masks bytes i..i+7 for any i
// that is a multiple of 4 (and so of 8).
std::uint64_t key_word(WebSocketMaskKey key) noexcept {
  std::array<std::byte, 8> twice;
  std::memcpy(twice.data(), key.data(), 4);
  std::memcpy(twice.data() + 4, key.data(), 4);
  std::uint64_t word;
  std::memcpy(&word, twice.data(), 8);
  return word;
}

// xoshiro256** (Blackman and Vigna), seeded from getrandom(2).
class MaskKeyGenerator {
 public:
  MaskKeyGenerator() noexcept {
    std::size_t got = 0;
    auto* bytes = reinterpret_cast<unsigned char*>(state_);
    while (got < sizeof(state_)) {
      const ssize_t n = ::getrandom(bytes + got, sizeof(state_) - got, 0);
      if (n <= 0) break;
      got += static_cast<std::size_t>(n);
    }
    if (got < sizeof(state_)) {
      // No getrandom (an old kernel, a seccomp filter): the C++ library's device.
      std::random_device device;
      for (auto& word : state_) {
        word = (std::uint64_t{device()} << 32) ^ device();
      }
    }
    if ((state_[0] | state_[1] | state_[2] | state_[3]) == 0) state_[0] = 0x9e3779b97f4a7c15u;
  }

  std::uint64_t next() noexcept {
    const std::uint64_t result = rotl(state_[1] * 5, 7) * 9;
    const std::uint64_t t = state_[1] << 17;
    state_[2] ^= state_[0];
    state_[3] ^= state_[1];
    state_[1] ^= state_[2];
    state_[0] ^= state_[3];
    state_[2] ^= t;
    state_[3] = rotl(state_[3], 45);
    return result;
  }

 private:
  static std::uint64_t rotl(std::uint64_t x, int k) noexcept { return (x << k) | (x >> (64 - k)); }
  std::uint64_t state_[4] = {};
};

}  // namespace

void websocket_mask(std::span<std::byte> data, WebSocketMaskKey key) noexcept {
  websocket_mask_copy(data, data, key);
}

void websocket_mask_copy(std::span<const std::byte> in, std::span<std::byte> out,
                         WebSocketMaskKey key) noexcept {
  const std::uint64_t word = key_word(key);
  const std::byte* src = in.data();
  std::byte* dst = out.data();
  const std::size_t n = in.size();
  std::size_t i = 0;
  // Eight bytes per step (the compiler widens it to vector registers where it can).
  for (; i + 8 <= n; i += 8) {
    std::uint64_t w;
    std::memcpy(&w, src + i, 8);
    w ^= word;
    std::memcpy(dst + i, &w, 8);
  }
  for (; i < n; ++i) dst[i] = src[i] ^ key[i & 3];
}

WebSocketMaskKey next_websocket_mask_key() noexcept {
  thread_local MaskKeyGenerator generator;
  const auto bits = static_cast<std::uint32_t>(generator.next() >> 32);
  WebSocketMaskKey key;
  std::memcpy(key.data(), &bits, 4);
  return key;
}

}  // namespace trellis::websocket
