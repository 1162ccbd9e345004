// Expect handling for servers (see http_expectation.hpp).
#include "http_expectation.hpp"

#include <charconv>

#include <trellis/codec/http/http_refusal.hpp>
#include <trellis/pipeline/channel.hpp>

namespace trellis::http::detail {

void refuse(ChannelHandlerContext& ctx, std::uint16_t status) {
  ctx.write_and_flush(Message(HttpRefusal{status}));
}

std::int64_t content_length_of(const HttpHeaders& headers) noexcept {
  const auto field = headers.get(HeaderId::kContentLength);
  if (!field) return -1;
  // The parser accepted the field only if all its values are the same number ("5, 5"): the
  // first one is the length.
  std::string_view text = *field;
  text = text.substr(0, text.find(','));
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  std::int64_t value = -1;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return -1;
  return value;
}

bool answer_expectation(ChannelHandlerContext& ctx, HttpVersion version, HttpHeaders& headers) {
  const auto expect = headers.get(HeaderId::kExpect);
  if (!expect) return true;
  const bool continue_expected = iequals(*expect, "100-continue");
  headers.remove(header::kExpect);  // answered here, or ignored: nobody after us acts on it
  if (version == kHttp10) return true;
  if (!continue_expected) {
    refuse(ctx, 417);
    return false;
  }
  HttpResponse interim;
  interim.status.code = 100;
  ctx.write(Message(std::move(interim)));
  ctx.write_and_flush(Message(LastHttpContent{}));
  return true;
}

}  // namespace trellis::http::detail
