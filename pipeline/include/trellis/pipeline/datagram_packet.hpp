// DatagramPacket: one datagram as a pipeline message, its payload with the address it goes to
// (recipient) and the address it came from (sender). A DatagramChannel reads and writes them.
#pragma once

#include <utility>

#include <trellis/pipeline/byte_buf.hpp>
#include <trellis/pipeline/socket_address.hpp>

namespace trellis {

/// One datagram as a pipeline message: its payload with the address it goes to (recipient) and
/// the address it came from (sender). A DatagramChannel reads and writes them.
struct DatagramPacket {
  /// The payload: one datagram, sent in one system call.
  ByteBuf content;
  /// Where it goes. Outbound: an empty address (SocketAddress{}) sends to the connected peer.
  /// Inbound: the channel's local address.
  SocketAddress recipient;
  /// Where it came from. Inbound: the peer; outbound: ignored (the channel's local address).
  SocketAddress sender;

  /// The reply to an inbound packet: content goes back to its sender.
  DatagramPacket reply(ByteBuf reply_content) const {
    return DatagramPacket{std::move(reply_content), sender, recipient};
  }
};

}  // namespace trellis
