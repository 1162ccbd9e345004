// Serialisation of HTTP/1.1 message heads and chunk framing into a ByteBuf: the byte-level half
// of the encoders (the pipeline half decides when and with which body).
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

#include <trellis/codec/http/http_message.hpp>

namespace trellis::http {

/// `"HTTP/1.1 200 OK\r\n"`.
void write_status_line(ByteBuf& out, HttpVersion version, const HttpResponseStatus& status);
/// `"Name: value\r\n"`.
void write_field(ByteBuf& out, std::string_view name, std::string_view value);
/// `"HTTP/1.1 200 OK\r\n"` + fields + `"\r\n"`.
void write_response_head(ByteBuf& out, HttpVersion version, const HttpResponseStatus& status,
                         const HttpHeaders& headers);
/// `"GET /x HTTP/1.1\r\n"` + fields + `"\r\n"`.
void write_request_head(ByteBuf& out, const HttpMethod& method, std::string_view target,
                        HttpVersion version, const HttpHeaders& headers);
/// Each field as `"Name: value\r\n"`, in order.
void write_fields(ByteBuf& out, const HttpHeaders& headers);
/// `"<hex size>\r\n"` before a chunk of size bytes (the chunk is followed by write_chunk_end).
void write_chunk_header(ByteBuf& out, std::uint64_t size);
/// `"\r\n"` after a chunk's bytes.
void write_chunk_end(ByteBuf& out);
/// `"0\r\n"` + trailers + `"\r\n"`.
void write_last_chunk(ByteBuf& out, const HttpHeaders& trailers);
/// True when a header can make the message unsafe to send: a name that is not an RFC 9110 token
/// (empty, or with a separator, whitespace, a control or a byte above 0x7e) or a value with a CR,
/// LF or NUL (request and response splitting). Encoders refuse such messages.
bool has_unsafe_field(const HttpHeaders& headers) noexcept;
/// True when s is an RFC 9110 token (1*tchar: "!#$%&'*+-.^_`|~", DIGIT, ALPHA), as a method and a
/// field name must be.
bool is_token(std::string_view s) noexcept;
/// True when s can stand as a request-target on a request line: not empty, visible ASCII only
/// (no SP, no control, nothing above 0x7e).
bool is_request_target(std::string_view s) noexcept;

/// What an encoder needs to know of a header block, found while writing it: whether a field is
/// unsafe (as has_unsafe_field) and which of the fields the encoder may add are already there.
struct FieldsSummary {
  bool unsafe = false;                 ///< a name is not a token, or a value holds CR, LF or NUL
  bool has_date = false;               ///< a Date field is there
  bool has_content_length = false;     ///< a Content-Length field is there
  bool has_transfer_encoding = false;  ///< a Transfer-Encoding field is there
};
/// Writes the fields as `"Name: value\r\n"` lines at out, which has room for
/// headers.wire_size_bound() bytes, and fills summary; returns the end. For encoders that size
/// their buffer once and fill it without bounds checks (nothing written counts until they move
/// their writer index, so an unsafe field found on the way costs nothing to undo).
char* put_fields(char* out, const HttpHeaders& headers, FieldsSummary& summary) noexcept;

/// Copies text to out (which has room for it); returns the end. The pieces of a head are short:
/// up to 64 bytes they are copied with two overlapping loads and stores each, not a memcpy call.
/// Always inlined: with a literal the size is known and the copy is one or two moves (GCC
/// otherwise keeps one out-of-line copy that branches on the size every time).
[[gnu::always_inline]] inline char* put_text(char* out, std::string_view text) noexcept {
  const char* s = text.data();
  const std::size_t n = text.size();
  if (n >= 8) {
    if (n <= 16) {
      std::memcpy(out, s, 8);
      std::memcpy(out + n - 8, s + n - 8, 8);
    } else if (n <= 32) {
      std::memcpy(out, s, 16);
      std::memcpy(out + n - 16, s + n - 16, 16);
    } else if (n <= 64) {  // a Date line (37 bytes), say
      std::memcpy(out, s, 32);
      std::memcpy(out + n - 32, s + n - 32, 32);
    } else {
      std::memcpy(out, s, n);
    }
  } else if (n >= 4) {
    std::memcpy(out, s, 4);
    std::memcpy(out + n - 4, s + n - 4, 4);
  } else if (n > 0) {
    out[0] = s[0];
    out[n / 2] = s[n / 2];
    out[n - 1] = s[n - 1];
  }
  return out + n;
}

/// Writes `"Name: value\r\n"` at out (room for name.size() + value.size() + 4); returns the end.
[[gnu::always_inline]] inline char* put_field(char* out, std::string_view name,
                                              std::string_view value) noexcept {
  out = put_text(out, name);
  std::memcpy(out, ": ", 2);
  out = put_text(out + 2, value);
  std::memcpy(out, "\r\n", 2);
  return out + 2;
}

/// `"HTTP/1.1 200 OK\r\n"`: for a standard code with its standard phrase, a view of a line built
/// once per process; empty for anything else (a custom phrase, an unknown code).
std::string_view standard_status_line(HttpVersion version, std::uint16_t code) noexcept;

}  // namespace trellis::http
