// The decoder verifier (SwiftNIO's ByteToMessageDecoderVerifier idea): feeds the same input to a
// fresh decoder in several splits and checks that the same messages come out every time.
#pragma once

#include <concepts>
#include <cstddef>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <trellis/pipeline/byte_buf.hpp>
#include <trellis/pipeline/channel_pipeline.hpp>
#include <trellis/pipeline/message.hpp>
#include <trellis/testing/embedded_channel.hpp>

namespace trellis::testing {

/// One chunk of input and the messages the decoder produces once it has seen it (and all chunks
/// before it).
template <class T>
struct DecoderStep {
  std::string input;        ///< The chunk of input.
  std::vector<T> expected;  ///< The messages it completes.
};

/// How verify_decoder() and verify_frame_decoder() run the decoder.
struct DecoderVerifierOptions {
  /// false (default): after the input the decoder is removed from the pipeline, and any bytes it
  /// hands on (undecoded leftovers) fail the check. true: the channel is closed instead, so the
  /// decoder's decode_last runs (for protocols whose last message ends with the stream); what it
  /// produces is compared too.
  bool close_at_end = false;
  /// Also feed every split of the whole input into two buffers (O(n^2) bytes fed).
  bool split_in_two = true;
};

namespace detail {

template <class T>
concept Streamable = requires(std::ostream& os, const T& v) {
  os << v;
};

// Default equality: ByteBufs by readable bytes, anything else with ==.
struct DefaultMessageEq {
  template <class T>
  bool operator()(const T& expected, const T& actual) const {
    if constexpr (std::is_same_v<T, ByteBuf>) {
      return expected.to_string() == actual.to_string();
    } else {
      return expected == actual;
    }
  }
};

// Default printer: ByteBufs and strings quoted (with a hex dump for non-text bytes), else <<.
struct DefaultMessagePrinter {
  template <class T>
  std::string operator()(const T& value) const {
    if constexpr (std::is_same_v<T, ByteBuf>) {
      return quote(value.to_string());
    } else if constexpr (std::is_convertible_v<const T&, std::string_view>) {
      return quote(std::string_view(value));
    } else if constexpr (std::is_same_v<T, Message>) {
      return "<" + std::string(value.type_name()) + ">";
    } else if constexpr (Streamable<T>) {
      std::ostringstream os;
      os << value;
      return os.str();
    } else {
      return "<" + std::string(Message::name_of<T>()) + ">";
    }
  }
  static std::string quote(std::string_view s) {
    std::string out = "\"";
    for (char c : s) {
      const auto u = static_cast<unsigned char>(c);
      if (c == '\\' || c == '"') {
        out += '\\';
        out += c;
      } else if (c == '\n') {
        out += "\\n";
      } else if (c == '\r') {
        out += "\\r";
      } else if (u < 0x20 || u >= 0x7f) {
        static constexpr char kHex[] = "0123456789abcdef";
        out += "\\x";
        out += kHex[u >> 4];
        out += kHex[u & 0xf];
      } else {
        out += c;
      }
    }
    return out + "\"";
  }
};

}  // namespace detail

/// Makes a fresh decoder handler per run.
using DecoderFactory = std::function<std::shared_ptr<ChannelHandler>()>;

namespace detail {

// kFrames: the decoder emits ByteBufs, compared (as strings) with T = std::string.
template <bool kFrames, class T, class Eq, class Print>
std::optional<std::string> verify_decoder_impl(const DecoderFactory& factory,
                                               const std::vector<DecoderStep<T>>& steps,
                                               DecoderVerifierOptions options, Eq& eq,
                                               Print& print) {
  std::string whole;
  std::vector<const T*> expected;
  for (const auto& step : steps) {
    whole += step.input;
    for (const auto& m : step.expected) expected.push_back(&m);
  }

  auto run = [&](const std::string& mode,
                 const std::vector<std::string_view>& chunks) -> std::optional<std::string> {
    std::vector<T> got;
    std::size_t leftover = 0;
    std::string failure;
    auto collect = [&](EmbeddedChannel& ch) {
      while (auto m = ch.read_inbound<Message>()) {
        if constexpr (std::is_same_v<T, Message>) {
          got.push_back(std::move(*m));
        } else if constexpr (kFrames) {
          if (!m->is<ByteBuf>()) {
            failure = "a message of type " + std::string(m->type_name()) + " came out";
            return;
          }
          got.push_back(m->get<ByteBuf>().to_string());
        } else {
          if (!m->is<T>()) {
            failure = "a message of type " + std::string(m->type_name()) + " came out";
            return;
          }
          got.push_back(m->take<T>());
        }
      }
    };
    try {
      std::shared_ptr<ChannelHandler> decoder = factory();
      EmbeddedChannel ch{decoder};
      for (std::string_view chunk : chunks) {
        if (chunk.empty()) continue;
        ch.write_inbound(ByteBuf::from(chunk));
        collect(ch);
        if (!failure.empty()) break;
      }
      if (failure.empty()) {
        if (options.close_at_end) {
          ch.close();
          ch.check_exception();
          collect(ch);
        } else {
          ch.pipeline().remove(*decoder);
          ch.check_exception();
          while (auto m = ch.read_inbound<Message>()) {
            if (auto* buf = m->try_get<ByteBuf>()) leftover += buf->readable_bytes();
          }
          ch.close();
        }
      }
    } catch (const std::exception& e) {
      failure = std::string("exception: ") + e.what();
    }
    std::ostringstream os;
    if (failure.empty()) {
      for (std::size_t i = 0; i < expected.size() || i < got.size(); ++i) {
        if (i >= got.size()) {
          os << "message #" << i << " missing: expected " << print(*expected[i]);
          break;
        }
        if (i >= expected.size()) {
          os << "unexpected extra message #" << i << ": " << print(got[i]);
          break;
        }
        if (!eq(*expected[i], got[i])) {
          os << "message #" << i << " differs: expected " << print(*expected[i]) << ", got "
             << print(got[i]);
          break;
        }
      }
      if (os.tellp() == 0 && leftover > 0) {
        os << leftover << " byte(s) left undecoded in the decoder";
      }
      failure = os.str();
    }
    if (failure.empty()) return std::nullopt;
    return "decoder verifier, mode '" + mode + "': " + failure;
  };

  const std::string_view all(whole);
  {
    std::vector<std::string_view> chunks;
    for (std::size_t i = 0; i < all.size(); ++i) chunks.push_back(all.substr(i, 1));
    if (auto f = run("byte by byte", chunks)) return f;
  }
  if (auto f = run("all in one buffer", {all})) return f;
  {
    std::vector<std::string_view> chunks;
    for (const auto& step : steps) {
      if (!step.input.empty()) chunks.emplace_back(step.input);
    }
    if (auto f = run("one buffer per step", chunks)) return f;
  }
  if (options.split_in_two) {
    for (std::size_t i = 1; i < all.size(); ++i) {
      if (auto f = run("split at " + std::to_string(i), {all.substr(0, i), all.substr(i)})) {
        return f;
      }
    }
  }
  return std::nullopt;
}

}  // namespace detail

/// Runs the decoder over the steps' inputs (a) byte by byte, (b) all in one buffer, (c) one buffer
/// per step, (d) split in two at every position, each time on a fresh channel with a fresh
/// decoder, and checks that the concatenation of the steps' expected messages comes out, in order,
/// with nothing left over and no exception. Returns nullopt on success, else a description naming
/// the failing mode. `eq(expected, actual)` compares, `print(value)` describes a message.
/// T = Message works too (decoders with several output types) with a custom eq and print.
template <class T, class Eq = detail::DefaultMessageEq, class Print = detail::DefaultMessagePrinter>
std::optional<std::string> verify_decoder(const DecoderFactory& factory,
                                          const std::vector<DecoderStep<T>>& steps,
                                          DecoderVerifierOptions options = {}, Eq eq = {},
                                          Print print = {}) {
  return detail::verify_decoder_impl<false>(factory, steps, options, eq, print);
}

/// Single-input form: the whole input and every message it decodes to.
template <class T, class Eq = detail::DefaultMessageEq, class Print = detail::DefaultMessagePrinter>
std::optional<std::string> verify_decoder(const DecoderFactory& factory, std::string input,
                                          std::vector<T> expected,
                                          DecoderVerifierOptions options = {}, Eq eq = {},
                                          Print print = {}) {
  std::vector<DecoderStep<T>> steps;
  steps.push_back(DecoderStep<T>{std::move(input), std::move(expected)});
  return verify_decoder<T>(factory, steps, options, std::move(eq), std::move(print));
}

/// For decoders that emit ByteBuf frames: the expected frames are given as strings.
inline std::optional<std::string> verify_frame_decoder(
    const DecoderFactory& factory, const std::vector<DecoderStep<std::string>>& steps,
    DecoderVerifierOptions options = {}) {
  detail::DefaultMessageEq eq;
  detail::DefaultMessagePrinter print;
  return detail::verify_decoder_impl<true>(factory, steps, options, eq, print);
}
/// Single-input form of verify_frame_decoder(): the whole input and every frame it decodes to.
inline std::optional<std::string> verify_frame_decoder(const DecoderFactory& factory,
                                                       std::string input,
                                                       std::vector<std::string> frames,
                                                       DecoderVerifierOptions options = {}) {
  std::vector<DecoderStep<std::string>> steps;
  steps.push_back(DecoderStep<std::string>{std::move(input), std::move(frames)});
  return verify_frame_decoder(factory, steps, options);
}

}  // namespace trellis::testing

/// CHECKs that trellis::testing::verify_*decoder(...) found nothing wrong, printing what it found.
#define TRELLIS_CHECK_DECODER(verification)                                \
  do {                                                                     \
    auto trellis_failure_ = (verification);                                \
    CHECK_MESSAGE(!trellis_failure_.has_value(),                           \
                  (trellis_failure_ ? *trellis_failure_ : std::string())); \
  } while (false)
