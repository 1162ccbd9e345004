// WebSocket masking (RFC 6455 §5.3): XOR with a 4-byte key, eight bytes per step, and the masking
// keys a client sends, from a fast per-thread generator seeded from the operating system.
#pragma once

#include <array>
#include <cstddef>
#include <span>

namespace trellis::websocket {

/// A masking key, in the order its bytes appear on the wire.
using WebSocketMaskKey = std::array<std::byte, 4>;

/// Masks (or unmasks: the operation is its own inverse) `data` in place with `key`, the first
/// byte of `data` being byte 0 of the payload. Eight bytes per step.
void websocket_mask(std::span<std::byte> data, WebSocketMaskKey key) noexcept;

/// Writes `in` masked with `key` to `out` (`out.size() >= in.size()`; the spans may be the same
/// but must not overlap otherwise).
void websocket_mask_copy(std::span<const std::byte> in, std::span<std::byte> out,
                         WebSocketMaskKey key) noexcept;

/// A fresh masking key from the calling thread's generator (xoshiro256**, seeded once per thread
/// from getrandom(2)). Unpredictable to a peer that does not see the generator's state, which is
/// what RFC 6455 §10.3 asks of the key; not meant as a source of secrets.
WebSocketMaskKey next_websocket_mask_key() noexcept;

}  // namespace trellis::websocket
