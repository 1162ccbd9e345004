// Serialisation of HTTP/1.1 message heads and chunk framing into a ByteBuf: the byte-level half
// of the encoders (the pipeline half decides when and with which body).
#pragma once

#include <cstdint>

#include <trellis/codec/http/http_message.hpp>

namespace trellis::http {

// "HTTP/1.1 200 OK\r\n".
void write_status_line(ByteBuf& out, HttpVersion version, const HttpResponseStatus& status);
// "Name: value\r\n".
void write_field(ByteBuf& out, std::string_view name, std::string_view value);
// "HTTP/1.1 200 OK\r\n" + fields + "\r\n".
void write_response_head(ByteBuf& out, HttpVersion version, const HttpResponseStatus& status,
                         const HttpHeaders& headers);
// "GET /x HTTP/1.1\r\n" + fields + "\r\n".
void write_request_head(ByteBuf& out, const HttpMethod& method, std::string_view target,
                        HttpVersion version, const HttpHeaders& headers);
void write_fields(ByteBuf& out, const HttpHeaders& headers);
// "<hex size>\r\n" before a chunk of size bytes (the chunk is followed by write_chunk_end).
void write_chunk_header(ByteBuf& out, std::uint64_t size);
void write_chunk_end(ByteBuf& out);
// "0\r\n" + trailers + "\r\n".
void write_last_chunk(ByteBuf& out, const HttpHeaders& trailers);
// True when a header of a response can make the message unsafe to send: a CR or LF in a name or
// value (response splitting). Encoders refuse such messages.
bool has_unsafe_field(const HttpHeaders& headers) noexcept;

// What an encoder needs to know of a header block, found in one pass: its size written as
// "Name: value\r\n" lines, whether a field is unsafe (as has_unsafe_field) and which of the
// fields the encoder may add are already there.
struct FieldsSummary {
  std::size_t bytes = 0;
  bool unsafe = false;
  bool has_date = false;
  bool has_content_length = false;
  bool has_transfer_encoding = false;
};
FieldsSummary summarize_fields(const HttpHeaders& headers) noexcept;
// Writes "Name: value\r\n" at out, which has room for summarize_fields(headers).bytes; returns
// the end. For encoders that size their buffer once and fill it without bounds checks.
char* put_fields(char* out, const HttpHeaders& headers) noexcept;
// Copies text to out (which has room for it); returns the end.
char* put_text(char* out, std::string_view text) noexcept;
// Writes "Name: value\r\n" at out (room for name.size() + value.size() + 4); returns the end.
char* put_field(char* out, std::string_view name, std::string_view value) noexcept;

}  // namespace trellis::http
